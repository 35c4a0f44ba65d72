package evidence

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkScanKeys times scanKeys (DecodeScenario's key scan) over a
// document of n keys, one per line: the time per key stays flat as n grows
// (each key's line was once counted from the start of the document).
func BenchmarkScanKeys(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		var sb strings.Builder
		sb.WriteString("{\n\"limiters\": [\n")
		for i := range n {
			if i > 0 {
				sb.WriteString(",\n")
			}
			sb.WriteString(`{"name": "l"}`)
		}
		sb.WriteString("\n]\n}\n")
		doc := []byte(sb.String())
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := scanKeys(doc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}

// BenchmarkDecodeScenarioProxies times DecodeScenario of a scenario.json
// naming n proxies; past MaxScenarioProxies it is refused after counting
// MaxScenarioProxies+1 of them.
func BenchmarkDecodeScenarioProxies(b *testing.B) {
	for _, n := range []int{100, 1_000, MaxScenarioProxies, 2_000_000} {
		var sb strings.Builder
		sb.WriteString("{\n\"schema\": \"rlbench.scenario/v1\",\n\"name\": \"x\",\n\"proxies\": [")
		for i := range n {
			if i > 0 {
				sb.WriteString(",\n")
			}
			fmt.Fprintf(&sb, "\"p%d\"", i)
		}
		sb.WriteString("]\n}\n")
		doc := []byte(sb.String())
		b.Run(fmt.Sprintf("proxies=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_, err := DecodeScenario(doc)
				if (err != nil) != (n > MaxScenarioProxies) {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadManifest times Load of a run directory whose manifest.json
// lists n scenario directories, none present (each is Missing); past
// MaxRunScenarios it is an error after decoding the manifest.
func BenchmarkLoadManifest(b *testing.B) {
	for _, n := range []int{100, 1_000, MaxRunScenarios, 200_000} {
		run := b.TempDir()
		if err := WriteJSONFile(Dir(run).Manifest(), Manifest{Schema: ManifestSchema, ScenarioDirs: manifestDirs(n)}); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("dirs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				bundle, err := Load(context.Background(), run)
				if (err != nil) != (n > MaxRunScenarios) || err == nil && len(bundle.Missing) != n {
					b.Fatal(err)
				}
			}
		})
	}
}
