//go:build !linux

package attack

import "time"

// preciseAvailable: off Linux, the dispatcher waits on runtime timers only.
func preciseAvailable() bool { return false }

func nanosleep(d time.Duration) { time.Sleep(d) }
