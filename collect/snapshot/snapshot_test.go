package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// pageServer serves body at path (and 404 elsewhere) on 127.0.0.1:0; the
// URL carries a user:password, which the kept evidence must not.
func pageServer(t *testing.T, path, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.Error(w, "not here", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on loopback: %s", srv.URL)
	}
	return strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// textExt is the raw text page's extension (evidence.RawStatsExt).
func textExt(t *testing.T) string {
	ext, ok := evidence.RawStatsExt(string(envoyrec.FormatText))
	if !ok {
		t.Fatal("no extension for the text format")
	}
	return ext
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

const envoyText = "cluster.backend.upstream_rq_total: 7\nhttp.ingress.local_rate_limit.rate_limited: 3\n"

// TestEnvoyStats: the raw page and the parsed snapshot land under the
// names evidence/layout.go gives them, stamped with the proxy, the label
// and the admin URL redacted.
func TestEnvoyStats(t *testing.T) {
	url := pageServer(t, "/stats", envoyText)
	d := evidence.Dir(t.TempDir())
	snap, err := Take(context.Background(), Options{URL: url, Name: "proxy-a", Label: "before", Out: d, Timeout: 5 * time.Second},
		EnvoyStats(envoyrec.FormatText))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Proxy != "proxy-a" || snap.Label != "before" || strings.Contains(snap.Admin, "secret") || snap.Admin == "" {
		t.Errorf("snapshot stamped proxy %q label %q admin %q", snap.Proxy, snap.Label, snap.Admin)
	}
	if v := snap.Values["cluster.backend.upstream_rq_total"]; v != 7 {
		t.Errorf("upstream_rq_total %v, want 7", v)
	}
	raw, err := os.ReadFile(d.StatsSnapshot("proxy-a", "before", textExt(t)))
	if err != nil || string(raw) != envoyText {
		t.Errorf("raw page %q, %v", raw, err)
	}
	var kept envoyrec.Snapshot
	readJSON(t, d.StatsSnapshot("proxy-a", "before", ".json"), &kept)
	if kept.Proxy != "proxy-a" || kept.Label != "before" || kept.Admin != snap.Admin || kept.Values["cluster.backend.upstream_rq_total"] != 7 {
		t.Errorf("parsed snapshot kept as %+v", kept)
	}
}

// TestEnvoyStatsFailure: a page that does not parse (200 with no stats)
// keeps its raw body, writes no parsed snapshot and returns the parse
// error naming the URL.
func TestEnvoyStatsFailure(t *testing.T) {
	url := pageServer(t, "/stats", "\n")
	d := evidence.Dir(t.TempDir())
	_, err := Take(context.Background(), Options{URL: url, Name: "proxy-a", Label: "after", Out: d}, EnvoyStats(envoyrec.FormatText))
	if err == nil || !strings.Contains(err.Error(), "/stats: no stats") {
		t.Fatalf("err %v, want the no-stats error", err)
	}
	if !exists(d.StatsSnapshot("proxy-a", "after", textExt(t))) {
		t.Error("raw body of the failed fetch not kept")
	}
	if exists(d.StatsSnapshot("proxy-a", "after", ".json")) {
		t.Error("a parsed snapshot was written for a failed fetch")
	}
}

const rlsPage = `# TYPE ratelimit_service_rate_limit_over_limit counter
ratelimit_service_rate_limit_over_limit{domain="rl",key1="foo"} 85
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{domain="rl",key1="foo"} 100
`

// TestRLSPrometheus: rls/metrics.<label>.prom and .json, the JSON an
// evidence.RLSMetrics stamped with the label, the injected clock and the
// redacted URL; a 404 keeps the body read and writes no JSON.
func TestRLSPrometheus(t *testing.T) {
	url := pageServer(t, "/metrics", rlsPage)
	d := evidence.Dir(t.TempDir())
	at := time.Unix(1700000000, 5)
	snap, err := Take(context.Background(), Options{URL: url + "/metrics", Label: "after", Out: d, Now: func() time.Time { return at }}, RLSPrometheus())
	if err != nil {
		t.Fatal(err)
	}
	if snap == nil || len(snap.Rules) != 1 {
		t.Fatalf("parsed page %+v", snap)
	}
	if raw, err := os.ReadFile(d.RLSMetrics("after", ".prom")); err != nil || string(raw) != rlsPage {
		t.Errorf("raw page %q, %v", raw, err)
	}
	var m evidence.RLSMetrics
	readJSON(t, d.RLSMetrics("after", ".json"), &m)
	if m.Schema != evidence.RLSMetricsSchema || m.Label != "after" || m.TimeNs != at.UnixNano() || strings.Contains(m.URL, "secret") ||
		m.Process != 1 || !m.Stable || m.Prometheus == nil || m.Counters == nil {
		t.Errorf("metrics kept as %+v", m)
	}

	d = evidence.Dir(t.TempDir())
	if _, err := Take(context.Background(), Options{URL: url + "/nope", Label: "after", Out: d}, RLSPrometheus()); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("404: err %v", err)
	}
	if raw, err := os.ReadFile(d.RLSMetrics("after", ".prom")); err != nil || !strings.Contains(string(raw), "not here") {
		t.Errorf("404 body not kept: %q %v", raw, err)
	}
	if exists(d.RLSMetrics("after", ".json")) {
		t.Error("metrics JSON written for a failed fetch")
	}
}

// TestRLSPrometheusUnreachable: nothing read, nothing kept (not even the
// rls directory), the connection error returned.
func TestRLSPrometheusUnreachable(t *testing.T) {
	d := evidence.Dir(t.TempDir())
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	if _, err := Take(context.Background(), Options{URL: url + "/metrics", Label: "before", Out: d, Timeout: 5 * time.Second}, RLSPrometheus()); err == nil {
		t.Fatal("no error from a closed server")
	}
	if exists(d.RLS()) {
		t.Error("rls directory created for a fetch that read nothing")
	}
}

const stubStatus = "Active connections: 2 \nserver accepts handled requests\n 10 10 31 \nReading: 0 Writing: 1 Waiting: 1 \n"

// TestNginxStubStatus: nginx/<proxy>/stub_status.<label>.txt and .json; a
// failed fetch keeps the body read and no JSON.
func TestNginxStubStatus(t *testing.T) {
	url := pageServer(t, "/stub_status", stubStatus)
	d := evidence.Dir(t.TempDir())
	st, err := Take(context.Background(), Options{URL: url + "/stub_status", Name: "edge", Label: "before", Out: d}, NginxStubStatus())
	if err != nil {
		t.Fatal(err)
	}
	if st.Active != 2 || st.Accepts != 10 || st.Requests != 31 || st.Waiting != 1 {
		t.Errorf("parsed %+v", st)
	}
	base := d.Path(evidence.NginxPath("edge", ""))
	if raw, err := os.ReadFile(filepath.Join(base, evidence.NginxStubStatusRaw("before"))); err != nil || string(raw) != stubStatus {
		t.Errorf("raw page %q, %v", raw, err)
	}
	var kept struct{ Requests int64 }
	readJSON(t, filepath.Join(base, evidence.NginxStubStatusJSON("before")), &kept)
	if kept.Requests != 31 {
		t.Errorf("kept requests %d, want 31", kept.Requests)
	}

	if _, err := Take(context.Background(), Options{URL: url + "/nope", Name: "edge", Label: "after", Out: d}, NginxStubStatus()); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Fatalf("404: err %v", err)
	}
	if !exists(filepath.Join(base, evidence.NginxStubStatusRaw("after"))) || exists(filepath.Join(base, evidence.NginxStubStatusJSON("after"))) {
		t.Error("a failed fetch: want the raw body kept and no JSON")
	}
}

// TestTakeErrors: keeping the raw body of a failed fetch can fail too,
// and that error wins (the evidence directory is broken); a failed write
// of a good page returns the write's error and no page.
func TestTakeErrors(t *testing.T) {
	errFetch, errKeep, errWrite := errors.New("fetch"), errors.New("keep"), errors.New("write")
	var client *http.Client
	p := Page[int]{
		Fetch: func(_ context.Context, c *http.Client, url string) ([]byte, int, error) {
			client = c
			if url == "bad" {
				return []byte("partial"), 0, errFetch
			}
			return []byte("ok"), 7, nil
		},
		KeepRaw: func(Options, []byte) error { return errKeep },
		Write:   func(Options, []byte, int) (int, error) { return 7, errWrite },
	}
	if _, err := Take(context.Background(), Options{URL: "bad", Timeout: 3 * time.Second}, p); !errors.Is(err, errKeep) {
		t.Errorf("keep failed: err %v, want %v", err, errKeep)
	}
	if client == nil || client.Timeout != 3*time.Second {
		t.Errorf("client %+v, want one bounded by the timeout", client)
	}
	if v, err := Take(context.Background(), Options{URL: "good"}, p); !errors.Is(err, errWrite) || v != 0 {
		t.Errorf("write failed: %d, %v", v, err)
	}
	p.KeepRaw = func(Options, []byte) error { return nil }
	if _, err := Take(context.Background(), Options{URL: "bad"}, p); !errors.Is(err, errFetch) {
		t.Errorf("fetch failed: err %v, want %v", err, errFetch)
	}
	own := &http.Client{}
	if _, err := Take(context.Background(), Options{URL: "good", Client: own}, Page[int]{Fetch: p.Fetch, Write: func(Options, []byte, int) (int, error) { return 7, nil }}); err != nil || client != own {
		t.Errorf("Options.Client not used: %v", err)
	}
}
