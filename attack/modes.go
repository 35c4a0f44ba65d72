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
// connection for their first ID (worker k sends ID k first) and block
// reading its response; then the barrier releases: GOMAXPROCS sender
// goroutines write all these first requests back to back (no goroutine
// switch between two sends, and responses are handled only once the Ps are
// free), and the workers go on to take the remaining IDs in order until
// none are left (closed loop). A worker whose connection could not be
// warmed sends its first request itself after the release. It returns the
// release instant.
func (e *engine) runUnpaced(ctx context.Context, sum *Summary) time.Time {
	n := len(e.p.opts.IDs)
	workers := e.p.workers
	e.next.Store(int64(workers))
	e.burstMin.Store(math.MaxInt64)
	var ready, done sync.WaitGroup
	ready.Add(workers)
	done.Add(workers)
	release := make(chan struct{})
	var proceed bool                 // written before close(release), read after it
	warm := make([]*worker, workers) // workers with a warm connection, by first ID
	warmStart := time.Now()
	for k := 0; k < workers; k++ {
		w := e.newWorker()
		go func() {
			defer done.Done()
			w.build(k)
			tg := e.targets[e.p.assign[k]]
			c := tg.warm(e.abortCtx)
			if c == nil {
				ready.Done()
				<-release
				if proceed {
					w.do(k, 0, nil, true)
				}
			} else {
				e.warm.Add(1)
				w.burst = &attempt{i: k, inBurst: true, c: c}
				w.sentCh = make(chan struct{})
				w.cur.Store(c)
				warm[k] = w
				ready.Done()
				resp, err := readResponse(c.br, tg.req) // until the response, or woken
				<-w.sentCh
				if !proceed {
					c.close()
					w.cur.Store(nil)
					return
				}
				a := w.burst
				w.burst = nil
				if a.werr != nil {
					a.err, a.notSent = a.werr, a.wn == 0
				} else {
					a.resp, a.err = resp, err
				}
				w.finish(a)
			}
			if !proceed {
				return
			}
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
	if proceed && e.p.opts.OnStart != nil {
		e.p.opts.OnStart(at)
	}
	close(release)
	var list []*worker
	for _, w := range warm {
		if w != nil {
			list = append(list, w)
		}
	}
	senders := max(1, min(runtime.GOMAXPROCS(0), len(list)))
	var sending sync.WaitGroup
	for s := 1; s < senders; s++ {
		sending.Add(1)
		go func() {
			defer sending.Done()
			e.sendBurst(list[s*len(list)/senders:(s+1)*len(list)/senders], proceed)
		}()
	}
	e.sendBurst(list[:len(list)/senders], proceed)
	sending.Wait()
	done.Wait()
	sum.Burst = &Burst{Requests: workers, WarmNs: int64(warmed), ReleaseNs: e.released}
	return at
}

// sendBurst writes the first request of each worker in ws on its warm
// connection (or, when the attack does not proceed, wakes the worker).
func (e *engine) sendBurst(ws []*worker, proceed bool) {
	for _, w := range ws {
		a := w.burst
		if !proceed {
			a.c.SetDeadline(time.Unix(1, 0))
			close(w.sentCh)
			continue
		}
		a.start = time.Now()
		a.sent = a.start
		a.c.SetDeadline(a.sent.Add(e.timeout))
		a.wn, a.werr = a.c.Write(w.wbuf)
		if a.wn > 0 {
			a.writes = 1
		}
		if a.werr != nil {
			a.c.SetDeadline(time.Unix(1, 0)) // wake the reader
		}
		close(w.sentCh)
	}
}

// sizingSample is how many latencies size a paced attack's pool: the bound
// is set once from their mean, never from later latencies, which an
// overloaded client inflates itself (more workers would then mean more
// connections and more overload: vegeta's collapse at 20,000/s).
const sizingSample = 200

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
	// Initial pool: workers for about one millisecond of requests, and warm
	// connections for the whole bound, opened in parallel before the start,
	// so that catching up after a stall needs no dial.
	initial := min(bound, max(2, int(math.Ceil(p.config.RatePerSec/1000))))
	var warming sync.WaitGroup
	for k := 0; k < bound; k++ {
		warming.Add(1)
		go func() {
			defer warming.Done()
			tg := e.targets[p.assign[k%n]]
			if c := tg.warm(e.abortCtx); c != nil {
				e.warm.Add(1)
				tg.put(c, time.Now())
			}
		}()
	}
	warming.Wait()
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
	var sizedBy time.Duration // mean of the first sizingSample latencies, once known
	sum.Pacing = &Pacing{}
	defer func() {
		sum.Pacing.WorkersPeak, sum.Pacing.WorkersBound, sum.Pacing.SizingLatencyNs = peak, bound, int64(sizedBy)
		sum.Pacing.WarmConnections = int(e.warm.Load())
	}()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	began := time.Now()
	if ctx.Err() == nil && p.opts.OnStart != nil {
		p.opts.OnStart(began)
	}
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
		if !fixed && sizedBy == 0 && e.sampleN.Load() >= sizingSample {
			sizedBy = time.Duration(e.sampleSum.Load() / sizingSample)
			bound = max(bound, rateBound(p.config.RatePerSec, sizedBy, p.maxWork))
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
