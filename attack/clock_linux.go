//go:build linux

package attack

import (
	"golang.org/x/sys/unix"

	"github.com/rlbench/rlbench/evidence"
)

func monotonicNs() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// ntpState reads the kernel's NTP state with adjtimex(2) (a read-only
// call: Modes 0): TIME_ERROR means the clock is not synchronised;
// maxerror and esterror are in microseconds.
func ntpState(c *evidence.AttackClock) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return
	}
	synced := state != unix.TIME_ERROR
	c.Synchronized = &synced
	c.MaxErrorNs = int64(tx.Maxerror) * 1000
	c.EstErrorNs = int64(tx.Esterror) * 1000
}
