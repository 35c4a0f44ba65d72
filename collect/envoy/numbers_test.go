package envoy

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// TestPrometheusCounterPastExactFloat (issue 27): Prometheus text carries
// Envoy's uint64 counters as float64. 2^64-1 (1.8446744073709552e19) was
// refused as "not an unsigned integer", losing the snapshot; values past
// 2^53 were stored rounded as if exact (2^53+1 reads as 2^53). Both are
// now kept and listed in Snapshot.Inexact (2^64-1 stored as such), so that
// analyze compares them as unknown; values below 2^53 are exact and not
// listed.
func TestPrometheusCounterPastExactFloat(t *testing.T) {
	text := "# TYPE envoy_http_local_rate_limit_ok counter\n" +
		"envoy_http_local_rate_limit_ok{envoy_local_http_ratelimit_prefix=\"p\"} 18446744073709551615\n" +
		"# TYPE envoy_http_local_rate_limit_enforced counter\n" +
		"envoy_http_local_rate_limit_enforced{envoy_local_http_ratelimit_prefix=\"p\"} 9007199254740993\n" +
		"# TYPE envoy_http_local_rate_limit_enabled counter\n" +
		"envoy_http_local_rate_limit_enabled{envoy_local_http_ratelimit_prefix=\"p\"} 9007199254740991\n"
	s, err := Parse(strings.NewReader(text), "s.prom", envoyrec.FormatPrometheus)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.http_local_rate_limit.enforced", "p.http_local_rate_limit.ok"}
	if !reflect.DeepEqual(s.Inexact, want) || s.Values["p.http_local_rate_limit.ok"] != math.MaxUint64 ||
		s.IsInexact("p.http_local_rate_limit.enabled") || !s.IsInexact("p.http_local_rate_limit.ok") {
		t.Fatalf("inexact %q, values %v", s.Inexact, s.Values)
	}
	if len(s.Local) != 1 || s.Local[0].OK != math.MaxUint64 || s.Local[0].Enabled != 1<<53-1 {
		t.Fatalf("local %+v", s.Local)
	}
}
