package cli

import (
	"runtime/debug"
	"testing"
)

// TestTightenGC: judging sets the collector's target to judgeGCPercent
// when GOGC is unset or empty, and leaves a GOGC of the environment alone.
func TestTightenGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "")
	tightenGC()
	if got := debug.SetGCPercent(100); got != judgeGCPercent {
		t.Errorf("GOGC empty: GC percent %d after tightenGC, want %d", got, judgeGCPercent)
	}

	t.Setenv("GOGC", "100")
	tightenGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 in the environment: GC percent %d after tightenGC, want it kept at 100", got)
	}
}

// TestGCPercentForEvidence: evidence of bigEvidenceBytes or more of live
// heap is judged at bigJudgeGCPercent, smaller evidence at judgeGCPercent;
// fitGCToEvidence leaves a GOGC of the environment alone.
func TestGCPercentForEvidence(t *testing.T) {
	if got := gcPercentFor(bigEvidenceBytes - 1); got != judgeGCPercent {
		t.Errorf("below the threshold: %d, want %d", got, judgeGCPercent)
	}
	if got := gcPercentFor(bigEvidenceBytes); got != bigJudgeGCPercent {
		t.Errorf("at the threshold: %d, want %d", got, bigJudgeGCPercent)
	}
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "100")
	fitGCToEvidence()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 in the environment: GC percent %d after fitGCToEvidence, want it kept", got)
	}
	t.Setenv("GOGC", "")
	fitGCToEvidence() // this test's heap is far below the threshold
	if got := debug.SetGCPercent(100); got != judgeGCPercent {
		t.Errorf("GOGC empty, a small heap: GC percent %d, want %d", got, judgeGCPercent)
	}
}
