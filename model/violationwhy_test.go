package model

import (
	"fmt"
	"testing"
	"time"
)

// TestViolationsNameTheirBucket: the sweep keeps the deciding bucket only
// for the events whose outcome contradicts their verdict; every over- and
// under-admission still names its bucket (the event's key) and why.
func TestViolationsNameTheirBucket(t *testing.T) {
	m := MustNew(Spec{Kind: KindTokenBucket, Capacity: 5, RatePerSec: 10})
	var events []tEvent
	for k := 0; k < 2; k++ {
		key := fmt.Sprintf("k%d", k)
		for i := 0; i < 40; i++ {
			at := t0 + int64(i)*int64(time.Millisecond) + int64(k)
			// a burst of 40 in 40 ms at a bucket of 5: the first 5 must
			// be admitted, the last ones must be rejected; observe the
			// opposite at both ends
			o := Admitted
			if i < 2 {
				o = Rejected
			}
			events = append(events, tEvent{ID: fmt.Sprintf("%s-%d", key, i), Lo: at, Hi: at, Key: key, Outcome: o})
		}
	}
	res, err := Check(m, mk(events), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Over) == 0 || len(res.Under) != 4 {
		t.Fatalf("want over-admissions and 4 under-admissions, got %d over, %d under", len(res.Over), len(res.Under))
	}
	for _, v := range append(res.Over, res.Under...) {
		if want := events[v.Index].Key; v.Bucket != want || v.Why == "" || v.ID != events[v.Index].ID {
			t.Errorf("violation %+v: want bucket %q and a why", v, want)
		}
	}
}
