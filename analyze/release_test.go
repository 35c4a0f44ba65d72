package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// update rewrites the reports and status files of testdata/v1-release with
// this release's (go test ./analyze -run TestPreviousReleaseEvidence -update):
// review the diff, every change must be deliberate.
var update = flag.Bool("update", false, "rewrite testdata/v1-release/*.report.json and *.status.txt")

// TestPreviousReleaseEvidence analyses evidence written by the previous
// release (testdata/v1-release: `rlbench demo`, `rlbench run
// examples/e06/plan.yaml`, two scenarios of examples/real-rls, a bare
// `rlbench attack` directory and a hand-made run directory with a default
// format access log, a truncated requests.jsonl, a NOT_RUN marker, a scenario
// the manifest lists but that is absent, tampered receipts and stats, and a
// real RLS log collected by `rlbench collect rls-log`) and compares the JSON
// report with the one that release produced (<name>.report.json, written by
// `rlbench analyze --format json`), ignoring only generated_at and fields
// added since, and status.txt with <name>.status.txt.
func TestPreviousReleaseEvidence(t *testing.T) {
	base := filepath.Join("testdata", "v1-release")
	five := 5
	cases := []struct {
		name, report string
		opts         Options
	}{
		{"e06", "e06", Options{}},
		{"demo", "demo", Options{}},
		{"real-rls", "real-rls", Options{}},
		{"manual", "manual", Options{}},
		{"bare", "bare", Options{}},
		{"bare", "bare.overrides", Options{Admitted: &evidence.Range{Min: 10, Max: 12}, IntendedLimit: &five}},
	}
	for _, c := range cases {
		t.Run(c.report, func(t *testing.T) {
			rep, err := Analyze(context.Background(), filepath.Join(base, c.name), c.opts)
			must(t, err)
			var got bytes.Buffer
			must(t, WriteJSON(&got, rep))
			if *update {
				must(t, os.WriteFile(filepath.Join(base, c.report+".report.json"), got.Bytes(), 0o644))
				if c.opts.Admitted == nil {
					var st bytes.Buffer
					must(t, WriteStatus(&st, rep))
					must(t, os.WriteFile(filepath.Join(base, c.name+".status.txt"), st.Bytes(), 0o644))
				}
			}
			want, err := os.ReadFile(filepath.Join(base, c.report+".report.json"))
			must(t, err)
			if g, w := normalise(t, got.Bytes(), want), normalise(t, want, nil); g != w {
				t.Fatalf("report differs from the previous release's:\n%s", firstDiff(g, w))
			}
			if c.opts.Admitted != nil {
				return
			}
			wantStatus, err := os.ReadFile(filepath.Join(base, c.name+".status.txt"))
			must(t, err)
			// That release wrote spaces in names as '_'; names are now
			// quoted instead. Its file still reads, and every line matches.
			old, err := evidence.ReadStatus(bytes.NewReader(wantStatus), c.name+".status.txt")
			must(t, err)
			var st bytes.Buffer
			must(t, WriteStatus(&st, rep))
			now, err := evidence.ReadStatus(&st, "status.txt")
			must(t, err)
			if len(now) != len(old) {
				t.Fatalf("status.txt has %d lines, the previous release's %d", len(now), len(old))
			}
			for i := range now {
				l := now[i]
				l.Scenario = strings.ReplaceAll(l.Scenario, " ", "_")
				if l != old[i] {
					t.Errorf("status.txt line %d: %+v, previous release %+v", i+1, now[i], old[i])
				}
			}
		})
	}
}

// normalise re-indents a report with generated_at removed. With old (the
// previous release's report), fields the old report lacks are removed too:
// new fields are additive, every old one must keep its value.
func normalise(t *testing.T, b, old []byte) string {
	t.Helper()
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	if old != nil {
		var o map[string]any
		must(t, json.Unmarshal(old, &o))
		dropAdded(m, o)
	}
	delete(m, "generated_at")
	out, err := json.MarshalIndent(m, "", " ")
	must(t, err)
	return string(out)
}

// dropAdded removes from got the object members old does not have, at any depth.
func dropAdded(got, old any) {
	switch g := got.(type) {
	case map[string]any:
		o, ok := old.(map[string]any)
		if !ok {
			return
		}
		for k, v := range g {
			ov, ok := o[k]
			if !ok {
				delete(g, k)
				continue
			}
			dropAdded(v, ov)
		}
	case []any:
		o, ok := old.([]any)
		if !ok {
			return
		}
		for i := range min(len(g), len(o)) {
			dropAdded(g[i], o[i])
		}
	}
}

// firstDiff shows the first differing line of two texts with some context.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			lo := max(0, i-8)
			return "line " + itoa(i+1) + "\nwant context:\n" + strings.Join(w[lo:min(len(w), i+3)], "\n") +
				"\ngot:  " + gl + "\nwant: " + wl
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
