package judgegc

import (
	"runtime"
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

// TestSerial: Serial runs the process on one P until the last of its
// callers restores, then on as many as before (each restore counts once);
// a GOMAXPROCS of the environment is left alone.
func TestSerial(t *testing.T) {
	prev := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })

	t.Setenv("GOMAXPROCS", "")
	a := Serial()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d under Serial, want 1", got)
	}
	b := Serial()
	a()
	a() // a second call of one restore counts once
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d with one Serial caller left, want 1", got)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS %d after every restore, want 3 back", got)
	}

	t.Setenv("GOMAXPROCS", "3")
	c := Serial()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS=3 in the environment: %d under Serial, want it kept at 3", got)
	}
	c()
}
