package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// perProxyBuckets gives e06's first scenario (two proxies) one local
// token bucket per proxy with the same model and figures, as `rlbench
// demo` declares them; with differ the second proxy's bound differs.
func perProxyBuckets(t *testing.T, differ bool) *Report {
	t.Helper()
	rep := goldenReport(t, "e06")
	s := &rep.Scenarios[0]
	if len(s.Targets) != 2 || s.Arrivals == nil || len(s.Arrivals.Expected) != 1 {
		t.Fatalf("e06's first scenario changed: %d targets, arrivals %v", len(s.Targets), s.Arrivals != nil)
	}
	e := s.Arrivals.Expected[0]
	a, b := e, e
	a.Limiter, a.Targets = "local proxy-a", []string{s.Targets[0].Target}
	b.Limiter, b.Targets = "local proxy-b", []string{s.Targets[1].Target}
	b.Windows = append([]ExpectedWindow(nil), e.Windows...)
	if differ {
		b.Windows[0].Bound++
	}
	s.Arrivals.Expected = []ExpectedPeaks{a, b}
	return rep
}

// modelRows are the rows of text's backend arrivals table that give a
// model's prediction.
func modelRows(text string) []string {
	var out []string
	for l := range strings.Lines(text) {
		if strings.Contains(l, "≤") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// TestArrivalsModelRowsDeduped: the same prediction for each proxy's own
// bucket is one row saying "all proxies" (the demo printed it once per
// proxy, identical); predictions that differ keep a row each.
func TestArrivalsModelRowsDeduped(t *testing.T) {
	for _, o := range []TableOptions{{Wide: true, Details: true}, {Width: 120, Details: true}} {
		var buf bytes.Buffer
		if err := WriteTableWith(&buf, perProxyBuckets(t, false), o); err != nil {
			t.Fatal(err)
		}
		rows := modelRows(buf.String())
		if len(rows) != 1+3 || !strings.Contains(rows[0], "model per proxy (all proxies): ") { // + e06's three other scenarios
			t.Errorf("wide %v: model rows %q, want one for both proxies", o.Wide, rows)
		}
		buf.Reset()
		if err := WriteTableWith(&buf, perProxyBuckets(t, true), o); err != nil {
			t.Fatal(err)
		}
		if rows := modelRows(buf.String()); len(rows) != 2+3 || strings.Contains(rows[0], "all proxies") {
			t.Errorf("wide %v, bounds differ: model rows %q, want one per proxy", o.Wide, rows)
		}
	}
	// Two of three proxies alike: they are named.
	rep := perProxyBuckets(t, false)
	s := &rep.Scenarios[0]
	s.Targets = append(s.Targets, TargetReport{Target: "proxy-c"})
	got := dedupeExpected(s.Arrivals.Expected, s.Targets)
	if len(got) != 1 || !strings.HasPrefix(got[0].label, "model per proxy ("+s.Targets[0].Target+", "+s.Targets[1].Target+"): ") {
		t.Errorf("two of three proxies: %+v", got)
	}
}

// TestWrapText: wrapped lines are at most the width, continue under the
// first line's text, break a word longer than a line after a comma (a
// list of request IDs), and keep every character.
func TestWrapText(t *testing.T) {
	ids := strings.Repeat("20261201T091558Z-1-s2r1-attack-01,", 12)
	text := "inconclusive: requests without access log entry: want 0, got 15 (" + ids + "x); 15 entries join no request"
	for _, width := range []int{20, 40, 80} {
		lines := wrapText(text, "  - ", width)
		for i, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: line %d has %d: %q", width, i, n, l)
			}
			if i > 0 && !strings.HasPrefix(l, "    ") {
				t.Errorf("width %d: continuation %q not indented", width, l)
			}
		}
		joined := strings.Join(strings.Fields(strings.Join(lines, "")), "")
		if want := strings.Join(strings.Fields("  - "+text), ""); joined != want {
			t.Errorf("width %d: text changed:\n%s\nwant\n%s", width, joined, want)
		}
		if width >= 40 {
			for _, l := range lines[1 : len(lines)-1] {
				f := strings.Fields(l)
				if last := f[len(f)-1]; strings.Contains(last, "attack-") && !strings.HasSuffix(last, ",") && !strings.Contains(last, ")") {
					t.Errorf("width %d: ID list broken inside an ID: %q", width, l)
				}
			}
		}
	}
	if got := wrapText("", "x", 10); len(got) != 1 || got[0] != "x" {
		t.Errorf("empty text: %q", got)
	}
}

// TestFitWidth: unknown width is the default, narrower or wider terminals
// are held to MinWidth..MaxWidth.
func TestFitWidth(t *testing.T) {
	for cols, want := range map[int]int{0: DefaultWidth, -1: DefaultWidth, 40: MinWidth, 80: 80, 97: 97, 120: 120, 300: MaxWidth} {
		if got := FitWidth(cols); got != want {
			t.Errorf("FitWidth(%d) = %d, want %d", cols, got, want)
		}
	}
}
