package model

import (
	"fmt"
	"math"
	"testing"
)

// TestWhyIsSprintf holds the token bucket's appended why to the fmt form
// it replaces, on levels that round either way at the third digit, signed
// zeros, the infinities and NaN, in tokens and in nginx's milli-requests.
func TestWhyIsSprintf(t *testing.T) {
	old := func(p *tbParams, v float64) string {
		if p.theta == 1000 {
			return fmt.Sprintf("%.3f requests of room", v/1000)
		}
		if v < 0 {
			v = 0
		}
		return fmt.Sprintf("%.3f tokens", v)
	}
	vals := []float64{0, math.Copysign(0, -1), 0.0005, 0.0015, 0.0025, -0.0005, 0.9996, 1 - 1e-9*400000, 0.7999999999999545,
		1e300, -1e300, 123456.7895, 5e-324, math.Inf(1), math.Inf(-1), math.NaN(), 999.9995, 1000, 2.5e-4}
	for _, p := range []*tbParams{
		{label: "token bucket 100 at 400000/s", theta: 1 - 1e-9*400000},
		{label: "nginx zone one", theta: 1000},
	} {
		tp := &tbPrim{p: p}
		for _, v := range vals {
			for _, reject := range []bool{true, false} {
				word := "at least"
				if reject {
					word = "at most"
				}
				want := fmt.Sprintf("%s: %s %s when it arrived, %s needed", p.label, word, old(p, v), old(p, p.theta))
				if got := tp.why(reject, v); got != want {
					t.Errorf("why(%v, %v) = %q, want %q", reject, v, got, want)
				}
			}
			if got, want := p.fmtLevel(v), old(p, v); got != want {
				t.Errorf("fmtLevel(%v) = %q, want %q", v, got, want)
			}
		}
	}
}
