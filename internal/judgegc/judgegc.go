// Package judgegc is the garbage collector's policy while rlbench loads and
// judges evidence (analyze, simulate, bench/heapprof): one owner for the
// targets and the live-heap threshold between them.
package judgegc

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/rlbench/rlbench/internal/procs"
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
// for 15 MB less. 5 % then took about 910 -> 870 MB peak RSS at 10 M for
// a few % more CPU time (the heap is mostly pointer-free arrays, cheap to
// mark); the 1 M case stays below BigEvidenceBytes, at Percent.
const BigPercent = 5

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

// Serial runs the process on one P while evidence is judged, until the
// function it returns is called (procs.Serial, the one owner of rlbench's
// GOMAXPROCS changes). Call it after loading evidence, which reads its
// files in parallel, and before judging it, which is sequential.
func Serial() (restore func()) { return procs.Serial() }
