package envoy

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// statsJSON is a GET /stats?format=json body of n counters, one element
// per line, and a last element bad when bad is set.
func statsJSON(n int, bad bool) []byte {
	var b strings.Builder
	b.WriteString("{\"stats\": [\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"name": "cluster.c%d.upstream_rq_total", "value": %d}`, i, i)
	}
	if bad {
		b.WriteString(",\n{\"name\": \"bad\", \"value\": -1}")
	}
	b.WriteString("\n]}\n")
	return []byte(b.String())
}

// BenchmarkParseJSONStats times Parse of a JSON stats body of n stats: the
// time per stat stays flat as n grows (each element's line was once
// counted from the start of the body).
func BenchmarkParseJSONStats(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		body := statsJSON(n, false)
		b.Run(fmt.Sprintf("stats=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				snap, err := Parse(bytes.NewReader(body), "stats.json", envoyrec.FormatJSON)
				if err != nil || len(snap.Values) < n {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/stat")
		})
	}
}

// TestParseJSONBadElementLine: a bad element after many good ones is an
// error naming its line (counted only on error).
func TestParseJSONBadElementLine(t *testing.T) {
	_, err := Parse(bytes.NewReader(statsJSON(3000, true)), "stats.json", envoyrec.FormatJSON)
	if err == nil || !strings.HasPrefix(err.Error(), "stats.json:3002:") || !strings.Contains(err.Error(), `stat "bad"`) {
		t.Fatalf("got %v", err)
	}
}
