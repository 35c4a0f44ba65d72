package model

import (
	"fmt"
	"testing"
	"time"
)

// TestTimerBucketLowerBoundExact: Envoy up to 1.30 with its timer start
// known keeps integer tokens, so a fresh bucket of 5 offered 10 at once
// admits exactly 5: the lower bound is 5, not the rounding-tolerant 4 that
// a float bucket (1.31+) must allow, unless it keeps an exact token count
// (ExactLevel, the lab proxy's continuous bucket).
func TestTimerBucketLowerBoundExact(t *testing.T) {
	start := time.Unix(0, t0-int64(time.Second)).UTC().Format(time.RFC3339Nano)
	tpf := uint32(5)
	for _, c := range []struct {
		version, timerStart string
		exactLevel          bool
		min                 int
	}{{"1.30", start, false, 5}, {"1.31", "", false, 4}, {"1.34", "", true, 5}} {
		m := MustNew(Spec{Kind: KindEnvoyLocal, EnvoyVersion: c.version, MaxTokens: 5, TokensPerFill: &tpf,
			FillInterval: Duration(time.Hour), TimerStart: c.timerStart, ExactLevel: c.exactLevel})
		var evs []tEvent
		for i := 0; i < 10; i++ {
			o := Admitted
			if i >= 5 {
				o = Rejected
			}
			evs = append(evs, tEvent{ID: fmt.Sprint(i), Lo: t0, Hi: t0 + int64(time.Millisecond), Key: "p", Outcome: o})
		}
		res, err := Check(m, mk(evs), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total.Min != c.min || res.Total.Max != 5 || len(res.Over)+len(res.Under)+len(res.Windows) != 0 {
			t.Fatalf("%s: bounds %d..%d, findings %v %v %v", c.version, res.Total.Min, res.Total.Max, res.Over, res.Under, res.Windows)
		}
		// all ten rejected: below the lower bound
		for i := range evs {
			evs[i].Outcome = Rejected
		}
		if res, _ := Check(m, mk(evs), Options{}); len(res.Windows) == 0 {
			t.Fatalf("%s: a total block not found", c.version)
		}
	}
}
