package events

import (
	"sync"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
)

// ProgressEvery is the interval of the progress events of a followed attack.
const ProgressEvery = time.Second

// Follow writes a progress event of p every ProgressEvery, from its own
// goroutine, until stop is called; stop writes the last one (Done once the
// attack has returned: its counts are exact) and returns once it is
// written. at names the attack (Scenario, Repeat, Step; its counts are
// ignored). On a nil Sink, Follow does nothing.
func (s *Sink) Follow(p *attack.Progress, at Progress) (stop func()) {
	if s == nil || p == nil {
		return func() {}
	}
	t := time.NewTicker(ProgressEvery)
	return s.follow(p, at, t.C, t.Stop)
}

// follow is Follow with the ticks from tick; halt stops them.
func (s *Sink) follow(p *attack.Progress, at Progress, tick <-chan time.Time, halt func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer halt()
		for {
			select {
			case <-tick:
				_ = s.Emit(Event{Type: TypeProgress, Progress: ProgressOf(p.Snapshot(), at)})
			case <-done:
				_ = s.Emit(Event{Type: TypeProgress, Progress: ProgressOf(p.Snapshot(), at)})
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// ProgressOf is the progress event of snapshot sn, for the attack at names.
func ProgressOf(sn attack.ProgressSnapshot, at Progress) *Progress {
	pr := &Progress{Scenario: at.Scenario, Repeat: at.Repeat, Step: at.Step, Started: sn.Started, Done: sn.Done,
		ElapsedSeconds: sn.Elapsed.Seconds(), Total: sn.Total, Recorded: sn.Recorded, Sent: sn.Sent, NotSent: sn.NotSent,
		InFlight: sn.InFlight, PerSec: sn.PerSec, Targets: []TargetProgress{}}
	if sn.PacingErrorNs.N > 0 {
		q := sn.PacingErrorNs
		pr.PacingErrorNs = &q
	}
	for _, tp := range sn.Targets {
		t := TargetProgress{Target: tp.Name, Sent: tp.Sent, NotSent: tp.NotSent, InFlight: tp.InFlight, PerSec: tp.PerSec, Classes: map[string]int{}}
		for c, n := range tp.Classes {
			if n > 0 {
				t.Classes[evidence.Class(c).String()] = n
			}
		}
		pr.Targets = append(pr.Targets, t)
	}
	return pr
}
