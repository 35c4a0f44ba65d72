package rlsconfig

import (
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestUnitSecondsAgreeWithEvidence: evidence.UnitSeconds (what analyze's
// bounds and the lab use) gives the window of the pinned envoyproxy/ratelimit
// (UnitSeconds, utils.UnitToDivider) for every unit, in any case.
func TestUnitSecondsAgreeWithEvidence(t *testing.T) {
	for _, u := range []string{"SECOND", "minute", "Hour", "DAY", "WEEK", "MONTH", "YEAR", "UNKNOWN", "fortnight", ""} {
		if got, want := evidence.UnitSeconds(u), UnitSeconds(u); got != want {
			t.Errorf("evidence.UnitSeconds(%q) = %d, envoyproxy/ratelimit %d", u, got, want)
		}
	}
	if evidence.UnitSeconds("MONTH") != 2592000 {
		t.Errorf("MONTH = %d", evidence.UnitSeconds("MONTH"))
	}
}
