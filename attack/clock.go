package attack

import (
	"os"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// clockInfo reads what is known of the client's clock besides the time:
// the kernel clock source and its NTP synchronisation state
// (evidence.AttackSummary.Clock). readClocks fills in the readings at the start.
func clockInfo() *evidence.AttackClock {
	c := &evidence.AttackClock{}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		c.Source = strings.TrimSpace(string(b))
	}
	ntpState(c)
	return c
}

// readClocks returns the wall clock and, where the OS has one, the
// monotonic clock (CLOCK_MONOTONIC, 0 elsewhere), read back to back, ns.
func readClocks() (wall, mono int64) {
	mono = monotonicNs()
	return time.Now().UnixNano(), mono
}
