package attack

import (
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestDurationIDs(t *testing.T) {
	for _, c := range []struct {
		r    vegeta.Rate
		d    time.Duration
		want int
	}{
		{vegeta.Rate{Freq: 100, Per: time.Second}, 5 * time.Second, 500},
		{vegeta.Rate{Freq: 1, Per: time.Second}, 1500 * time.Millisecond, 1},
		{vegeta.Rate{Freq: 60, Per: time.Minute}, time.Second, 1},
		{vegeta.Rate{Freq: 1, Per: time.Hour}, time.Second, 0},
		{vegeta.Rate{}, time.Second, 0},
		{vegeta.Rate{Freq: 5, Per: time.Second}, 0, 0},
		// The tester's case: 10^9/s for 10000h overflows int64 when multiplied naively.
		{vegeta.Rate{Freq: 1_000_000_000, Per: time.Second}, 10000 * time.Hour, MaxIDs + 1},
		{vegeta.Rate{Freq: 1<<63 - 1, Per: 1}, 1<<63 - 1, MaxIDs + 1},
		{vegeta.Rate{Freq: MaxIDs, Per: time.Second}, time.Second, MaxIDs},
		{vegeta.Rate{Freq: MaxIDs + 1, Per: time.Second}, time.Second, MaxIDs + 1},
	} {
		if got := DurationIDs(c.r, c.d); got != c.want {
			t.Errorf("DurationIDs(%v, %s) = %d, want %d", c.r, c.d, got, c.want)
		}
	}
}

func TestCheckIDs(t *testing.T) {
	if err := CheckIDs("--ids", MaxIDs); err != nil {
		t.Errorf("MaxIDs: %v", err)
	}
	err := CheckIDs("--ids", MaxIDs+1)
	if err == nil || !strings.Contains(err.Error(), "--ids: more than 10000000 ids, the most one attack sends") {
		t.Errorf("MaxIDs+1: %v", err)
	}
}

func TestIDsOverMaxIsNil(t *testing.T) {
	// Formerly a makeslice panic for 1<<63-1.
	if ids := IDs(1<<63-1, "r"); ids != nil {
		t.Errorf("IDs(maxint) has %d ids, want nil", len(ids))
	}
}

func TestRunRefusesMoreThanMaxIDs(t *testing.T) {
	// A flow list whose sum is over MaxIDs, without allocating MaxIDs strings:
	// the IDs share one backing string.
	half := make([]string, MaxIDs/2+1)
	for i := range half {
		half[i] = "x"
	}
	o := Options{Targets: []Target{{Name: "a", URL: "http://127.0.0.1:1"}},
		Flows: []Flow{{Name: "a", IDs: half}, {Name: "b", IDs: half}}}
	_, err := prepare(o)
	if err == nil || !strings.Contains(err.Error(), "more than 10000000") {
		t.Fatalf("prepare: %v", err)
	}
}
