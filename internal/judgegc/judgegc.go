// Package judgegc is the garbage collector's policy while rlbench loads and
// judges evidence (analyze, simulate, bench/heapprof): one owner for the
// targets and the live-heap threshold between them.
package judgegc

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Percent is the garbage collector's target (runtime/debug.SetGCPercent)
// while rlbench judges evidence (analyze, and simulate the evidence it
// simulates): the heap may grow 25 % over its live data between
// collections instead of Go's default 100 %. The evidence and the model
// checks' arrays are the live data, mostly without pointers, so a
// collection costs little, and a million requests peak 1.25x, not 2x,
// above them (bench/analyze-scale.sh).
const Percent = 25

// BigPercent is the target once the loaded evidence holds BigEvidenceBytes
// or more (FitToEvidence): at 10 M requests + 10 M receipts with a model,
// 10 % took the same CPU time as 25 % and 170 MB less peak RSS, while at
// 1 M it took about 10 % more CPU time (more collections of a small heap)
// for 15 MB less.
const BigPercent = 10

// BigEvidenceBytes is the live heap after loading (about 5 M requests and
// their receipts) from which BigPercent applies.
const BigEvidenceBytes = 128 << 20

// once sets Percent once per process (Tighten).
var once sync.Once

// Tighten sets Percent, once per process, unless GOGC in the environment
// chose a target already (an empty GOGC chooses none: Go's default). Call
// it before loading evidence.
func Tighten() { once.Do(tighten) }

func tighten() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
}

// FitToEvidence sets the target for judging the evidence just loaded
// (PercentFor the live heap the last collection found), unless GOGC in the
// environment chose one.
func FitToEvidence() {
	if os.Getenv("GOGC") != "" {
		return
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		debug.SetGCPercent(PercentFor(s[0].Value.Uint64()))
	}
}

// PercentFor is the collector's target for judging evidence that holds
// live bytes of heap.
func PercentFor(live uint64) int {
	if live >= BigEvidenceBytes {
		return BigPercent
	}
	return Percent
}

// serial counts the callers of Serial whose restore has not run yet, and
// procs is GOMAXPROCS from before the first of them.
var (
	serialMu sync.Mutex
	serial   int
	procs    int
)

// Serial runs the process on one P (runtime.GOMAXPROCS(1)) until the
// function it returns is called, unless GOMAXPROCS in the environment chose
// a value. Call it after loading evidence (which reads its files in
// parallel) and before judging it: the judging is sequential, and while it
// runs every other P would spend its idle time on the collector's idle
// mark workers (runtime/proc.go findRunnable: "If we're in the GC mark
// phase, can safely scan and blacken objects, and have work to do, run
// idle-time marking rather than give up the P"), CPU time the judging
// does not need. The previous value comes back when every caller's
// function has run (it is safe to call twice).
func Serial() (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	serialMu.Lock()
	defer serialMu.Unlock()
	if serial == 0 {
		procs = runtime.GOMAXPROCS(1)
	}
	serial++
	var once sync.Once
	return func() {
		once.Do(func() {
			serialMu.Lock()
			defer serialMu.Unlock()
			if serial--; serial == 0 {
				runtime.GOMAXPROCS(procs)
			}
		})
	}
}
