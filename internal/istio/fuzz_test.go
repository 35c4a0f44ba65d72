package istio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/lab/proxy"
)

// FuzzTranslate: any input either translates into settings the lab proxy
// accepts, or is refused with an error naming the input; never a panic.
func FuzzTranslate(f *testing.F) {
	for _, n := range []string{"destinationrule-before.yaml", "destinationrule-after.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "istio", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("apiVersion: networking.istio.io/v1\nkind: EnvoyFilter\nspec:\n  configPatches:\n  - applyTo: CLUSTER\n    patch: {operation: MERGE, value: {common_lb_config: {healthy_panic_threshold: {value: 20}}}}\n"))
	f.Add([]byte("apiVersion: networking.istio.io/v1\nkind: DestinationRule\nspec: {host: x, trafficPolicy: {outlierDetection: {maxEjectionPercent: -1}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Translate("in.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in.yaml") {
				t.Fatalf("error %q does not name the input", err)
			}
			return
		}
		cfg := proxy.Config{CircuitBreakers: s.CircuitBreakers, OutlierDetection: s.OutlierDetection, HealthyPanicThreshold: s.HealthyPanicThreshold,
			MaxRequestsPerConnection: s.MaxRequestsPerConnection, MaxStreamDuration: time.Duration(s.MaxStreamDuration)}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("translated settings the lab refuses: %v", err)
		}
	})
}
