package judgegc

import (
	"runtime/debug"
	"testing"
)

// TestTightenGC: judging sets the collector's target to Percent
// when GOGC is unset or empty, and leaves a GOGC of the environment alone.
func TestTightenGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "")
	tighten()
	if got := debug.SetGCPercent(100); got != Percent {
		t.Errorf("GOGC empty: GC percent %d after tighten, want %d", got, Percent)
	}

	t.Setenv("GOGC", "100")
	tighten()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 in the environment: GC percent %d after tighten, want it kept at 100", got)
	}
}

// TestGCPercentForEvidence: evidence of BigEvidenceBytes or more of live
// heap is judged at BigPercent, smaller evidence at Percent;
// FitToEvidence leaves a GOGC of the environment alone.
func TestGCPercentForEvidence(t *testing.T) {
	if got := PercentFor(BigEvidenceBytes - 1); got != Percent {
		t.Errorf("below the threshold: %d, want %d", got, Percent)
	}
	if got := PercentFor(BigEvidenceBytes); got != BigPercent {
		t.Errorf("at the threshold: %d, want %d", got, BigPercent)
	}
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "100")
	FitToEvidence()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 in the environment: GC percent %d after FitToEvidence, want it kept", got)
	}
	t.Setenv("GOGC", "")
	FitToEvidence() // this test's heap is far below the threshold
	if got := debug.SetGCPercent(100); got != Percent {
		t.Errorf("GOGC empty, a small heap: GC percent %d, want %d", got, Percent)
	}
}
