package rls

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

func countTypeLines(t *testing.T, rel string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(openFixture(t, rel))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "# TYPE ") {
			n++
		}
	}
	return n
}

// Families = `# TYPE` lines (grep -c); values read by hand from the files.
func TestParsePrometheusFixtures(t *testing.T) {
	type want struct {
		families                              int
		invTotal, invWithin, invOver, invNear float64
		edgeTotal                             float64
		redisErr, serviceErr                  float64
		totalReq                              float64
		rtSum                                 float64
		rtCount                               uint64
		cxActive                              float64
		nosuch                                float64
	}
	cases := map[string]want{
		"json-prometheus/prom_metrics_1_after_a.txt":       {66, 3, 3, 0, 0, 0, 0, 0, 3, 5, 8, 10, 0},
		"json-prometheus/prom_metrics_2_after_b.txt":       {66, 3, 3, 0, 0, 0, 0, 0, 3, 5, 8, 10, 0},
		"json-prometheus/prom_metrics_3_after_c.txt":       {70, 30, 10, 20, 2, 5, 0, 1, 28, 61, 28, 10, 1},
		"json-prometheus/prom_metrics_4_during_outage.txt": {71, 37, 12, 20, 2, 5, 5, 1, 34, 61, 34, 0, 1},
		"json-prometheus/prom_metrics_5_after_d.txt":       {71, 40, 15, 20, 2, 5, 5, 1, 37, 713, 37, 10, 1},
		"json-prometheus/prom_metrics_6_after_e.txt":       {68, 3, 2, 1, 1, 0, 0, 0, 3, 1, 3, 10, 0},
	}
	for rel, w := range cases {
		s := parsePromFixture(t, rel)
		eqInt(t, rel+" families", len(s.Families), w.families)
		eqInt(t, rel+" families (# TYPE)", len(s.Families), countTypeLines(t, rel))
		inv := s.Rules[RuleID{Domain: "inventory", Key1: "tenant_lab"}]
		eqF(t, rel+" inventory total_hits", inv.TotalHits, w.invTotal)
		eqF(t, rel+" inventory within_limit", inv.WithinLimit, w.invWithin)
		eqF(t, rel+" inventory over_limit", inv.OverLimit, w.invOver)
		eqF(t, rel+" inventory near_limit", inv.NearLimit, w.invNear)
		eqF(t, rel+" edge total_hits", s.Rules[RuleID{Domain: "edge", Key1: "plan_free"}].TotalHits, w.edgeTotal)
		eqF(t, rel+" redis_error", s.ShouldRateLimitErrors["redis_error"], w.redisErr)
		eqF(t, rel+" service_error", s.ShouldRateLimitErrors["service_error"], w.serviceErr)
		eqF(t, rel+" total_requests", s.TotalRequests["ShouldRateLimit"], w.totalReq)
		rt := s.ResponseTime["ShouldRateLimit"]
		eqF(t, rel+" response_time sum (ms)", rt.Sum, w.rtSum)
		eqInt(t, rel+" response_time count", int(rt.Count), int(w.rtCount))
		eqF(t, rel+" cx_active", s.RedisPool["cx_active"], w.cxActive)
		eqF(t, rel+" nosuch domain_not_found", s.DomainNotFound["nosuch"], w.nosuch)
		eqF(t, rel+" config_load_success", s.ConfigLoadSuccess, 1)
		if v, ok := s.Value("statsd_exporter_metrics_total", map[string]string{"type": "histogram"}); !ok || v != 1 {
			t.Errorf("%s generic family value = %g %v", rel, v, ok)
		}
	}

	loc := parsePromFixture(t, "rls_local_3fb7025_prometheus_metrics.txt")
	eqInt(t, "local families", len(loc.Families), 71)
	sh := loc.Rules[RuleID{Domain: "rlbench", Key1: "shadow_x"}]
	if sh != (evidence.RLSKeyCounters{TotalHits: 2, WithinLimit: 1, OverLimit: 1, NearLimit: 1, ShadowMode: 1}) {
		t.Errorf("shadow_x = %+v", sh)
	}
	eqF(t, "local unknown_domain not found", loc.DomainNotFound["unknown_domain"], 1)
	eqF(t, "local service errors", loc.ShouldRateLimitErrors["service_error"], 2)
	eqInt(t, "local rules", len(loc.Rules), 3)

	one := parsePromFixture(t, "gh_ratelimit_issue286_prometheus_line_2021.txt")
	id := RuleID{Domain: "rl", Key1: "foo", Key2: "bar"}
	eqF(t, "issue286 over_limit", one.Rules[id].OverLimit, 85)
	eqStr(t, "issue286 stat key", id.StatKey(), "rl.foo.bar")
	eqF(t, "issue286 counters", one.RLSCounters().Keys["rl.foo.bar"].OverLimit, 85)
}

func TestParsePrometheusError(t *testing.T) {
	_, err := ParsePrometheus(strings.NewReader("ok_metric 1\nbad metric{ 2\n"), "scrape.txt")
	if err == nil || !strings.HasPrefix(err.Error(), "scrape.txt:2:") {
		t.Fatalf("err = %v, want scrape.txt:2: ...", err)
	}
}

// Identity checks across the scrapes of the JSON run: pass, pass, error gap
// during the outage (5 hits in total_hits only, redis_error +5), pass, reset
// after the RLS restart.
func TestCheckIdentitiesPrometheus(t *testing.T) {
	files := []string{"prom_metrics_1_after_a.txt", "prom_metrics_2_after_b.txt", "prom_metrics_3_after_c.txt",
		"prom_metrics_4_during_outage.txt", "prom_metrics_5_after_d.txt", "prom_metrics_6_after_e.txt"}
	var snaps []*evidence.RLSCounters
	for _, f := range files {
		snaps = append(snaps, parsePromFixture(t, "json-prometheus/"+f).RLSCounters())
	}
	want := []map[string]string{
		{"inventory.tenant_lab": IdentityPass},
		{"inventory.tenant_lab": IdentityPass, "edge.plan_free": IdentityPass},
		{"inventory.tenant_lab": IdentityErrorGap, "edge.plan_free": IdentityPass},
		{"inventory.tenant_lab": IdentityPass, "edge.plan_free": IdentityPass},
		{"inventory.tenant_lab": IdentityReset, "edge.plan_free": IdentityReset},
	}
	for i := 0; i+1 < len(snaps); i++ {
		res := CheckIdentities(snaps[i], snaps[i+1])
		eqInt(t, files[i+1]+" results", len(res), len(want[i]))
		for _, r := range res {
			eqStr(t, files[i]+"→"+files[i+1]+" "+r.Key, r.Status, want[i][r.Key])
			if r.Key == "inventory.tenant_lab" && r.Status == IdentityErrorGap {
				eqF(t, "outage gap", r.Gap, 5)
			}
		}
	}
	// From zero, the first scrape passes.
	for _, r := range CheckIdentities(nil, snaps[0]) {
		eqStr(t, "fresh "+r.Key, r.Status, IdentityPass)
	}
	// A broken identity without errors fails.
	bad := &evidence.RLSCounters{Keys: map[string]evidence.RLSKeyCounters{"d.k": {TotalHits: 5, WithinLimit: 3, OverLimit: 1}}}
	if r := CheckIdentities(nil, bad); len(r) != 1 || r[0].Status != IdentityFail || r[0].Gap != 1 {
		t.Errorf("bad identity = %+v", r)
	}
	shadow := &evidence.RLSCounters{Keys: map[string]evidence.RLSKeyCounters{"d.k": {TotalHits: 2, WithinLimit: 1, OverLimit: 1, ShadowMode: 2}}}
	if r := CheckIdentities(nil, shadow); r[0].Status != IdentityFail {
		t.Errorf("shadow > over = %+v", r)
	}
}

func TestFetch(t *testing.T) {
	body, err := os.ReadFile(fixture(t, "json-prometheus/prom_metrics_5_after_d.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("server not on loopback: %s", srv.URL)
	}
	raw, snap, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != string(body) {
		t.Error("raw body differs")
	}
	eqF(t, "fetched total_hits", snap.Rules[RuleID{"inventory", "tenant_lab", ""}].TotalHits, 40)
	if _, _, err := Fetch(context.Background(), srv.Client(), srv.URL+"/other"); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("non-200 err = %v", err)
	}
}
