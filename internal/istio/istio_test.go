package istio

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "istio", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIncidentFilesTranslate(t *testing.T) {
	var s Settings
	if err := s.DestinationRule("dr.yaml", fixture(t, "destinationrule-before.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := s.EnvoyFilter("ef.yaml", fixture(t, "envoyfilter-hcm-fragment.yaml")); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(s, "", " ")
	t.Log(string(b))
	od := s.OutlierDetection
	if od == nil || *od.Consecutive5xx != 3 || *od.EnforcingConsecutive5xx != 100 || *od.MaxEjectionPercent != 50 ||
		time.Duration(od.BaseEjectionTime) != 30*time.Second || time.Duration(od.Interval) != 10*time.Second || od.SplitExternalLocalOriginErrors {
		t.Fatalf("outlier detection = %+v", od)
	}
	if *s.CircuitBreakers.MaxPendingRequests != 1024 || *s.CircuitBreakers.MaxRequests != 1<<32-1 || s.MaxRequestsPerConnection != 100 {
		t.Fatalf("connection pool: %+v, per connection %d", s.CircuitBreakers, s.MaxRequestsPerConnection)
	}
	if *s.HealthyPanicThreshold != 0 || time.Duration(s.ConnectTimeout) != 10*time.Second || time.Duration(s.MaxStreamDuration) != 3*time.Second {
		t.Fatalf("panic %v, connect %v, max stream duration %v", *s.HealthyPanicThreshold, s.ConnectTimeout, s.MaxStreamDuration)
	}
	if !hasCode(s.Findings, CodePanicDisabled) {
		t.Fatalf("findings %v: want %s", s.Findings, CodePanicDisabled)
	}
}

func TestAfterFileSplitsLocalOrigin(t *testing.T) {
	var s Settings
	if err := s.DestinationRule("dr.yaml", fixture(t, "destinationrule-after.yaml")); err != nil {
		t.Fatal(err)
	}
	od := s.OutlierDetection
	if !od.SplitExternalLocalOriginErrors || *od.Consecutive5xx != 15 || od.ConsecutiveLocalOriginFailure != nil {
		t.Fatalf("outlier detection = %+v", od)
	}
}

func hasCode(fs []Finding, code string) bool {
	for _, f := range fs {
		if f.Code == code {
			return true
		}
	}
	return false
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unknown field", "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nspec:\n  host: x\n  trafficPolicy:\n    outlierDetection:\n      consecutive5xxError: 3\n", "consecutive5xxError"},
		{"wrong kind", "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec: {hosts: [x]}\n", "want DestinationRule"},
		{"wrong api", "apiVersion: v1\nkind: DestinationRule\nspec: {host: x}\n", "apiVersion"},
		{"no spec", "apiVersion: networking.istio.io/v1\nkind: DestinationRule\n", "without spec"},
		{"empty", "", "empty"},
		{"bad percent", "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nspec:\n  host: x\n  trafficPolicy:\n    outlierDetection: {maxEjectionPercent: 150}\n", "0..100"},
		{"wrong type", "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nspec:\n  host: x\n  trafficPolicy:\n    outlierDetection: {interval: fast}\n", `invalid google.protobuf.Duration value "fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Settings
			err := s.DestinationRule("in.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "in.yaml") {
				t.Fatalf("err = %v, want it to name in.yaml and %q", err, tc.want)
			}
		})
	}
}

func TestEnvoyFilterPatches(t *testing.T) {
	in := `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: order-svc-panic}
spec:
  configPatches:
  - applyTo: CLUSTER
    match: {cluster: {service: order-svc}}
    patch:
      operation: MERGE
      value:
        common_lb_config:
          healthy_panic_threshold: {value: 20}
  - applyTo: HTTP_ROUTE
    patch:
      operation: MERGE
      value:
        route:
          max_stream_duration: {max_stream_duration: 2s}
  - applyTo: LISTENER
    patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 1024}}
`
	var s Settings
	if err := s.EnvoyFilter("ef.yaml", []byte(in)); err != nil {
		t.Fatal(err)
	}
	if s.HealthyPanicThreshold == nil || *s.HealthyPanicThreshold != 20 || time.Duration(s.MaxStreamDuration) != 2*time.Second {
		t.Fatalf("settings = %+v", s)
	}
	if !hasCode(s.Findings, CodeNotModelled) {
		t.Fatalf("the LISTENER patch must be reported: %v", s.Findings)
	}
	bad := strings.Replace(in, "healthy_panic_threshold: {value: 20}", "healthy_panic_treshold: {value: 20}", 1)
	if err := (&Settings{}).EnvoyFilter("ef.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "spec.configPatches[0]") {
		t.Fatalf("a misspelt field: err = %v", err)
	}
}
