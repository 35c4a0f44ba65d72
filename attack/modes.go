package attack

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// execute runs every flow: it warms all of them (unpaced flows: a
// connection per first request; paced flows: their initial pools), waits
// for Options.StartAt if set, and then starts all together: the barrier
// releases the unpaced flows' first requests and the paced flows'
// schedules begin at the same instant, which it returns.
func (e *engine) execute(ctx context.Context, sum *evidence.AttackSummary) time.Time {
	o := e.p.opts
	if !o.StartAt.IsZero() {
		sum.StartAt = &evidence.AttackStartAt{AtNs: o.StartAt.UnixNano(), At: o.StartAt.UTC().Format(time.RFC3339Nano),
			WarmAheadNs: int64(o.WarmAhead)}
		sleepCtx(ctx, time.Until(o.StartAt.Add(-o.WarmAhead)))
	}
	clock := clockInfo()
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	warmStart := time.Now()
	var burst []*worker
	var first [][]*worker
	for _, fr := range e.flows {
		fr.burstMin.Store(math.MaxInt64)
		if fr.f.paced {
			fr.warmPaced(&ready, &done)
		} else if ra := fr.evloopAddr(); ra != nil {
			fr.onLoops = true
			fr.startLoops(ra, &ready, &done, release)
		} else {
			first = append(first, fr.startUnpaced(&ready, &done, release))
		}
	}
	ready.Wait()
	e.warmNs = int64(time.Since(warmStart))
	for _, ws := range first {
		for _, w := range ws {
			if w != nil {
				burst = append(burst, w)
			}
		}
	}
	// A collection now rather than during the burst: the barrier exists to
	// make the requests leave together (and before the wait for StartAt,
	// so that it does not make the start late).
	runtime.GC()
	bs := &burstSend{ws: burst}
	senders := max(1, min(runtime.GOMAXPROCS(0), len(burst)))
	var sending sync.WaitGroup
	if !o.StartAt.IsZero() {
		sleepCtx(ctx, time.Until(o.StartAt.Add(-senderLead)))
	}
	e.peekWarm(burst)
	for s := 1; s < senders; s++ {
		sending.Add(1)
		go func() {
			defer sending.Done()
			bs.running.Add(1)
			for !bs.go_.Load() {
			}
			e.sendBurst(bs)
		}()
	}
	bs.await(ctx, senders-1, o.StartAt)
	e.proceed = ctx.Err() == nil
	clock.WallNs, clock.MonotonicNs = readClocks()
	at := time.Now()
	e.released = at.UnixNano()
	sum.Clock = clock
	if e.proceed && o.OnStart != nil && e.p.ids > 0 {
		o.OnStart(at)
	}
	if e.prog != nil && e.proceed {
		e.prog.start(at, e)
	}
	bs.go_.Store(true)
	close(release)
	for _, fr := range e.flows {
		if !fr.f.paced {
			continue
		}
		if !e.proceed {
			close(fr.jobs)
			fr.closeLots()
			continue
		}
		done.Add(1)
		go func() {
			defer done.Done()
			fr.dispatch(ctx, at, &done)
		}()
	}
	e.sendBurst(bs)
	sending.Wait()
	done.Wait()
	return at
}

// peekWarm marks stale the burst's warm connections that the server has
// already ended or written on, right before the release (the event loops':
// closed, evLoop.peekWarm): an HTTP/1.1
// server may answer a connection that sent no request in time with 408 and
// close it (RFC 9110 section 15.5.9; HAProxy does after its timeout
// http-request, which a long Options.WarmAhead can outlast). Their first
// requests go after the burst, each on a new connection (startUnpaced),
// instead of into a dead socket or onto an answer that is not theirs. A
// TLS connection is not peeked: a TLS 1.3 server's session tickets would
// look like data.
func (e *engine) peekWarm(ws []*worker) {
	if h := e.p.opts.testPeekWarm; h != nil {
		h()
	}
	for _, w := range ws {
		if c := w.burst.c; c.raw != nil && !c.isTLS && peekClosed(c.raw) {
			w.burst.stale = true
		}
	}
	for _, fr := range e.flows {
		if fr.peekLoops != nil {
			fr.peekLoops()
		}
	}
}

// senderLead is how long before Options.StartAt the burst's sender
// goroutines are started (they spin until the release, see burstSend).
const senderLead = 10 * time.Millisecond

// senderWait bounds the wait for the sender goroutines to run when there is
// no StartAt: a sender the OS schedules later than that still takes part,
// claiming the requests that are left when it runs.
const senderWait = 20 * time.Millisecond

// burstChunk is how many first requests a sender claims at a time.
const burstChunk = 16

// burstSend is the burst's first requests (the HTTP/1.1 workers with a warm
// connection, by first ID) shared by its sender goroutines. One sender per
// P: the other senders are started before the release and spin on go_
// (holding their Ps, so that neither the OS nor the Go scheduler has to
// wake them at the release, which took milliseconds on a loaded machine),
// and each claims burstChunk requests at a time from next until none are
// left, so a sender that runs slower (its thread shares a core with the
// server, say) does not leave the others idle at the end with its share
// unsent.
type burstSend struct {
	ws      []*worker
	next    atomic.Int64
	running atomic.Int32
	go_     atomic.Bool
}

// spinLast is how long before Options.StartAt the release stops sleeping
// and spins on the clock: a sleep's wake-up is late by the OS's scheduling
// latency, and a longer spin would take the CPU from other processes
// released at the same instant (attack --senders).
const spinLast = time.Millisecond

// await returns once n sender goroutines run (yielding while they do not),
// without startAt after senderWait at most; with startAt not before it:
// it sleeps until spinLast before, then spins. At once when ctx is done.
func (b *burstSend) await(ctx context.Context, n int, startAt time.Time) {
	limit := startAt
	if limit.IsZero() {
		limit = time.Now().Add(senderWait)
	}
	for int(b.running.Load()) < n && time.Now().Before(limit) && ctx.Err() == nil {
		runtime.Gosched()
	}
	if startAt.IsZero() {
		return
	}
	sleepCtx(ctx, time.Until(startAt)-spinLast)
	for time.Now().Before(startAt) && ctx.Err() == nil {
	}
}

// sleepCtx waits d, or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// startUnpaced starts an unpaced flow's workers: each warms a connection
// (HTTP/2: a stream slot on a warm connection) for its first ID (worker k
// sends ID k first) and, for HTTP/1.1, waits until it was sent (not
// parked on the connection, so that no early response wakes it onto a
// sender's P); after the release GOMAXPROCS sender goroutines write all
// these first requests back to back (burstSend: no goroutine switch between
// two sends; each in one raw write that keeps the sender's P, rawWrite;
// responses are read only once a sender's share is out), HTTP/2 workers send theirs
// themselves, and the workers go on to take the remaining IDs in order
// until none are left (closed loop). A worker whose connection could not be
// warmed sends its first request itself after the release. It returns the
// HTTP/1.1 workers with a warm connection, by first ID (nil for the
// others), complete once ready is done.
func (fr *flowRun) startUnpaced(ready, done *sync.WaitGroup, release chan struct{}) []*worker {
	e := fr.e
	n := len(fr.f.ids)
	workers, pipe := fr.f.workers, fr.f.pipe
	// Worker k's first IDs are k*pipe up to the next worker's (pipe 1: ID k).
	fr.burstN = min(workers*pipe, n)
	fr.next.Store(int64(fr.burstN))
	ready.Add(workers)
	done.Add(workers)
	warm := make([]*worker, workers)
	for k := 0; k < workers; k++ {
		w := fr.newWorker()
		w.keepOwn = true
		go func() {
			defer done.Done()
			defer w.dropOwn()
			tg := fr.tmpls[fr.f.assign[k]]
			if h := tg.pool.h2; h != nil {
				c, dialed, _ := h.acquire(e.abortCtx)
				if dialed {
					fr.warm.Add(1)
				}
				ready.Done()
				<-release
				if !e.proceed {
					if c != nil {
						h.release(c)
					}
					return
				}
				w.doH2(k, 0, c, true)
			} else {
				lo, hi := k*pipe, min(k*pipe+pipe, n)
				if pipe > 1 {
					w.buildPipe(lo, hi)
				} else {
					w.build(k)
				}
				c := tg.pool.warm(e.abortCtx)
				if c == nil {
					ready.Done()
					<-release
					if e.proceed && pipe > 1 {
						w.doPipe(lo, hi, true)
					} else if e.proceed {
						w.do(k, 0, nil, true)
					}
				} else {
					fr.warm.Add(1)
					w.burst = &attempt{i: k, inBurst: true, c: c}
					w.sentCh = make(chan struct{})
					w.cur.Store(c)
					warm[k] = w
					ready.Done()
					// Not parked on the connection until the request is out:
					// a reader the netpoller wakes for an early response
					// would take a sender's P in the middle of the burst.
					<-w.sentCh
					if !e.proceed {
						c.close()
						w.cur.Store(nil)
						return
					}
					a := w.burst
					w.burst = nil
					if a.stale {
						// The server ended or wrote on the connection before
						// the release (peekWarm): the first request goes now,
						// on a new one.
						c.close()
						w.cur.Store(nil)
						if pipe > 1 {
							w.doPipe(lo, hi, true)
						} else {
							w.do(k, 0, nil, true)
						}
					} else if pipe > 1 {
						w.readPipe(a, lo, hi, tg) // deadline set by sendBurst
					} else if a.werr != nil {
						a.err, a.notSent = a.werr, a.wn == 0
					} else {
						a.resp, a.err = readResponse(c.br, tg.req) // deadline set by sendBurst
					}
					if pipe == 1 && !a.stale {
						w.finish(a)
					}
				}
			}
			if !e.proceed {
				return
			}
			for !e.stopped() {
				if pipe > 1 {
					lo := int(fr.next.Add(int64(pipe)) - int64(pipe))
					if lo >= n {
						return
					}
					w.doPipe(lo, min(lo+pipe, n), false)
					continue
				}
				i := int(fr.next.Add(1) - 1)
				if i >= n {
					return
				}
				w.send(i, 0)
			}
		}()
	}
	return warm
}

// sendBurst is one sender of b: it claims burstChunk workers at a time and
// writes the first request of each on its warm connection, back to back
// with nothing else between two writes (each in one raw write, sendRaw),
// until none are left; then it sets the deadlines of the requests it wrote
// and wakes their workers. When the attack does not proceed it only wakes
// them. Requests the raw write did not take whole (a body longer than the
// socket takes at once; every request over TLS or off Linux) are written
// through their connections after that, in order (sendRest: each may wait
// for the server to read), each worker woken once its request is out. So
// every request of the sender's share has begun before any such wait, and a
// long body holds up neither the other requests' sends nor their responses.
func (e *engine) sendBurst(b *burstSend) {
	mine := make([]int, 0, len(b.ws)/burstChunk+1) // first index of each claimed chunk
	for {
		lo := int(b.next.Add(burstChunk)) - burstChunk
		if lo >= len(b.ws) {
			break
		}
		mine = append(mine, lo)
		if !e.proceed {
			continue
		}
		for _, w := range b.ws[lo:min(lo+burstChunk, len(b.ws))] {
			if a := w.burst; !a.stale {
				e.sendRaw(a, a.c, w.wbuf)
				a.start = a.sent
			}
		}
	}
	each := func(f func(w *worker)) {
		for _, lo := range mine {
			for _, w := range b.ws[lo:min(lo+burstChunk, len(b.ws))] {
				f(w)
			}
		}
	}
	// tell sets w's deadline and wakes it; from then on w.burst is the
	// worker's (it clears it), not to be read here.
	tell := func(w *worker) {
		a := w.burst
		if !e.proceed || a.werr != nil {
			a.c.SetDeadline(time.Unix(1, 0)) // fail the read at once
		} else {
			e.setDeadline(a, a.c)
		}
		close(w.sentCh)
	}
	if !e.proceed {
		each(tell)
		return
	}
	each(func(w *worker) { // after the burst's writes, not between them
		if !w.burst.stale {
			w.sending(w.burst)
		}
	})
	var left []*worker // raw writes that left bytes, nothing failed
	each(func(w *worker) {
		if a := w.burst; !a.stale && a.werr == nil && a.wn < len(w.wbuf) {
			left = append(left, w)
		} else {
			tell(w)
		}
	})
	for _, w := range left {
		a := w.burst
		e.sendRest(a, a.c, w.wbuf)
		a.start = a.sent
		tell(w)
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

// warmPaced opens a paced flow's warm connections for its whole initial
// bound in parallel (so that catching up after a stall needs no dial) and
// starts its initial workers: about one millisecond of requests. They wait
// for jobs from dispatch.
func (fr *flowRun) warmPaced(ready, done *sync.WaitGroup) {
	e := fr.e
	n := len(fr.f.ids)
	fr.bound = fr.f.workers
	fr.jobs = make(chan job)
	fr.exited = make(chan struct{}, 1)
	h2streams := map[*pool]int{}
	fr.direct = fr.directPools()
	direct := fr.direct
	if direct {
		for _, pl := range fr.pools {
			if pl != nil {
				pl.lot = &lot{ws: make(chan *worker, fr.bound)}
			}
		}
	}
	for k := 0; k < fr.bound; k++ {
		tg := fr.tmpls[fr.f.assign[k%n]]
		if tg.pool.h2 != nil {
			h2streams[tg.pool]++
			continue
		}
		ready.Add(1)
		go func() {
			defer ready.Done()
			if c := tg.pool.warm(e.abortCtx); c != nil {
				fr.warm.Add(1)
				if direct {
					fr.parkOn(tg.pool, c, done)
				} else {
					tg.pool.put(c, time.Now())
				}
			}
		}()
	}
	for pl, streams := range h2streams {
		ready.Add(1)
		go func() {
			defer ready.Done()
			fr.warm.Add(int64(pl.h2.prewarm(e.abortCtx, streams)))
		}()
	}
	initial := min(fr.bound, max(2, int(math.Ceil(fr.f.perSec/1000))))
	if direct {
		initial = 0 // parked workers; job workers start when none is free
	}
	for range initial {
		fr.spawn(nil, done)
	}
}

// spawn starts a paced worker, sending first (if not nil) before it takes
// jobs.
func (fr *flowRun) spawn(first *job, done *sync.WaitGroup) {
	w := fr.newWorker()
	done.Add(1)
	fr.alive.Add(1)
	go func() {
		defer done.Done()
		if first != nil {
			w.send(first.i, first.intended)
		}
		for j := range fr.jobs {
			w.send(j.i, j.intended)
		}
	}()
}

// retireRetry is how soon a dispatcher waiting for a connection of one
// target tries again to retire a parked worker of another (send in
// dispatch), when all of them were busy.
const retireRetry = time.Millisecond

// dispatch runs a paced flow from began: it hands ID k at its intended time
// (vegeta ConstantPacer: (h+1)*Per/Freq after the start, h the ID's hit
// number in the unsharded flow) to an idle worker, starting a new one when
// none is idle and the bound allows (package doc, "Fixed rates"). Direct
// sends have a relief dispatcher (relief.go) that sends the IDs it finds
// overdue: both claim IDs from fr.next, so each is claimed once.
func (fr *flowRun) dispatch(ctx context.Context, began time.Time, done *sync.WaitGroup) {
	e := fr.e
	f := fr.f
	n := int64(len(f.ids))
	pacer := vegeta.ConstantPacer(f.rate)
	// due is ID k's intended time; false when the pacer stops.
	due := func(k int64) (time.Time, bool) {
		hit := uint64(k)
		if f.sched != nil {
			hit = uint64(f.sched[k])
		}
		off, stop := pacer.Pace(0, hit) // from the start: (hit+1)*interval
		return began.Add(off), !stop
	}
	fixed := f.conc > 0
	perSec := f.perSec / float64(max(1, e.p.opts.Shard.Count))
	defer close(fr.jobs)
	defer fr.closeLots()
	direct := fr.direct
	fr.peak = int(fr.alive.Load()) // the initial job workers, or the parked ones
	sl := newSleeper(direct)
	defer sl.stop()
	handed := false // the last ID went to a worker goroutine (not direct)
	fr.next.Store(0)
	var rl *relief
	if direct {
		rl = fr.startRelief(ctx, n, due)
	}
	var back <-chan job // the IDs the relief claimed but could not send
	if rl != nil {
		back = rl.back
	}
	// send sends j now: direct, or through a worker; false when ctx ended
	// first.
	send := func(j job) bool {
		var parked chan *worker // nil: no direct send (a nil channel is never ready)
		pl := fr.tmpls[f.assign[j.i]].pool
		if direct {
			if fr.sendDirect(pl.lot, j) {
				handed = false
				return true
			}
			parked = pl.lot.ws
		}
		handed = true
		if !direct || !pl.onlyParked() {
			select {
			case fr.jobs <- j:
				return true
			default:
			}
		}
		if !fixed && fr.sizedBy == 0 && fr.sampleN.Load() >= sizingSample {
			fr.sizedBy = time.Duration(fr.sampleSum.Load() / sizingSample)
			fr.bound = max(fr.bound, rateBound(perSec, fr.sizedBy, f.maxWork))
		}
		retired := false
		var retry *time.Timer // while no other target's parked worker was idle to retire
		defer func() {
			if retry != nil {
				retry.Stop()
			}
		}()
		for {
			// Parked workers exit when their connection ends: fewer alive
			// than the bound starts a job worker.
			alive := int(fr.alive.Load())
			jobs := fr.jobs
			var again <-chan time.Time
			if direct && pl.onlyParked() {
				jobs = nil // only a parked worker can send j
			} else if alive < fr.bound {
				fr.spawn(&j, done)
				fr.peak = max(fr.peak, alive+1)
				return true
			} else if direct && !retired {
				// The bound may be filled by parked workers on another
				// target's connections (a counts split warms only the first
				// target's): one of them gives up its place, or nothing
				// would ever take j (no job worker, no parked one for its
				// target). When all of them are busy, none can be retired
				// now, and one parking again signals nothing: try again
				// shortly.
				if retired = fr.retireIdle(pl.lot); !retired {
					if retry == nil {
						retry = time.NewTimer(retireRetry)
					} else {
						retry.Reset(retireRetry)
					}
					again = retry.C
				}
			}
			if fr.testWait != nil {
				fr.testWait(j.i)
			}
			select {
			case jobs <- j:
				return true
			case w := <-parked:
				if w.take(j) {
					handed = false
					return true
				}
			case <-fr.exited:
			case <-again:
			case <-ctx.Done():
				return false
			}
		}
	}
dispatch:
	for !e.stopped() {
		select {
		case j := <-back:
			if !send(j) {
				break dispatch
			}
			continue
		default:
		}
		k := fr.next.Load()
		if k >= n {
			break dispatch
		}
		at, ok := due(k)
		if !ok {
			break dispatch
		}
		if fr.testHold != nil {
			fr.testHold(int(k))
		}
		if !sl.until(ctx, at, handed) {
			break dispatch
		}
		if !fr.next.CompareAndSwap(k, k+1) {
			continue // the relief took k
		}
		if !send(job{i: int(k), intended: at.UnixNano()}) {
			break dispatch
		}
	}
	if rl != nil {
		// The relief may hold an ID it could not send: take it before the
		// workers are told to finish.
		rl.halt()
		for {
			select {
			case j := <-back:
				if ctx.Err() == nil {
					send(j)
				}
				continue
			case <-rl.done:
			}
			break
		}
		fr.reliefN = rl.sent
	}
}
