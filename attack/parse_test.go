package attack

import (
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"": 0, "0": 0, "infinity": 0, "100/1s": 100, "5": 5, "10/100ms": 100, "60/m": 1, " 7/1s ": 7} {
		r, err := ParseRate(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		got := 0.0
		if r.Per > 0 {
			got = float64(r.Freq) / r.Per.Seconds()
		}
		if got != want {
			t.Errorf("%q = %v/s, want %v", in, got, want)
		}
	}
	for _, bad := range []string{"x", "-1/1s", "5/0s", "5/zz", "5/-1s", "1.5/1s", "/1s"} {
		if _, err := ParseRate(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: err %v, want an error naming the input", bad, err)
		}
	}
}

func TestFormatRateRoundTrips(t *testing.T) {
	for _, r := range []vegeta.Rate{{}, {Freq: 100, Per: time.Second}, {Freq: 3, Per: 250 * time.Millisecond}, {Freq: 1, Per: time.Hour}} {
		back, err := ParseRate(FormatRate(r))
		if err != nil || back != r {
			t.Errorf("%+v -> %q -> %+v, %v", r, FormatRate(r), back, err)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for _, c := range []struct{ in, name, value string }{
		{"X-Tenant: lab", "X-Tenant", "lab"},
		{"x-tenant:lab", "x-tenant", "lab"},
		{" Accept :\ttext/plain ", "Accept", "text/plain"},
		{"X-Empty:", "X-Empty", ""},
		{"X-Colon: a:b", "X-Colon", "a:b"},
		{"X-Tab: a\tb", "X-Tab", "a\tb"},
	} {
		n, v, err := ParseHeader(c.in)
		if err != nil || n != c.name || v != c.value {
			t.Errorf("%q = (%q, %q, %v), want (%q, %q)", c.in, n, v, err, c.name, c.value)
		}
	}
	for in, want := range map[string]string{
		"X-Tenant":          `want "Name: value"`,
		": lab":             "invalid header name",
		"X Tenant: lab":     "invalid header name",
		"X-Ténant: lab":     "invalid header name",
		"X-A: a\r\nX-B: b":  "control character",
		"X-A: a\n":          "control character",
		"X-A: a\x00b":       "control character",
		"X-A\r\nX-B: lab":   "invalid header name",
		"(comment): v":      "invalid header name",
		"X-Del: a\x7fb":     "control character",
		"X-Smuggle: \r\n\r": "control character",
	} {
		_, _, err := ParseHeader(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", in, err, want)
		}
	}
}

// FuzzParseRate: every accepted rate is positive (or the zero Rate) and
// survives FormatRate unchanged.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"", "0", "100/1s", "5", "60/m", "10/100ms", "-1/1s", "5/zz", "1/1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r != (vegeta.Rate{}) && (r.Freq <= 0 || r.Per <= 0) {
			t.Fatalf("%q accepted as %+v", s, r)
		}
		back, err := ParseRate(FormatRate(r))
		if err != nil || back != r {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, r, FormatRate(r), back, err)
		}
	})
}

// FuzzParseHeader: an accepted header has a valid name, no CR or LF
// anywhere, and parses back to itself.
func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"X-Tenant: lab", "a:b", ": x", "X: a\r\nY: b", "X:\t v \t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, v, err := ParseHeader(s)
		if err != nil {
			return
		}
		if n == "" || strings.ContainsAny(n+v, "\r\n\x00") || CheckHeader(n, v) != nil {
			t.Fatalf("%q accepted as (%q, %q)", s, n, v)
		}
		n2, v2, err := ParseHeader(n + ": " + v)
		if err != nil || n2 != n || v2 != v {
			t.Fatalf("%q -> (%q, %q) -> (%q, %q, %v)", s, n, v, n2, v2, err)
		}
	})
}
