package rls

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sums by awk over the tcp lines of outage-fast/statsd_lines.tsv: 319 metric
// lines, 2 accepted connections (the RLS restarted), 196 gauges, 40 timer
// samples; inventory 43 = 17 within + 21 over + 5 hits of redis_error calls.
func TestParseStatsdTSV(t *testing.T) {
	s, err := ParseStatsd(openFixture(t, "outage-fast/statsd_lines.tsv"), "statsd_lines.tsv")
	if err != nil {
		t.Fatal(err)
	}
	eqInt(t, "lines", s.Lines, 319)
	eqInt(t, "conns", s.Conns, 2)
	for name, want := range map[string]float64{
		"ratelimit.service.rate_limit.inventory.tenant_lab.total_hits":   43,
		"ratelimit.service.rate_limit.inventory.tenant_lab.within_limit": 17,
		"ratelimit.service.rate_limit.inventory.tenant_lab.over_limit":   21,
		"ratelimit.service.rate_limit.inventory.tenant_lab.near_limit":   3,
		"ratelimit.service.rate_limit.edge.plan_free.total_hits":         5,
		"ratelimit.service.rate_limit.edge.plan_free.within_limit":       3,
		"ratelimit.service.rate_limit.edge.plan_free.over_limit":         2,
		"ratelimit.service.call.should_rate_limit.redis_error":           5,
		"ratelimit.service.call.should_rate_limit.service_error":         1,
		"ratelimit_server.ShouldRateLimit.total_requests":                40,
		"ratelimit.service.config_load_success":                          2,
		"ratelimit.redis_pool.cx_total":                                  30,
		"ratelimit.service.rate_limit.nosuch.domain_not_found":           1,
	} {
		eqF(t, name, s.Counters[name], want)
	}
	eqF(t, "cx_active last gauge", s.Gauges["ratelimit.redis_pool.cx_active"], 10)
	if tt := s.Timers["ratelimit_server.ShouldRateLimit.response_time"]; tt == nil || tt.Count != 40 {
		t.Errorf("response_time = %+v", tt)
	}
	if s.FirstNs != 1796031750162398727 || s.LastNs <= s.FirstNs {
		t.Errorf("first/last ns = %d/%d", s.FirstNs, s.LastNs)
	}
	c := s.RLSCounters()
	eqF(t, "counters redis errors", c.RedisErrors, 5)
	eqF(t, "counters nosuch", c.DomainNotFound["nosuch"], 1)
	for _, r := range CheckIdentities(nil, c) {
		want := map[string]string{"inventory.tenant_lab": IdentityErrorGap, "edge.plan_free": IdentityPass}[r.Key]
		eqStr(t, "identity "+r.Key, r.Status, want)
		if r.Key == "inventory.tenant_lab" {
			eqF(t, "gap", r.Gap, 5)
		}
	}
}

func TestParseStatsdRawAndErrors(t *testing.T) {
	s, err := ParseStatsd(strings.NewReader("a.b:2|c\n\n# comment\na.b:3|c\ns:1|c|@0.5\ng:4|g\ng:6|g\nt:10|ms\nt:30|ms\n"), "raw")
	if err != nil {
		t.Fatal(err)
	}
	eqF(t, "a.b", s.Counters["a.b"], 5)
	eqInt(t, "a.b flushes", s.CounterFlushes["a.b"], 2)
	eqF(t, "sampled", s.Counters["s"], 2)
	eqF(t, "gauge last", s.Gauges["g"], 6)
	if tt := s.Timers["t"]; tt.Count != 2 || tt.Sum != 40 || tt.Min != 10 || tt.Max != 30 {
		t.Errorf("timer = %+v", tt)
	}
	for _, bad := range []string{"a.b:x|c", "a.b:1|zz", "nocolon|c", "1\tfoo\ta:1|c", "x\ttcp\ta:1|c"} {
		_, err := ParseStatsd(strings.NewReader("ok:1|c\n"+bad+"\n"), "cap.tsv")
		if err == nil || !strings.HasPrefix(err.Error(), "cap.tsv:2:") {
			t.Errorf("%q: err = %v, want cap.tsv:2:", bad, err)
		}
	}
}

// The README's stat lines (old debug-port /stats, cumulative `name: value`)
// and issue 276's leaked '|' in a stat name.
func TestStatDumpAndNames(t *testing.T) {
	m, err := ParseStatDump(openFixture(t, "gh_ratelimit_README_statsd_stat_lines.txt"), "readme")
	if err != nil {
		t.Fatal(err)
	}
	eqInt(t, "stats", len(m), 9)
	c := CountersFromStats("readme", m)
	eqInt(t, "keys", len(c.Keys), 4)
	eqF(t, "database_users total", c.Keys["mongo_cps.database_users"].TotalHits, 2939)
	eqF(t, "auth-service shadow", c.Keys["messaging.auth-service.over_limit"].ShadowMode, 1)
	key, suffix, ok := ParseStatName("ratelimit.service.rate_limit.messaging.auth-service.over_limit.over_limit")
	if !ok || key != "messaging.auth-service.over_limit" || suffix != "over_limit" {
		t.Errorf("ParseStatName = %q %q %v", key, suffix, ok)
	}
	if k, s, ok := ParseStatName("ratelimit.service.rate_limit.d.k_v.total_hits.__env=lab"); !ok || k != "d.k_v" || s != "total_hits" {
		t.Errorf("tagged name = %q %q %v", k, s, ok)
	}

	// issue 276: line 2 is a Redis key, line 4 a stat with '|' in its name.
	var lines []string
	sc := bufio.NewScanner(openFixture(t, "gh_ratelimit_issue276_redis_key_and_statsd_name_2021.txt"))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if ws, ok := WindowStart(lines[1]); !ok || ws != 1627892892 {
		t.Errorf("window of %q = %d %v", lines[1], ws, ok)
	}
	st, err := ParseStatDump(strings.NewReader(lines[3]), "issue276")
	if err != nil {
		t.Fatal(err)
	}
	c276 := CountersFromStats("issue276", st)
	eqF(t, "issue276 over_limit", c276.Keys["entrypoint-v1-entrypoint.remote_address_minute.destination_cluster_outbound|80||$this_is_the_destination_cluster"].OverLimit, 62)

	// The current debug-port /stats is expvar: not a stat dump.
	if _, err := ParseStatDump(openFixture(t, "rls_local_3fb7025_debugport_stats_expvar.txt"), "expvar"); err == nil || !strings.HasPrefix(err.Error(), "expvar:1:") {
		t.Errorf("expvar err = %v", err)
	}
}

// lineSink collects the JSONL that ListenStatsd writes and signals each line.
type lineSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan struct{}
}

func (s *lineSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for _, b := range p {
		if b == '\n' {
			s.lines <- struct{}{}
		}
	}
	return len(p), nil
}

func TestListenStatsdTCPAndUDP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &lineSink{lines: make(chan struct{}, 100)}
	before := time.Now().UnixNano()
	addr, done, err := ListenStatsd(ctx, "127.0.0.1:0", sink)
	if err != nil {
		t.Fatal(err)
	}
	ta := addr.(*net.TCPAddr)
	if !ta.IP.IsLoopback() || ta.Port == 0 {
		t.Fatalf("addr = %v", addr)
	}
	tc, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Write([]byte("rl.hits:1|c\nrl.hits:2|c\ntcp.gauge:5|g\n")); err != nil {
		t.Fatal(err)
	}
	tc.Close()
	uc, err := net.Dial("udp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uc.Write([]byte("rl.hits:4|c\nrt:3|ms")); err != nil {
		t.Fatal(err)
	}
	if _, err := uc.Write([]byte("udp.gauge:7|g\n")); err != nil {
		t.Fatal(err)
	}
	uc.Close()
	timeout := time.After(10 * time.Second)
	for n := 0; n < 6; n++ {
		select {
		case <-sink.lines:
		case <-timeout:
			t.Fatalf("received %d of 6 lines", n)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("listener error: %v", err)
	}
	after := time.Now().UnixNano()
	sink.mu.Lock()
	out := sink.buf.String()
	sink.mu.Unlock()
	protos := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r StatsdRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if r.RecvNs < before || r.RecvNs > after {
			t.Errorf("recv_ns %d outside [%d, %d]", r.RecvNs, before, after)
		}
		protos[r.Proto]++
	}
	eqInt(t, "tcp lines", protos["tcp"], 3)
	eqInt(t, "udp lines", protos["udp"], 3)
	s, err := ParseStatsd(strings.NewReader(out), "listen.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	eqF(t, "rl.hits", s.Counters["rl.hits"], 7)
	eqF(t, "tcp.gauge", s.Gauges["tcp.gauge"], 5)
	eqF(t, "udp.gauge", s.Gauges["udp.gauge"], 7)
	eqInt(t, "rt samples", s.Timers["rt"].Count, 1)
	// The port is released: binding it again works.
	l, err := net.Listen("tcp", addr.String())
	if err != nil {
		t.Fatalf("port not released: %v", err)
	}
	l.Close()
}

// TestParseStatsdCaptureToleratesForeignLines: a listener capture may hold
// lines some other program sent to the port; they are counted, not summed,
// and do not hide the totals.
func TestParseStatsdCaptureToleratesForeignLines(t *testing.T) {
	in := `{"recv_ns":1,"proto":"udp","line":"garbage line here"}` + "\n" +
		`{"recv_ns":2,"proto":"tcp","line":"ratelimit.service.rate_limit.inventory.tenant_lab.total_hits:3|c"}` + "\n" +
		`{"recv_ns":3,"proto":"tcp","line":"ratelimit.service.rate_limit.inventory.tenant_lab.total_hits:2|c"}` + "\n"
	tot, err := ParseStatsd(strings.NewReader(in), "cap.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if tot.Malformed != 1 || !strings.HasPrefix(tot.MalformedLines[0], "cap.jsonl:1: ") ||
		tot.Counters["ratelimit.service.rate_limit.inventory.tenant_lab.total_hits"] != 5 {
		t.Fatalf("totals %+v", tot)
	}
	// A raw statsd file with a bad line is still an error naming the line.
	if _, err := ParseStatsd(strings.NewReader("a.b:1|c\nnot statsd\n"), "raw.txt"); err == nil || !strings.HasPrefix(err.Error(), "raw.txt:2: ") {
		t.Fatalf("err %v", err)
	}
}

func TestParseStatsdGaugeDeltas(t *testing.T) {
	tot, err := ParseStatsd(strings.NewReader("g:10|g\ng:+2|g\ng:-5|g\nh:3|g\n"), "g.txt")
	if err != nil {
		t.Fatal(err)
	}
	if tot.Gauges["g"] != 7 || tot.Gauges["h"] != 3 {
		t.Fatalf("gauges %v", tot.Gauges)
	}
}
