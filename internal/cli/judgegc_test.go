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
