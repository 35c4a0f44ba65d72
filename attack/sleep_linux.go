//go:build linux

package attack

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// preciseAvailable reports whether sleeper may sleep in clock_nanosleep(2)
// on a locked thread: with one P, that thread's system calls would hold
// the only P the workers have.
func preciseAvailable() bool { return runtime.GOMAXPROCS(0) >= 2 }

// lockPrecise locks the calling goroutine to its OS thread for good (the
// runtime ends the thread with the goroutine, so the changed slack dies
// with it) and sets that thread's timer slack to 1 ns (prctl(2)
// PR_SET_TIMERSLACK; the default is 50 µs).
func lockPrecise() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}

// nanosleep waits d in clock_nanosleep(2) (CLOCK_MONOTONIC, relative),
// resumed after a signal.
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
	}
}
