// Package procs is the one owner of rlbench's changes to GOMAXPROCS: the
// event loops hold one P more than they count (Spare), the judging of
// evidence runs on one P (Serial). Each returns a restore function; the
// holds are counted, so overlapping holds (tests running attacks and
// analyses side by side, several flows' loops) compose, and GOMAXPROCS
// comes back to its value from before the first hold when the last ends.
// A GOMAXPROCS in the environment is the user's choice: nothing is changed
// then.
//
// Setting GOMAXPROCS ends the runtime's own updates of it from the CPU
// limit (runtime.SetDefaultGOMAXPROCS, Go 1.25) for the rest of the
// process; the restore sets the value it had, not the default.
package procs

import (
	"os"
	"runtime"
	"sync"
)

var (
	mu sync.Mutex
	// base is GOMAXPROCS before the first of the holds in force.
	base int
	// serial and spare count the holds of each kind in force.
	serial, spare int
)

// apply sets GOMAXPROCS for the holds in force: 1 while a Serial hold is,
// else base+1 while a Spare hold is, else base. Called with mu held.
func apply() {
	n := base
	switch {
	case serial > 0:
		n = 1
	case spare > 0:
		n = base + 1
	}
	if runtime.GOMAXPROCS(0) != n {
		runtime.GOMAXPROCS(n)
	}
}

// hold counts one hold of *count and returns its restore function (safe
// to call more than once; it counts once) and base, GOMAXPROCS before the
// holds in force.
func hold(count *int) (restore func(), before int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}, runtime.GOMAXPROCS(0)
	}
	mu.Lock()
	defer mu.Unlock()
	if serial == 0 && spare == 0 {
		base = runtime.GOMAXPROCS(0)
	}
	*count++
	apply()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			*count--
			apply()
		})
	}, base
}

// Serial runs the process on one P until restore is called. Call it after
// loading evidence (which reads its files in parallel) and before judging
// it: the judging is sequential, and while it runs every other P would
// spend its idle time on the collector's idle mark workers
// (runtime/proc.go findRunnable: "If we're in the GC mark phase, can
// safely scan and blacken objects, and have work to do, run idle-time
// marking rather than give up the P"), CPU time the judging does not need.
func Serial() (restore func()) {
	restore, _ = hold(&serial)
	return restore
}

// Spare gives the process one P more than procs, the GOMAXPROCS to count
// event loops by (one loop per P), until restore is called. A loop waits
// in epoll_wait(2) as a system call that keeps its P; when every P is so
// held, the runtime's sysmon takes the P from a loop each time it has
// waited longer than sysmon's 20 µs tick (runtime/proc.go, retake: a P in
// a system call is retaken when no P is idle), and the loop's thread takes
// one back through the scheduler on its return. With a P idle, retake
// leaves the waiting loops alone.
func Spare() (restore func(), procs int) {
	return hold(&spare)
}
