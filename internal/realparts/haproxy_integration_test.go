//go:build integration

package realparts

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/haproxyrec"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// requireHAProxy finds haproxy, skipping when absent unless RLBENCH_REQUIRE_REAL_PARTS=1 (then it fails).
func requireHAProxy(t *testing.T) string {
	t.Helper()
	bin, err := FindHAProxy()
	if err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bin
}

// startHAProxy starts a private HAProxy, stopped by PID in t.Cleanup.
func startHAProxy(t *testing.T, cfg HAProxyConfig) *HAProxy {
	t.Helper()
	h, err := StartHAProxy(context.Background(), HAProxyOptions{Bin: requireHAProxy(t), Dir: t.TempDir(), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if t.Failed() {
			t.Logf("haproxy stderr:\n%s", logTail(h.StderrPath(), 4000))
		}
	})
	return h
}

func parseHAProxyLog(t *testing.T, path string) []haproxyrec.LogRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := haproxyrec.ParseLog(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestIntegrationHAProxyLifecycle: HAProxy starts on its own port (no other listener, nothing sent by the
// readiness check), passes and denies as configured, logs each request with its ID, and stops by its PID leaving
// the port free and the log in place; a config haproxy -c refuses is an error naming the file.
func TestIntegrationHAProxyLifecycle(t *testing.T) {
	be := startBackend(t)
	h := startHAProxy(t, HAProxyConfig{Limit: 2, Period: 10 * time.Second, Servers: []string{be.Addr()}})
	t.Logf("haproxy %s at %s (%s), pid %d", h.Version(), h.Bin(), h.URL(), h.PID())
	pid := h.PID()
	if err := VerifyListener(pid, h.Port()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Conf(), mustRead(t, h.ConfPath())) {
		t.Error("Conf() is not the file haproxy runs")
	}
	var codes []int
	for i := range 3 {
		codes = append(codes, getID(t, h.URL()+"/x", fmt.Sprintf("life-%d", i)))
	}
	if !slices.Equal(codes, []int{200, 200, 429}) {
		t.Errorf("codes %v, want 200 200 429 (limit 2: the readiness check sent nothing)", codes)
	}
	if be.Count() != 2 {
		t.Errorf("backend got %d requests, want 2", be.Count())
	}
	waitFor(t, func() bool { return bytes.Contains(mustRead(t, h.LogPath()), []byte("life-2")) }, "the log line of life-2")
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.PID() != 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("pid %d still running after Stop", pid)
	}
	if o, err := PortOwnership(os.Getpid(), h.Port()); err != nil || o.Owned+o.Foreign != 0 {
		t.Errorf("port %d after Stop: %+v %v", h.Port(), o, err)
	}
	recs := parseHAProxyLog(t, h.LogPath())
	if len(recs) != 3 {
		t.Fatalf("%d log records, want 3", len(recs))
	}
	for i, r := range recs {
		denied := i == 2
		if r.ID != fmt.Sprintf("life-%d", i) || r.Rate == nil || *r.Rate != int64(i+1) || r.Denied() != denied || r.Forwarded() == denied ||
			r.DecideUs/1000 < r.AcceptMs || r.Key != "127.0.0.1" {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if recs[2].Status != 429 || recs[2].Term[:2] != "PR" {
		t.Errorf("denied record: %+v", recs[2])
	}
	// a config haproxy refuses: the error names the rendered file and carries haproxy's message
	if err := os.WriteFile(h.ConfPath(), []byte("frontend x\n    nosuchkeyword on\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.check(context.Background()); err == nil || !strings.Contains(err.Error(), h.ConfPath()) || !strings.Contains(err.Error(), "nosuchkeyword") {
		t.Errorf("haproxy -c error: %v", err)
	}
}

// TestIntegrationHAProxyFreqCtrDifferential holds the freq_ctr model (model.AlignFreqCtr) against a real HAProxy on
// generated traffic: bursts of concurrent requests and paced stretches with random gaps, across many periods of a
// short http_req_rate period. HAProxy's log gives, per request, its internal clock when its rule ran (now_ms, from
// a Lua fetch: the clock freq_ctr reads, which on a loaded host HAProxy moves off the system date) and the rate
// the deny rule read; the model replayed at those ms must read the same rates (as a set within each ms and key,
// whose order the log does not give), and HAProxy must have denied exactly the requests whose rate exceeds the
// limit. Once with the source address as the key (one counter), once keyed by a header with three tenants, one of
// them noisy, and requests without the header (never tracked, never denied).
func TestIntegrationHAProxyFreqCtrDifferential(t *testing.T) {
	t.Run("src", func(t *testing.T) { freqCtrDifferential(t, "", 23) })
	t.Run("header", func(t *testing.T) { freqCtrDifferential(t, "X-Tenant", 42) })
}

func freqCtrDifferential(t *testing.T, header string, seed uint64) {
	be := startBackend(t)
	const limit, period = 5, 97 * time.Millisecond // an odd period: the tick's rounding to an even ms shows
	cfg := HAProxyConfig{Limit: limit, Period: period, Servers: []string{be.Addr()}}
	if header != "" {
		cfg.KeyType, cfg.Header = HAProxyKeyString, header
	}
	h := startHAProxy(t, cfg)
	if !h.Clock() {
		t.Skipf("haproxy %s has no Lua: its log cannot give now_ms, the clock freq_ctr reads", h.Version())
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	rng := rand.New(rand.NewPCG(seed, 5))
	tenant := func() string {
		if header == "" {
			return ""
		}
		switch r := rng.IntN(10); {
		case r < 6:
			return "noisy"
		case r < 8:
			return "quiet-1"
		case r < 9:
			return "quiet-2"
		}
		return "" // no header: not tracked
	}
	send := func(id, key string) {
		req, _ := http.NewRequest(http.MethodGet, h.URL()+"/d", nil)
		req.Header.Set(evidence.IDHeader, id)
		if key != "" {
			req.Header.Set(header, key)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	n := 0
	for step := 0; step < 120; step++ {
		switch rng.IntN(3) {
		case 0: // a burst
			var wg sync.WaitGroup
			for range 1 + rng.IntN(12) {
				n++
				wg.Add(1)
				go func(id, key string) { defer wg.Done(); send(id, key) }(fmt.Sprintf("d-%d", n), tenant())
			}
			wg.Wait()
		default: // one request
			n++
			send(fmt.Sprintf("d-%d", n), tenant())
		}
		// the gap shapes the traffic (within a period, across one, across two or more); nothing waits on it
		time.Sleep(time.Duration(rng.IntN(int(2*period + 40*time.Millisecond))))
	}
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := parseHAProxyLog(t, h.LogPath())
	if len(recs) != n {
		t.Fatalf("%d log records, %d sent", len(recs), n)
	}
	// in the order HAProxy's rules ran: its clock, then the request counter within one ms
	slices.SortStableFunc(recs, func(a, b haproxyrec.LogRecord) int {
		if c := a.NowMs - b.NowMs; c != 0 {
			return int(c / max(1, abs64(c)))
		}
		return int(a.RequestCounter - b.RequestCounter)
	})
	spec, err := decl.HAProxyStickTable{Limit: limit, Period: period}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	m := model.MustNew(spec)
	var tracked []haproxyrec.LogRecord
	offsets, untracked := 0, 0
	for _, r := range recs {
		if r.NowMs == 0 {
			t.Fatalf("record %d has no now_ms: %+v", r.Line, r)
		}
		if dec, _ := r.DecideMs(); dec != r.NowMs {
			offsets++
		}
		if !r.Tracked() {
			untracked++
			if r.Denied() || r.Status != 200 || r.Key != "" {
				t.Errorf("line %d: an untracked request %+v", r.Line, r)
			}
			continue
		}
		tracked = append(tracked, r)
	}
	reqs := make([]model.Request, len(tracked))
	for i, r := range tracked {
		reqs[i] = model.Request{At: r.NowMs * int64(time.Millisecond), Key: r.Key}
	}
	rates, ok := model.FreqCtrRates(m, reqs)
	if !ok {
		t.Fatal("not a freq_ctr model")
	}
	type msKey struct {
		at  int64
		key string
	}
	got, want := map[msKey][]int64{}, map[msKey][]int64{}
	var order []msKey
	for i, r := range tracked {
		k := msKey{reqs[i].At, r.Key}
		if _, seen := got[k]; !seen {
			order = append(order, k)
		}
		got[k], want[k] = append(got[k], *r.Rate), append(want[k], rates[i])
	}
	mismatch, denied := 0, 0
	for _, k := range order {
		g, w := got[k], want[k]
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			mismatch++
			if mismatch <= 5 {
				t.Errorf("ms %d key %q: HAProxy read rates %v, the model %v", k.at/int64(time.Millisecond), k.key, g, w)
			}
		}
	}
	keys := map[string]int{}
	for _, r := range tracked {
		if r.Denied() != (*r.Rate > limit) || r.Denied() != (r.Status == 429) {
			t.Errorf("line %d: rate %d, status %d, denied %v", r.Line, *r.Rate, r.Status, r.Denied())
		}
		if r.Denied() {
			denied++
			keys[r.Key]++
		}
	}
	if mismatch > 0 {
		if d := os.Getenv("RLBENCH_HAPROXY_DUMP"); d != "" {
			_ = os.WriteFile(d, mustRead(t, h.LogPath()), 0o644)
		}
		t.Errorf("%d of %d (ms, key) groups disagree", mismatch, len(order))
	}
	if denied == 0 || denied == len(tracked) {
		t.Errorf("%d of %d denied: the traffic did not exercise both decisions", denied, len(tracked))
	}
	if header != "" && (untracked == 0 || keys["noisy"] == 0) {
		t.Errorf("untracked %d, denied per key %v: the traffic did not exercise the keys", untracked, keys)
	}
	t.Logf("%d requests (%d tracked) in %d (ms, key) groups, %d denied %v; the model read the same rates; %d records with now_ms off the system date's ms",
		len(recs), len(tracked), len(order), denied, keys, offsets)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
