package attack

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// runUnpaced runs an attack without a Rate: p.workers workers each warm a
// connection for their first ID (worker k sends ID k first), wait at the
// barrier, are released together, and then take the remaining IDs in order
// until none are left (closed loop). It returns the release instant.
func (e *engine) runUnpaced(ctx context.Context, sum *Summary) time.Time {
	n := len(e.p.opts.IDs)
	workers := e.p.workers
	e.next.Store(int64(workers))
	e.burstMin.Store(math.MaxInt64)
	var ready, done sync.WaitGroup
	ready.Add(workers)
	done.Add(workers)
	release := make(chan struct{})
	var proceed bool // written before close(release), read after it
	warmStart := time.Now()
	for k := 0; k < workers; k++ {
		w := e.newWorker()
		go func() {
			defer done.Done()
			w.build(k)
			c := e.targets[e.p.assign[k]].warm(e.abortCtx)
			if c != nil {
				e.warm.Add(1)
			}
			ready.Done()
			<-release
			if !proceed {
				if c != nil {
					c.close()
				}
				return
			}
			w.do(k, 0, c, true)
			for !e.stop.Load() {
				i := int(e.next.Add(1) - 1)
				if i >= n {
					return
				}
				w.build(i)
				w.do(i, 0, nil, false)
			}
		}()
	}
	ready.Wait()
	warmed := time.Since(warmStart)
	// A collection now rather than during the burst: the barrier exists to
	// make the requests leave together.
	runtime.GC()
	proceed = ctx.Err() == nil
	at := time.Now()
	e.released = at.UnixNano()
	close(release)
	done.Wait()
	sum.Burst = &Burst{Requests: workers, WarmNs: int64(warmed), ReleaseNs: e.released}
	return at
}

// job is one ID of a paced attack with its intended send time (unix ns).
type job struct {
	i        int
	intended int64
}

// runPaced runs an attack with a Rate: the dispatcher hands ID k at its
// intended time (vegeta ConstantPacer: (k+1)*Per/Freq after the start) to
// an idle worker, starting a new one when none is idle and the bound allows
// (package doc, "Fixed rates"). It returns the schedule's start.
func (e *engine) runPaced(ctx context.Context, sum *Summary) time.Time {
	p := e.p
	n := len(p.opts.IDs)
	pacer := vegeta.ConstantPacer(p.opts.Rate)
	fixed := p.opts.Concurrency > 0
	bound := p.workers
	// Initial pool: about one millisecond of requests, warm.
	initial := min(bound, max(2, int(math.Ceil(p.config.RatePerSec/1000))))
	warmStart := time.Now()
	for k := 0; k < initial; k++ {
		tg := e.targets[p.assign[k%n]]
		if c := tg.warm(e.abortCtx); c != nil {
			e.warm.Add(1)
			tg.put(c, time.Now())
		}
	}
	jobs := make(chan job)
	var done sync.WaitGroup
	spawn := func(first *job) {
		w := e.newWorker()
		done.Add(1)
		go func() {
			defer done.Done()
			if first != nil {
				w.build(first.i)
				w.do(first.i, first.intended, nil, false)
			}
			for j := range jobs {
				w.build(j.i)
				w.do(j.i, j.intended, nil, false)
			}
		}()
	}
	for range initial {
		spawn(nil)
	}
	peak := initial
	sum.Pacing = &Pacing{}
	defer func() { sum.Pacing.WorkersPeak, sum.Pacing.WorkersBound = peak, bound }()
	_ = warmStart

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	began := time.Now()
dispatch:
	for k := 0; k < n; k++ {
		if e.stop.Load() {
			break
		}
		off, stop := pacer.Pace(0, uint64(k)) // from the start: (k+1)*interval
		if stop {
			break
		}
		at := began.Add(off)
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break dispatch
			}
		}
		j := job{i: k, intended: at.UnixNano()}
		select {
		case jobs <- j:
			continue
		default:
		}
		if !fixed {
			bound = max(bound, rateBound(p.config.RatePerSec, time.Duration(e.latEWMA.Load()), p.maxWork))
		}
		if peak < bound {
			peak++
			spawn(&j)
			continue
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(jobs)
	done.Wait()
	return began
}
