package envoy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// TestEmptyBodiesRefused: an empty /stats body was accepted as a snapshot in
// which every counter is 0.
func TestEmptyBodiesRefused(t *testing.T) {
	for _, c := range []struct {
		in     string
		format envoyrec.Format
	}{
		{"", envoyrec.FormatText},
		{"", ""},
		{"\n\n# captured at 10:00\n", envoyrec.FormatText},
		{"", envoyrec.FormatPrometheus},
		{"# HELP x y\n# TYPE x counter\n", envoyrec.FormatPrometheus},
		{`{"stats":[]}`, envoyrec.FormatJSON},
		{`{"stats":[{"unknown":1}]}`, envoyrec.FormatJSON},
	} {
		_, err := Parse(strings.NewReader(c.in), "proxy-a.before", c.format)
		if err == nil || !strings.Contains(err.Error(), "proxy-a.before: no stats") {
			t.Errorf("Parse(%q, %q) = %v, want a no-stats error naming the source", c.in, c.format, err)
		}
		if _, _, err := ParseLenient(strings.NewReader(c.in), "x", c.format); err == nil {
			t.Errorf("ParseLenient(%q) accepted an empty body", c.in)
		}
	}
	// Every line skipped by the lenient parser is no snapshot either.
	if _, skipped, err := ParseLenient(strings.NewReader("hello world\nnot stats\n"), "x", envoyrec.FormatText); err == nil || len(skipped) != 2 {
		t.Errorf("lenient all-skipped: %v (%d skipped)", err, len(skipped))
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, snap, err := Fetch(context.Background(), srv.Client(), srv.URL, envoyrec.FormatText)
	if err == nil || snap != nil || !strings.Contains(err.Error(), srv.URL+"/stats: no stats") {
		t.Errorf("Fetch of an empty 200 = %v, %v; want an error naming the URL", snap, err)
	}
}

// TestNonFiniteValuesNamed: NaN and infinities in places that end up in the
// snapshot's JSON are errors naming the series and its line, so that the
// snapshot always marshals.
func TestNonFiniteValuesNamed(t *testing.T) {
	for _, c := range []struct {
		in, want string
		line     int
	}{
		{"# TYPE a counter\na 1\n# TYPE envoy_x counter\nenvoy_x{envoy_cluster_name=\"c\"} NaN\n", `series envoy_x{envoy_cluster_name="c"}: value NaN`, 4},
		{"# TYPE a gauge\na{x=\"1\"} 1\na{x=\"2\"} +Inf\n", `series a{x="2"}: value +Inf`, 3},
		{"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum NaN\nh_count 1\n", "histogram sum NaN", 2},
	} {
		_, err := Parse(strings.NewReader(c.in), "p.prom", envoyrec.FormatPrometheus)
		var le *envoyrec.LineError
		if !errors.As(err, &le) || le.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want line %d and %q", c.in, err, c.line, c.want)
		}
	}
	// A detailed histogram bucket bound of nan (text).
	in := "cluster.a.upstream_rq_time:\n  totals=nan,1:2\n  intervals=\n  summary=P0(nan,1)\n"
	if _, err := Parse(strings.NewReader(in), "d.txt", envoyrec.FormatText); err == nil || !strings.Contains(err.Error(), "d.txt:2:") {
		t.Errorf("nan detail bucket: %v", err)
	}
	// What parses marshals.
	s, err := Parse(strings.NewReader("# TYPE s summary\ns{quantile=\"0.5\"} NaN\ns_sum 0\ns_count 0\n"), "ok", envoyrec.FormatPrometheus)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

// TestAccessLogCaseDuplicates: keys that differ only in case were resolved
// by map iteration order, so the same line could parse two ways.
func TestAccessLogCaseDuplicates(t *testing.T) {
	line := `{"METHOD":"A","Method":"B","method":"C","Path":"/x","PATH":"/y","response_code":200}` + "\n"
	for i := 0; i < 50; i++ {
		es, err := envoyrec.ParseAccessLog(strings.NewReader(line), "a.log")
		if err != nil {
			t.Fatal(err)
		}
		if es[0].Method != "C" || es[0].Path != "/y" {
			t.Fatalf("method %q path %q, want the lower-case key, else the first in byte order (C, /y)", es[0].Method, es[0].Path)
		}
	}
}
