// Package hostprobe measures rlbench's own host while a scenario runs, for
// harness.json (evidence.Harness): a goroutine that asks to wake every
// millisecond and records how late each wake-up came (the scheduling
// stalls rlbench's own parts felt, the host's and the Go runtime's), the
// steal time of /proc/stat and the load average of /proc/loadavg at the
// window's start and end. Off Linux, or without /proc, the /proc figures
// are -1 (unknown) and the wake-up probe still runs.
//
// The clock, the sleep and the /proc root are injectable (Options), so
// that tests drive the probe without the wall clock.
package hostprobe

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// DefaultInterval is the probe's wake-up interval when Options.Interval is 0.
const DefaultInterval = time.Millisecond

// DefaultProcRoot is the proc filesystem's mount point.
const DefaultProcRoot = "/proc"

// Options configure Start.
type Options struct {
	// Interval is the sleep the probe asks for between wake-ups; default
	// DefaultInterval.
	Interval time.Duration
	// Now is the clock; default time.Now (whose monotonic reading measures
	// the lateness; the recorded instants are its wall time, unix ns).
	Now func() time.Time
	// Sleep waits d or until ctx is done, returning ctx's error then;
	// default a timer. Tests inject one that moves their clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// ProcRoot is where /proc is mounted; default DefaultProcRoot. Tests
	// point it at a directory holding stat, loadavg and self/auxv.
	ProcRoot string
}

// Probe is a running measurement; Stop ends it.
type Probe struct {
	opts     Options
	cancel   context.CancelFunc
	done     chan struct{}
	start    time.Time
	steal0   stealTicks
	load0    float64
	rec      recorder
	stopOnce sync.Once
	result   evidence.Harness
}

// Start reads /proc's steal time and load average, then starts the wake-up
// probe; it runs until Stop or until ctx is done (the samples taken until
// then are kept).
func Start(ctx context.Context, o Options) *Probe {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = newTimerSleep().sleep
	}
	if o.ProcRoot == "" {
		o.ProcRoot = DefaultProcRoot
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Probe{opts: o, cancel: cancel, done: make(chan struct{})}
	p.steal0 = readSteal(o.ProcRoot)
	p.load0 = readLoad1(o.ProcRoot)
	p.start = o.Now()
	go p.run(ctx)
	return p
}

// run is the probe goroutine: sleep Interval, note how late the wake-up
// came, again, until ctx is done.
func (p *Probe) run(ctx context.Context) {
	defer close(p.done)
	iv := p.opts.Interval
	for {
		t0 := p.opts.Now()
		if p.opts.Sleep(ctx, iv) != nil {
			return
		}
		late := p.opts.Now().Sub(t0) - iv
		p.rec.add(t0.Add(iv).UnixNano(), max(int64(late), 0))
	}
}

// Stop ends the probe, reads /proc again and returns the measurement of the
// window from Start to now. Later calls return the same value.
func (p *Probe) Stop() evidence.Harness {
	p.stopOnce.Do(func() {
		p.cancel()
		<-p.done
		end := p.opts.Now()
		h := evidence.Harness{Schema: evidence.HarnessSchema, StartNs: p.start.UnixNano(), EndNs: end.UnixNano(), CPUs: runtime.NumCPU(),
			StealNs: stealNs(p.steal0, readSteal(p.opts.ProcRoot)), Load1Start: p.load0, Load1End: readLoad1(p.opts.ProcRoot),
			Probe: p.rec.result(p.opts.Interval)}
		p.result = h
	})
	return p.result
}

// timerSleep is the default Options.Sleep: one timer, reset for each wait.
type timerSleep struct{ t *time.Timer }

func newTimerSleep() *timerSleep { return &timerSleep{} }

func (s *timerSleep) sleep(ctx context.Context, d time.Duration) error {
	if s.t == nil {
		s.t = time.NewTimer(d)
	} else {
		s.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		s.t.Stop()
		return ctx.Err()
	case <-s.t.C:
		return nil
	}
}

// recorder accumulates the wake-ups: their count, the latest, a histogram
// for the 99th percentile and the HarnessMaxStalls latest stalls. Only the
// probe goroutine writes it; Stop reads it after that goroutine ended.
type recorder struct {
	n      int
	max    int64
	hist   histogram
	stalls stallHeap
}

func (r *recorder) add(at, late int64) {
	r.n++
	r.max = max(r.max, late)
	r.hist.add(late)
	if late > evidence.HarnessStallNs {
		r.stalls.offer(evidence.HarnessStall{AtNs: at, LateNs: late})
	}
}

func (r *recorder) result(iv time.Duration) evidence.HarnessProbe {
	stalls := append([]evidence.HarnessStall{}, r.stalls...)
	slices.SortFunc(stalls, func(a, b evidence.HarnessStall) int {
		return cmp.Or(cmp.Compare(a.AtNs, b.AtNs), cmp.Compare(a.LateNs, b.LateNs))
	})
	return evidence.HarnessProbe{IntervalNs: int64(iv), Samples: r.n, MaxLateNs: r.max, P99LateNs: min(r.hist.quantile(0.99), r.max),
		Stalls: stalls}
}
