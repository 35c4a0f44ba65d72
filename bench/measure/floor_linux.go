//go:build linux

package main

import (
	"encoding/json"
	"flag"
	"os"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// sleepFloor is the pacing error of a dispatcher that costs nothing: one
// locked thread sleeps in clock_nanosleep(2) until each due time of a fixed
// rate (start+(k+1)/rate) and "sends" tick k when it wakes, catching up at
// once after a late wake-up, as rlbench's dispatcher does. Its p99 is what
// the machine's wake-ups alone allow; rlbench's own pacing error is
// compared with it in the same run.
func sleepFloor(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	rate := fs.Float64("rate", 20000, "ticks per second")
	dur := fs.Duration("duration", 5*time.Second, "how long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := int(*rate * dur.Seconds())
	iv := float64(time.Second) / *rate
	errs := make([]int64, n)
	start := time.Now().Add(time.Millisecond)
	for k := range n {
		due := start.Add(time.Duration(float64(k+1) * iv))
		if d := time.Until(due); d > 0 {
			ts := unix.NsecToTimespec(int64(d))
			for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
			}
		}
		errs[k] = int64(time.Since(due))
	}
	slices.Sort(errs)
	late := 0
	for _, e := range errs {
		if e > int64(time.Millisecond) {
			late++
		}
	}
	q := func(p int) int64 { return errs[(len(errs)*p+999)/1000-1] }
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"pacing_p50_ns": q(500), "pacing_p99_ns": q(990),
		"pacing_p999_ns": q(999), "over_1ms_share": float64(late) / float64(n)})
}
