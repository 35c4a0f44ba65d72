package envoy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// adminServer serves fixtures the way Envoy's admin does, on 127.0.0.1:0.
func adminServer(t *testing.T, bodies map[string][]byte) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Method != http.MethodGet {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		key := r.URL.Path
		if r.URL.RawQuery != "" {
			key += "?" + r.URL.RawQuery
		}
		b, ok := bodies[key]
		if !ok {
			http.Error(w, "invalid path: "+key, http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server not on loopback: %s", srv.URL)
	}
	return srv, &hits
}

func TestFetchRoundTripAllFormats(t *testing.T) {
	text := fixture(t, "gh_envoy_issue6974_stats_text_rls_cluster_excerpt_2019.txt")
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(fixture(t, "gh_envoy_admin_rst_stats_json_histograms_doc_example.json"), &doc); err != nil {
		t.Fatal(err)
	}
	jsonBody := []byte(`{"stats":[{"name":"cluster.rate_limit_cluster.internal.upstream_rq_503","value":16},{"histograms":` + string(doc["histograms"]) + `}]}`)
	prom := fixture(t, "gh_aeraki_pr40_prometheus_empty_braces_2022.txt")
	srv, hits := adminServer(t, map[string][]byte{
		"/stats":             text,
		"/stats?format=json": jsonBody,
		"/stats/prometheus":  prom,
		"/server_info":       fixture(t, "gh_envoy_admin_rst_server_info_example.json"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}

	for _, c := range []struct {
		format envoyrec.Format
		body   []byte
		check  func(*envoyrec.Snapshot) bool
	}{
		{envoyrec.FormatText, text, func(s *envoyrec.Snapshot) bool {
			v, _ := s.Value("cluster.rate_limit_cluster.internal.upstream_rq_503")
			return v == 16 && len(s.Values) == 25 && len(s.Upstream) == 1 && s.Upstream[0].Codes["503"] == 16
		}},
		{envoyrec.FormatJSON, jsonBody, func(s *envoyrec.Snapshot) bool {
			return len(s.Values) == 1 && s.Upstream[0].Codes["503"] == 16 && len(s.Histograms) == 2 &&
				*s.Histograms["http.admin.downstream_rq_time"].Quantiles[8].Cumulative == 260
		}},
		{envoyrec.FormatPrometheus, prom, func(s *envoyrec.Snapshot) bool {
			v, _ := s.Value("envoy_meta_protocol_thrift_sample_server_meta_thrift_svc_cluster_local_local_rate_limit_rate_limited")
			return v == 19 && len(s.Values) == 2
		}},
	} {
		before := time.Now().UnixNano()
		raw, snap, err := Fetch(ctx, client, srv.URL+"/", c.format)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		if !bytes.Equal(raw, c.body) {
			t.Errorf("%s: raw body differs from what was served", c.format)
		}
		if snap.Format != c.format || snap.Admin != srv.URL+"/" || snap.TakenNs < before || snap.TakenNs > time.Now().UnixNano() {
			t.Errorf("%s: snapshot meta %q %q %d", c.format, snap.Format, snap.Admin, snap.TakenNs)
		}
		if !c.check(snap) {
			t.Errorf("%s: unexpected snapshot %+v", c.format, snap)
		}
		// The stored raw body parses to the same snapshot offline.
		again, err := Parse(bytes.NewReader(raw), "raw", "")
		if err != nil {
			t.Fatal(err)
		}
		again.Admin, again.TakenNs = snap.Admin, snap.TakenNs
		if !reflect.DeepEqual(again, snap) {
			t.Errorf("%s: offline parse of raw differs", c.format)
		}
	}
	if got := hits.Load(); got != 3 {
		t.Errorf("%d requests to admin, want 3", got)
	}

	raw, info, err := FetchServerInfo(ctx, client, srv.URL)
	if err != nil || len(raw) == 0 {
		t.Fatalf("FetchServerInfo: %v", err)
	}
	if info.Release != "1.9.0-dev" || info.Concurrency != 8 {
		t.Errorf("server info %+v", info)
	}
}

func TestFetchErrors(t *testing.T) {
	srv, _ := adminServer(t, map[string][]byte{
		"/stats": []byte("cluster.a.upstream_rq_200: 1\ngarbage\n"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// 404 for an endpoint the server lacks: error names URL and status, body returned.
	raw, snap, err := Fetch(ctx, nil, srv.URL, envoyrec.FormatPrometheus)
	if err == nil || snap != nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), srv.URL+"/stats/prometheus") || !bytes.Contains(raw, []byte("invalid path")) {
		t.Errorf("404: raw %q err %v", raw, err)
	}
	// Parse error: raw is still returned, error names URL and line 2.
	raw, snap, err = Fetch(ctx, nil, srv.URL, "")
	var le *envoyrec.LineError
	if !errors.As(err, &le) || le.Line != 2 || le.Source != srv.URL+"/stats" || snap != nil || len(raw) == 0 {
		t.Errorf("parse error: %v", err)
	}
	if _, _, err := Fetch(ctx, nil, srv.URL, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
	// Cancelled context.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, _, err := Fetch(cctx, nil, srv.URL, envoyrec.FormatText); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestServerInfoFixture(t *testing.T) {
	name := "gh_envoy_admin_rst_server_info_example.json"
	info, err := ParseServerInfo(bytes.NewReader(fixture(t, name)), name)
	if err != nil {
		t.Fatal(err)
	}
	want := &ServerInfo{
		Version:            "b050513e840aa939a01f89b07c162f00ab3150eb/1.9.0-dev/Modified/DEBUG",
		Release:            "1.9.0-dev",
		State:              "LIVE",
		Concurrency:        8,
		UptimeCurrentEpoch: "6s",
		NodeID:             "node1",
		NodeCluster:        "cluster1",
	}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("got %+v, want %+v", info, want)
	}
	_, err = ParseServerInfo(strings.NewReader("{\n\"state\": \"LIVE\",\n\"version\": 3\n}"), "si.json")
	var le *envoyrec.LineError
	if !errors.As(err, &le) || le.Line != 3 {
		t.Errorf("type error %v, want si.json line 3", err)
	}
	if _, err := ParseServerInfo(strings.NewReader(`{"state":"LIVE"}`), "si.json"); err == nil {
		t.Error("missing version accepted")
	}
	info, err = ParseServerInfo(strings.NewReader(`{"version":"x/1.31.0/Clean/RELEASE/BoringSSL","command_line_options":{"concurrency":"2"}}`), "s")
	if err != nil || info.Concurrency != 2 || info.Release != "1.31.0" {
		t.Errorf("string concurrency: %+v %v", info, err)
	}
}
