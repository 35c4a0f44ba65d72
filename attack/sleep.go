package attack

import (
	"context"
	"runtime"
	"time"
)

// preciseMax is the longest wait a precise sleeper leaves to
// clock_nanosleep: a longer one first sleeps on a runtime timer until
// preciseMax before the due time (a runtime timer may fire up to about a
// millisecond late, see sleeper).
const preciseMax = 3 * time.Millisecond

// sleeper waits for the due times of a paced schedule. The runtime's own
// timers are late on an idle process: it waits for its next timer in
// epoll_wait(2), whose timeout is in whole milliseconds
// (runtime/netpoll_epoll.go rounds any shorter delay up to 1 ms), so a
// 50 µs timer fires about 1 ms later, and a fixed rate of 20,000/s would
// leave in bunches. A precise sleeper (Linux, GOMAXPROCS >= 2) sleeps the
// last preciseMax in clock_nanosleep(2), which wakes within the timer slack
// (50 µs) and the scheduler's latency. Only the dispatcher of direct sends
// uses it: while it sleeps in a system call, its P does not run a goroutine
// it just made ready until the runtime takes the P back, so after a
// hand-off to a worker (yield) it first lets that worker run. (A thread of
// its own, locked with 1 ns of slack, was measured too: better against an
// idle target, worse on two cores shared with a busy one, as every lost P
// then costs two thread wake-ups.)
type sleeper struct {
	precise bool
	timer   *time.Timer
}

// newSleeper returns a sleeper; stop its timer with stop.
func newSleeper(precise bool) *sleeper {
	s := &sleeper{precise: precise && preciseAvailable(), timer: time.NewTimer(time.Hour)}
	s.timer.Stop()
	return s
}

func (s *sleeper) stop() { s.timer.Stop() }

// until waits until at; false when ctx ended first. yield: a goroutine was
// just made ready on this P (a hand-off), let it run before a system-call
// sleep.
func (s *sleeper) until(ctx context.Context, at time.Time, yield bool) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if !s.precise || d > preciseMax {
		coarse := d
		if s.precise {
			coarse -= preciseMax
		}
		s.timer.Reset(coarse)
		select {
		case <-s.timer.C:
		case <-ctx.Done():
			return false
		}
		if !s.precise {
			return true
		}
		yield = false // the timer wait let everything run
		if d = time.Until(at); d <= 0 {
			return ctx.Err() == nil
		}
	}
	if yield {
		runtime.Gosched()
		if d = time.Until(at); d <= 0 {
			return ctx.Err() == nil
		}
	}
	nanosleep(d)
	return ctx.Err() == nil
}
