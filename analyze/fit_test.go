package analyze

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// fitFixtures are every previous-release run under testdata/v1-release.
var fitFixtures = []string{"bare", "demo", "e06", "manual", "real-rls"}

// renderFit renders rep with o.
func renderFit(t *testing.T, rep *report.Report, o report.TableOptions) string {
	t.Helper()
	var buf bytes.Buffer
	must(t, report.WriteTableWith(&buf, rep, o))
	return buf.String()
}

// longestLine is the widest line of s in runes (every character the text
// report writes is one terminal cell wide: "─", "≤", "µ", "…").
func longestLine(s string) (int, string) {
	n, which := 0, ""
	for l := range strings.Lines(s) {
		l = strings.TrimSuffix(l, "\n")
		if w := utf8.RuneCountInString(l); w > n {
			n, which = w, l
		}
	}
	return n, which
}

// TestTableFitsWidth: at COLUMNS=80 and 120 the text report of every
// previous-release run, with and without details, has no line wider than
// the terminal, where before the main table alone was ~200 columns and
// reasons 600. The fitted output is pinned by testdata/golden/
// <fixture>.table-<width>.golden (go test -update rewrites them).
func TestTableFitsWidth(t *testing.T) {
	for _, fx := range fitFixtures {
		for _, width := range []int{80, 120} {
			for _, details := range []bool{false, true} {
				rep, _ := judgeFixture(t, fx, false)
				got := renderFit(t, rep, report.TableOptions{Width: width, Details: details, DetailsHint: "(details: --details)"})
				if n, line := longestLine(got); n > width {
					t.Errorf("%s at %d columns (details %v): a line of %d columns:\n%s", fx, width, details, n, line)
				}
				if details {
					continue
				}
				path := filepath.Join("testdata", "golden", fx+".table-"+strconv.Itoa(width)+".golden")
				if *update {
					must(t, os.WriteFile(path, []byte(got), 0o644))
					continue
				}
				want, err := os.ReadFile(path)
				must(t, err)
				if got != string(want) {
					t.Errorf("%s differs (go test ./analyze -run TestTableFitsWidth -update rewrites it):\n%s", path, firstDiff(got, string(want)))
				}
			}
		}
	}
	// The synthetic shared-bucket run (testdata/golden/flows.*.golden):
	// its flows, keys and starved lines fit too.
	e, _ := flowsEv(t, false)
	flows := run(t, e.write())
	for _, width := range []int{80, 120} {
		got := renderFit(t, flows, report.TableOptions{Width: width, Details: true})
		if !strings.Contains(got, "\nFlows:\n") || !strings.Contains(got, "starved") {
			t.Errorf("flows at %d columns: no flows table or starved line:\n%s", width, got)
		}
		if n, line := longestLine(got); n > width {
			t.Errorf("flows at %d columns: a line of %d columns:\n%s", width, n, line)
		}
	}
	// The report keeps its width bound when the terminal is narrower
	// than MinWidth or wider than MaxWidth.
	rep, _ := judgeFixture(t, "manual", false)
	for _, cols := range []int{0, 40, 300} {
		got := renderFit(t, rep, report.TableOptions{Width: cols})
		if n, line := longestLine(got); n > report.FitWidth(cols) {
			t.Errorf("COLUMNS=%d: a line of %d columns (bound %d): %s", cols, n, report.FitWidth(cols), line)
		}
	}
}

// TestTableVerdictFirst: the scenario table comes first, the reasons of
// every scenario that did not pass right under it (before any other
// table), and the detail sections only with Details; the hint stands in
// for them.
func TestTableVerdictFirst(t *testing.T) {
	rep, _ := judgeFixture(t, "manual", false)
	got := renderFit(t, rep, report.TableOptions{Width: 80, DetailsHint: "HINT"})
	lines := strings.Split(got, "\n")
	if !strings.HasPrefix(lines[0], "Scenario") {
		t.Fatalf("first line %q, want the scenario table's header", lines[0])
	}
	firstTitle := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") && !isReasonHead(rep, l)
	})
	if firstTitle < 0 {
		t.Fatal("no table after the reasons (manual has fault windows)")
	}
	for _, s := range rep.Scenarios {
		head := slices.Index(lines, s.Name+" "+s.Status+":")
		switch {
		case s.Status == evidence.Pass && head >= 0:
			t.Errorf("reasons of passing %q: line %d", s.Name, head)
		case s.Status != evidence.Pass && (head < 0 || head > firstTitle):
			t.Errorf("reasons of %s %q at line %d, want before line %d (%q)", s.Status, s.Name, head, firstTitle, lines[firstTitle])
		}
	}
	for _, title := range []string{"Latency (client side, by class):", "Backend arrivals", "certainly admitted", ": harness: "} {
		if strings.Contains(got, title) {
			t.Errorf("without details: %q is there", title)
		}
		if with := renderFit(t, rep, report.TableOptions{Width: 80, Details: true}); !strings.Contains(with, title) {
			t.Errorf("with details: no %q", title)
		}
	}
	if !strings.Contains(got, "\nHINT\nVerdict: FAIL\n") {
		t.Errorf("no hint before the verdict line:\n%s", got[max(0, len(got)-300):])
	}
}

// isReasonHead reports whether l is "<scenario> <status>:" of rep.
func isReasonHead(rep *report.Report, l string) bool {
	for _, s := range rep.Scenarios {
		if l == s.Name+" "+s.Status+":" {
			return true
		}
	}
	return false
}

// TestTableWideDetailsKeepsBefore: WriteTable (wide, with details) still
// writes every line of the text report as it was before the report was
// fitted to terminals (testdata/golden/before-fit/, the old goldens):
// every table row, limiter line and reason, only in another order.
func TestTableWideDetailsKeepsBefore(t *testing.T) {
	for _, fx := range []string{"e06", "manual"} {
		rep, _ := judgeFixture(t, fx, false)
		got := renderFit(t, rep, report.TableOptions{Wide: true, Details: true})
		if wrapped := renderFit(t, rep, report.TableOptions{Wide: true, Details: true, Width: 80}); wrapped != got {
			t.Errorf("%s: Wide depends on Width", fx)
		}
		before, err := os.ReadFile(filepath.Join("testdata", "golden", "before-fit", fx+".table.txt"))
		must(t, err)
		have := map[string]bool{}
		for l := range strings.Lines(got) {
			have[l] = true
		}
		for l := range strings.Lines(string(before)) {
			if !have[l] {
				t.Errorf("%s: line of before missing from --wide --details:\n%s", fx, l)
			}
		}
	}
}
