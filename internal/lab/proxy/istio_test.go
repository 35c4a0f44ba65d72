package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// split_external_local_origin_errors. Without it a reset before the
// response counts as a 503: 3 in a row (consecutive_5xx) eject the host.
// With it a failure to connect is a locally originated error: 5 in a row
// (consecutive_local_origin_failure's default) eject it; a reset after the
// connection was made never does, because every attempt that gets a
// connection reports LocalOriginConnectSuccess first, which restarts the
// count (outlier_detection_impl.cc putResultWithLocalExternalSplit), and
// it is not a 5xx either.
func TestSplitLocalOriginErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		split    bool
		dead     bool
		ejectAt  int // 503s the clients saw before the ejection; 0: never ejected
		detected string
	}{
		{"no split: resets count as 503", false, false, 3, "ejections_detected_consecutive_5xx"},
		{"split: connect failures are local origin failures", true, true, 5, "ejections_detected_consecutive_local_origin_failure"},
		{"split: resets after connecting never eject", true, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := newScripted(t, func(_ int64, w http.ResponseWriter, _ *http.Request) { resetConn(w) }).URL()
			if tc.dead {
				bad = "http://" + deadAddr(t)
			}
			good := newScripted(t, func(_ int64, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
			od := &OutlierDetection{Consecutive5xx: u32(3), Interval: Duration(time.Hour), MaxEjectionPercent: u32(50), SplitExternalLocalOriginErrors: tc.split}
			p := startProxy(t, Config{Name: "p", Upstreams: []string{bad, good.URL()}, OutlierDetection: od, Seed: 1})
			failed := 0
			for range 40 {
				if gauge(t, p, "outlier_detection.ejections_active") != 0 {
					break
				}
				if r := do(t, "GET", "http://"+p.Addr()+"/", nil); r.code == http.StatusServiceUnavailable {
					failed++
				}
			}
			if tc.ejectAt == 0 {
				if got := gauge(t, p, "outlier_detection.ejections_enforced_total"); got != 0 || failed != 20 {
					t.Fatalf("%d ejections after %d resets, want none after 20", got, failed)
				}
				return
			}
			if failed != tc.ejectAt {
				t.Fatalf("the failing host failed %d requests before its ejection, want %d", failed, tc.ejectAt)
			}
			if gauge(t, p, "outlier_detection."+tc.detected) != 1 || gauge(t, p, "outlier_detection.ejections_enforced_total") != 1 {
				t.Fatalf("stats %v", textStats(t, p))
			}
		})
	}
}

// Envoy before 1.28 checked max_ejection_percent against the share already
// ejected: with 3 failing hosts of 5 at 50%, all 3 go (0, 20, 40 < 50) and
// the cluster is in panic (40% healthy < 50%); since 1.28 the third is an
// overflow ((2+1)/5 > 50%) and there is no panic.
func TestPre128MaxEjectionPercent(t *testing.T) {
	for _, tc := range []struct {
		pre128             bool
		ejected, overflows int64
		panic              bool
	}{{true, 3, 0, true}, {false, 2, 1, false}} {
		var ups []string
		for i := range 5 {
			fail := i < 3
			s := newScripted(t, func(_ int64, w http.ResponseWriter, _ *http.Request) {
				if fail {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			})
			ups = append(ups, s.URL())
		}
		od := &OutlierDetection{Consecutive5xx: u32(1), Interval: Duration(time.Hour), MaxEjectionPercent: u32(50), Pre128MaxEjectionPercent: tc.pre128}
		p := startProxy(t, Config{Name: "p", Upstreams: ups, OutlierDetection: od, HealthyPanicThreshold: pct(50), Seed: 1})
		for range 20 {
			do(t, "GET", "http://"+p.Addr()+"/", nil)
		}
		st := textStats(t, p)
		if got := textCounter(st, "cluster.backend.outlier_detection.ejections_active"); got != tc.ejected {
			t.Fatalf("pre128=%v: %d ejected, want %d", tc.pre128, got, tc.ejected)
		}
		if got := textCounter(st, "cluster.backend.outlier_detection.ejections_overflow"); got < tc.overflows || (tc.overflows == 0 && got != 0) {
			t.Fatalf("pre128=%v: %d overflows, want %d", tc.pre128, got, tc.overflows)
		}
		if got := textCounter(st, "cluster.backend.lb_healthy_panic") > 0; got != tc.panic {
			t.Fatalf("pre128=%v: panic %v, want %v", tc.pre128, got, tc.panic)
		}
	}
}

// max_requests_per_connection 2: every upstream connection carries 2
// requests, then closes (upstream_cx_max_requests).
func TestMaxRequestsPerConnection(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	p := startProxy(t, Config{Name: "p", Upstream: up.URL, MaxRequestsPerConnection: 2})
	for range 6 {
		if r := do(t, "GET", "http://"+p.Addr()+"/", nil); r.code != 200 {
			t.Fatalf("code %d", r.code)
		}
	}
	if got := gauge(t, p, "upstream_cx_max_requests"); got != 3 {
		t.Fatalf("upstream_cx_max_requests = %d, want 3", got)
	}
	if got := conns.Load(); got != 3 {
		t.Fatalf("the upstream saw %d connections, want 3", got)
	}
}

// max_stream_duration: an upstream slower than it gets the client a 408
// "downstream duration timeout", counted in downstream_rq_max_duration_reached.
func TestMaxStreamDuration(t *testing.T) {
	b := newBlocking(t)
	defer b.free()
	p := startProxy(t, Config{Name: "p", Upstream: b.URL(), MaxStreamDuration: 50 * time.Millisecond})
	r := do(t, "GET", "http://"+p.Addr()+"/", nil)
	if r.code != http.StatusRequestTimeout || r.body != "downstream duration timeout" {
		t.Fatalf("got %d %q, want 408 downstream duration timeout", r.code, r.body)
	}
	if got := textCounter(textStats(t, p), "http.ingress_http.downstream_rq_max_duration_reached"); got != 1 {
		t.Fatalf("downstream_rq_max_duration_reached = %d", got)
	}
	if err := (&Config{MaxStreamDuration: -1}).Validate(); err == nil {
		t.Fatal("a negative max_stream_duration must be refused")
	}
}
