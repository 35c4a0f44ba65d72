//go:build linux

package attack

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// preciseAvailable reports whether sleeper may sleep in clock_nanosleep(2):
// with one P, the sleeping thread would hold the only P the workers have
// until the runtime's monitor takes it back.
func preciseAvailable() bool { return runtime.GOMAXPROCS(0) >= 2 }

// nanosleep waits d in clock_nanosleep(2) (CLOCK_MONOTONIC, relative; the
// kernel may add the thread's timer slack, 50 µs by default), resumed
// after a signal.
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
	}
}
