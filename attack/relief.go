package attack

import (
	"context"
	"time"
)

// reliefGrace is how long after its intended time an ID may stay
// unclaimed before the relief dispatcher sends it.
const reliefGrace = 200 * time.Microsecond

// The relief dispatcher. The dispatcher of direct sends sleeps between
// due times, and each ID leaves when it wakes. On a virtual machine a
// thread's wake-up is now and then late by milliseconds (the hypervisor
// runs the virtual CPU later, or another thread holds it), and every ID
// due meanwhile leaves late with it: at 20,000/s one 2 ms stall delays 40
// IDs. The relief is a second goroutine that waits in the network poller
// (a timerfd(2): it holds no P while it waits, so the workers reading
// responses are not held up) until reliefGrace after the next unclaimed
// ID's due time. If the dispatcher has not claimed that ID by then, the
// relief claims it and writes it on a parked connection, and every later
// ID already due, then waits again. Both
// claim IDs with a compare-and-swap on flowRun.next, so each ID is
// claimed, and sent, once. The relief only sends directly: when no parked
// connection of the ID's target is free, it leaves the ID to the
// dispatcher; an ID it claimed but could not write (not one byte left)
// it hands back. evidence.AttackPacing.ReliefSends counts what it sent.
type relief struct {
	fr   *flowRun
	n    int64
	due  func(k int64) (time.Time, bool)
	al   *alarm
	back chan job      // claimed IDs not sent, for the dispatcher (unbuffered)
	stop chan struct{} // closed by halt
	done chan struct{} // closed when the relief has returned
	sent int           // IDs sent; read after done
}

// startRelief starts fr's relief for IDs 0..n-1 with intended times due;
// nil when no alarm is available (not Linux, or a single P: the
// dispatcher then holds the only P while it sleeps, see sleeper).
func (fr *flowRun) startRelief(ctx context.Context, n int64, due func(k int64) (time.Time, bool)) *relief {
	if !preciseAvailable() {
		return nil
	}
	al, err := newAlarm()
	if err != nil {
		return nil
	}
	r := &relief{fr: fr, n: n, due: due, al: al, back: make(chan job), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run(ctx)
	return r
}

// halt stops the relief (it returns after a send in progress); the
// dispatcher must then receive from back until done is closed.
func (r *relief) halt() {
	close(r.stop)
	r.al.interrupt()
}

func (r *relief) stopped(ctx context.Context) bool {
	select {
	case <-r.stop:
		return true
	default:
		return ctx.Err() != nil || r.fr.e.stopped()
	}
}

func (r *relief) run(ctx context.Context) {
	defer close(r.done)
	defer r.al.close()
	fr := r.fr
	var rest time.Time // no free connection was found: wait until then
	for !r.stopped(ctx) {
		k := fr.next.Load()
		if k >= r.n {
			return
		}
		at, ok := r.due(k)
		if !ok {
			return
		}
		wake := at.Add(reliefGrace)
		if wake.Before(rest) {
			wake = rest
		}
		if !r.al.until(wake) {
			return // halted (or the timer failed: the dispatcher goes on alone)
		}
		// Send every ID already due, from the first unclaimed, while the
		// dispatcher has not claimed it.
		for fr.next.Load() == k && !r.stopped(ctx) {
			if !r.sendOne(k, at) {
				rest = time.Now().Add(reliefGrace)
				break
			}
			if k++; k >= r.n {
				return
			}
			if at, ok = r.due(k); !ok || at.After(time.Now()) {
				break
			}
		}
	}
}

// sendOne claims ID k (intended at) and writes it on a parked connection
// (sendDirect); false when no parked connection was free (k is left to the
// dispatcher's job path), or k was claimed but could not be written (it is
// handed back). Only an empty lot is seen before the claim: a worker that
// goes in the meantime makes the ID go back.
func (r *relief) sendOne(k int64, at time.Time) bool {
	fr := r.fr
	lot := fr.tmpls[fr.f.assign[k]].pool.lot
	if len(lot.ws) == 0 {
		return false
	}
	if !fr.next.CompareAndSwap(k, k+1) {
		return true // the dispatcher took k
	}
	j := job{i: int(k), intended: at.UnixNano()}
	if fr.sendDirect(lot, j) {
		r.sent++
		return true
	}
	r.back <- j // the dispatcher receives until done
	return false
}
