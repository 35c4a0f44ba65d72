package evidence

import (
	"strings"
	"testing"
	"time"

	json "github.com/goccy/go-json"
)

// TestParseThresholds: the k6-style forms that parse, to what, and the
// errors of those that do not, each quoting the input.
func TestParseThresholds(t *testing.T) {
	for s, want := range map[string]LatencyBound{
		"<= 50ms": {OpLessEq, 50 * time.Millisecond}, "<1s": {OpLess, time.Second}, " >=  2ms ": {OpGreaterEq, 2 * time.Millisecond},
		"> 0s": {OpGreater, 0}, "<=1.5ms": {OpLessEq, 1500 * time.Microsecond},
	} {
		got, err := ParseLatencyBound(s)
		if err != nil || got != want {
			t.Errorf("ParseLatencyBound(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for s, want := range map[string]RatioBound{
		"< 0.1%": {OpLess, 0.001, true}, "<=0.001": {OpLessEq, 0.001, false}, ">= 50%": {OpGreaterEq, 0.5, true}, "<= 100%": {OpLessEq, 1, true},
	} {
		got, err := ParseRatioBound(s)
		if err != nil || got != want {
			t.Errorf("ParseRatioBound(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "50ms", "== 50ms", "<=", "<= -1ms", "<= 50", "<= fast", "=< 5ms", strings.Repeat("<", 70), "< 0s", "<0ms"} {
		if _, err := ParseLatencyBound(s); err == nil {
			t.Errorf("ParseLatencyBound(%q) accepted", s)
		}
	}
	for _, s := range []string{"", "0.1%", "< 101%", "< -1%", "< 1.5", "< NaN", "< Inf", "< 0x1p-3", "< %", "< 1_0%", "> 100%", "> 1", "< 0%", "< 0"} {
		if _, err := ParseRatioBound(s); err == nil {
			t.Errorf("ParseRatioBound(%q) accepted", s)
		}
	}
	var b RatioBound
	if err := json.Unmarshal([]byte(`0.1`), &b); err == nil || !strings.Contains(err.Error(), "want a string") {
		t.Errorf("a bare number: %v", err)
	}
}

// TestThresholdHolds: the operators compare as written, and CannotFail
// is exactly the bounds no value breaks.
func TestThresholdHolds(t *testing.T) {
	b, _ := ParseLatencyBound("<= 50ms")
	if !b.Holds(50*time.Millisecond) || b.Holds(50*time.Millisecond+1) || !b.Upper() || b.CannotFail() {
		t.Errorf("<= 50ms: %+v", b)
	}
	b, _ = ParseLatencyBound("> 1ms")
	if b.Holds(time.Millisecond) || !b.Holds(time.Millisecond+1) || b.Upper() {
		t.Errorf("> 1ms: %+v", b)
	}
	if b, _ := ParseLatencyBound(">= 0s"); !b.CannotFail() {
		t.Error(">= 0s can fail?")
	}
	r, _ := ParseRatioBound("< 0.1%")
	if !r.Holds(0.0009) || r.Holds(0.001) || r.CannotFail() {
		t.Errorf("< 0.1%%: %+v", r)
	}
	for _, s := range []string{"<= 100%", ">= 0", "<=1"} {
		if r, _ := ParseRatioBound(s); !r.CannotFail() {
			t.Errorf("%s can fail?", s)
		}
	}
}

// FuzzParseLatencyBound: no input panics; what parses prints back (String)
// to text that parses to the same bound, and round-trips through JSON;
// what fails names the input.
func FuzzParseLatencyBound(f *testing.F) {
	for _, s := range []string{"<= 50ms", "<1s", ">= 0s", "> 1h2m3.5s", "<= 1e3ms", "<=", "== 5ms", "<= -0s", "<= .5us"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseLatencyBound(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "threshold ") {
				t.Fatalf("error %q does not say which threshold", err)
			}
			return
		}
		if b.D < 0 || !slicesContains(ThresholdOps, b.Op) {
			t.Fatalf("%q parsed to %+v", s, b)
		}
		again, err := ParseLatencyBound(b.String())
		if err != nil || again != b {
			t.Fatalf("%q -> %q -> %+v, %v", s, b.String(), again, err)
		}
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var back LatencyBound
		if err := json.Unmarshal(data, &back); err != nil || back != b {
			t.Fatalf("JSON %s -> %+v, %v", data, back, err)
		}
	})
}

// FuzzParseRatioBound: as FuzzParseLatencyBound, and the ratio lies in 0..1.
func FuzzParseRatioBound(f *testing.F) {
	for _, s := range []string{"< 0.1%", "<=0.001", ">= 50%", "<= 100%", "< 1e-3", "< 1e-3%", "<", "< 101%", "< .5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseRatioBound(s)
		if err != nil {
			return
		}
		if b.Ratio < 0 || b.Ratio > 1 || !slicesContains(ThresholdOps, b.Op) {
			t.Fatalf("%q parsed to %+v", s, b)
		}
		again, err := ParseRatioBound(b.String())
		if err != nil || again.Op != b.Op || again.Percent != b.Percent || !closeRatio(again.Ratio, b.Ratio) {
			t.Fatalf("%q -> %q -> %+v, %v", s, b.String(), again, err)
		}
	})
}

// closeRatio: a percentage printed and re-read may differ in the last
// bit (x/100*100).
func closeRatio(a, b float64) bool {
	d := a - b
	return d < 1e-15 && d > -1e-15
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
