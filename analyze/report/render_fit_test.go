package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/rlbench/rlbench/evidence"
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

// TestSectionTablesFit80: the Keys table of examples/dimensions (long
// limiter, bucket and flow names, a limit and a model range) and the
// fault windows of examples/bursts/lab-cascade (an open fault on the
// backend) fit 80 columns; they were 101 and 81 wide, as nothing more
// could be left out once names were cut to their trunc. What was left
// out is named under the table, and bucket names cut at 120 columns
// still tell the keys apart (cut at the end they read the same).
func TestSectionTablesFit80(t *testing.T) {
	s := ScenarioReport{Name: "per-user buckets"}
	for _, f := range []string{"A", "B", "C", "D"} {
		s.Keys = append(s.Keys, KeyReport{Limiter: "local proxy-a", Bucket: "proxy-a|descriptor user=" + f, Flows: []string{"A", "B", "C", "D"},
			Sent: 1800, Admitted: 599, AdmittedPct: 33.3, ActiveNs: 6e9, AdmittedPerSec: 99.8, RatePerSec: 100, Burst: 100, Min: 149, Max: 599})
	}
	f := FaultWindow{Name: "fail backend 5xx", Target: "backend-1", BeginNs: 0, EndNs: 7e6, Open: true, Receipts: 30, ActsOn: []string{"backend-1"}}
	f.Inside.Sent, f.Inside.Passed, f.Inside.N[evidence.ClassOther5xx] = 30, 30, 3
	fault := ScenarioReport{Name: "failing endpoint cascade", FaultWindows: []FaultWindow{f}}
	rep := &Report{Scenarios: []ScenarioReport{s, fault}}
	keys := flowTables(rep)[1]
	for _, c := range []struct {
		table  *textTable
		hidden string
	}{{keys, "Flows"}, {faultTable(rep), "Acts on"}} {
		for _, width := range []int{80, 120} {
			var buf bytes.Buffer
			if err := c.table.write(&buf, TableOptions{Width: width}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for l := range strings.Lines(out) {
				if n := utf8.RuneCountInString(strings.TrimSuffix(l, "\n")); n > width {
					t.Errorf("%s at %d columns: a line of %d:\n%s", c.table.title, width, n, out)
				}
			}
			if width == 80 && !strings.Contains(out, "hidden at 80 columns: "+c.hidden) {
				t.Errorf("%s at 80 columns does not name %s as hidden:\n%s", c.table.title, c.hidden, out)
			}
			// Rows that differ read differently however their names are cut.
			lines := strings.Split(strings.TrimSpace(out), "\n")
			rows := map[string]bool{}
			for _, l := range lines {
				if strings.HasPrefix(l, s.Name[:5]) {
					rows[l] = true
				}
			}
			if c.table == keys && len(rows) != len(s.Keys) {
				t.Errorf("Keys at %d columns: %d different rows for %d keys:\n%s", width, len(rows), len(s.Keys), out)
			}
		}
	}
}

// TestCutKeepsNamesApart: names that cut at the end would read the same
// ("Redis stopp…" twice in examples/real-rls at 80 columns) are cut in
// the middle and stay apart; the others are cut at the end as before;
// every cut cell is at most width cells.
func TestCutKeepsNamesApart(t *testing.T) {
	names := []string{"Redis stopped, deny", "Redis stopped, allow", "two local buckets", "shared RLS", "日本語の名前で止めた, deny", "日本語の名前で止めた, allow"}
	rows := make([][]string, len(names))
	for i, n := range names {
		rows[i] = []string{n}
	}
	for _, width := range []int{8, 12, 16} {
		c := cutFor(rows, 0, width)
		got := map[string]string{}
		for _, n := range names {
			g := c(n, width)
			if w := twwidth.Width(g); w > width {
				t.Errorf("%q cut to %d: %q is %d wide", n, width, g, w)
			}
			if o, ok := got[g]; ok {
				t.Errorf("at %d cells %q and %q both read %q", width, o, n, g)
			}
			got[g] = n
		}
		if g := c("two local buckets", width); g != cut("two local buckets", width) {
			t.Errorf("a name no other collides with is cut in the middle at %d: %q", width, g)
		}
	}
	// Where the middle does not tell them apart either ("share…, C, D"
	// for "shared with B, C, D" and "shared with A, C, D"), the end.
	shared := [][]string{{"shared with B, C, D"}, {"shared with A, C, D"}}
	if g := cutFor(shared, 0, 12)(shared[0][0], 12); g != "shared with…" {
		t.Errorf("cut %q", g)
	}
	if g := cutMiddle("Redis stopped, deny", 12); g != "Redis…, deny" {
		t.Errorf("cutMiddle: %q", g)
	}
}

// TestWrapTextLongWord: a word far longer than any line (a hand-made
// request ID of megabytes, mixed with wide and combining runes) is split
// into lines of at most the width that keep every character, and
// wordWidth measures words that fit exactly as the whole-string width.
func TestWrapTextLongWord(t *testing.T) {
	word := strings.Repeat("ab界e\u0301,", 50_000) // 300,000 runes, wide and zero-width ones among them
	for _, width := range []int{10, 80} {
		lines := wrapText("got ("+word+")", "  - ", width)
		for i, l := range lines {
			if n := twwidth.Width(l); n > width {
				t.Fatalf("width %d: line %d is %d cells", width, i, n)
			}
		}
		if joined := strings.Join(strings.Fields(strings.Join(lines, "")), ""); joined != "-got("+word+")" {
			t.Fatalf("width %d: text changed (%d bytes, want %d)", width, len(joined), len("-got("+word+")"))
		}
	}
	for _, w := range []string{"", "abc", "界界", "e\u0301e\u0301", strings.Repeat("x", 400)} {
		if got, want := wordWidth(w, 80), twwidth.Width(w); got != want && !(want > 80 && got > 80) {
			t.Errorf("wordWidth(%q) = %d, want %d", w, got, want)
		}
	}
}
