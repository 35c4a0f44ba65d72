package attack

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Direct sends (paced HTTP/1.1 flows with keep-alive): the dispatcher
// writes each request itself, at its intended time, on a warm connection
// whose worker is already parked reading it. Nothing is scheduled between
// the dispatcher's wake-up and the write, so the pacing error is the
// wake-up's alone; handing the ID to a worker goroutine instead (the job
// path, still used when no parked connection is free) costs a goroutine
// switch on a busy runtime, milliseconds at the 99th percentile on two
// cores. The worker reads the response when it arrives (the network poller
// wakes it), records the line, and parks again on the same connection.

// Parked worker states (worker.park).
const (
	parkIdle     int32 = iota // in its lot, reading its idle connection
	parkAssigned              // popped by the dispatcher: a request is (being) written
	parkDead                  // its connection ended while idle (EOF, unsolicited bytes)
	parkClosed                // the flow is over: the dispatcher woke it to exit
)

// lot holds a pool's parked workers, first parked first used (as the
// pool's idle channel).
type lot struct {
	ws      chan *worker
	closing atomic.Bool
}

// directMaxRequest is the longest request (bytes on the wire, before
// TLS) the dispatcher writes itself: a write into an idle socket returns at
// once only while the request fits in its send buffer (Linux starts it at
// tcp_wmem's default, 16 KB, of which the kernel's accounting leaves about
// half to data; tcp(7) tcp_wmem, socket(7) SO_SNDBUF); a longer one waits
// for the server to read, and the whole schedule would wait with it.
const directMaxRequest = 4 << 10

// directPools reports whether fr's paced sends go direct: every pool is
// HTTP/1.1, connections are kept, and no request is longer than
// directMaxRequest (with fr's longest ID). warmPaced decides it once
// (fr.direct).
func (fr *flowRun) directPools() bool {
	if !fr.f.keep {
		return false
	}
	for _, pl := range fr.pools {
		if pl != nil && pl.h2 != nil {
			return false
		}
	}
	longest := 0
	for _, id := range fr.f.ids {
		longest = max(longest, len(id))
	}
	for _, t := range fr.tmpls {
		if len(t.prefix)+longest+len(t.suffix) > directMaxRequest {
			return false
		}
	}
	return true
}

// parkOn starts a parked worker on c, a warm connection of pl.
func (fr *flowRun) parkOn(pl *pool, c *hconn, done *sync.WaitGroup) {
	w := fr.newWorker()
	w.pc = c
	w.sentCh = make(chan struct{}, 1)
	done.Add(1)
	fr.alive.Add(1)
	pl.parked.Add(1)
	go func() {
		defer done.Done()
		for w.parkedSend(pl.lot, c) {
		}
		pl.parked.Add(-1)
		fr.alive.Add(-1)
		select {
		case fr.exited <- struct{}{}:
		default:
		}
	}()
}

// parkedSend parks w on c until the dispatcher writes a request on it,
// then reads and records the response; it reports whether w parks again
// (false: c was closed and w exits).
func (w *worker) parkedSend(l *lot, c *hconn) bool {
	if c.br.Buffered() > 0 {
		// Bytes nobody asked for (a 408 before a close, say) would be
		// taken for the next request's response (as pool.live).
		c.close()
		return false
	}
	c.SetDeadline(time.Time{}) // idle: no deadline until a request is written
	w.park.Store(parkIdle)
	l.ws <- w // never blocks: the channel holds every parked worker
	if l.closing.Load() && w.park.CompareAndSwap(parkIdle, parkClosed) {
		c.close()
		return false
	}
	_, _ = c.br.Peek(1) // until the response, EOF, or the dispatcher's wake-up
	if w.park.CompareAndSwap(parkIdle, parkDead) || w.park.Load() == parkClosed {
		// Nothing was asked on c: the server closed it, sent something
		// unsolicited (a 408, say), or the flow is over.
		c.close()
		return false
	}
	w.awaitWrite()
	a := &w.pa
	if a.retracted {
		// Not one byte was written: the dispatcher sends the ID elsewhere.
		c.close()
		return false
	}
	if a.werr != nil {
		a.err, a.notSent = a.werr, a.wn == 0
	} else {
		w.readResp(a, c.br, w.fr.tmpls[w.fr.f.assign[a.i]].req)
	}
	return w.finish(a)
}

// awaitWrite waits for the dispatcher to finish writing (the response can
// come first, before it has recorded the write): a few yields before
// blocking, so that the dispatcher's send rarely has a goroutine to wake
// (it would wake it on its own P, which its next system-call sleep holds).
func (w *worker) awaitWrite() {
	for range 64 {
		select {
		case <-w.sentCh:
			return
		default:
			runtime.Gosched()
		}
	}
	<-w.sentCh
}

// sendDirect writes job j on a parked worker of its pool's lot, if one is
// idle: it reports whether j was taken (sent, or failed after some bytes
// left, which w records); false leaves j to the job path, unsent.
func (fr *flowRun) sendDirect(l *lot, j job) bool {
	for {
		var w *worker
		select {
		case w = <-l.ws:
		default:
			return false
		}
		if w.take(j) {
			return true
		}
	}
}

// take claims w, idle in its lot, for j and writes it (writeParked):
// false when w's connection ended first or not one byte of j left.
func (w *worker) take(j job) bool {
	return w.park.CompareAndSwap(parkIdle, parkAssigned) && w.writeParked(j)
}

// wakeOne takes one worker out of l and, if it is idle, wakes it to exit
// (parkClosed): woke says so; empty, that l held no worker.
func (l *lot) wakeOne() (woke, empty bool) {
	select {
	case w := <-l.ws:
		if w.park.CompareAndSwap(parkIdle, parkClosed) {
			w.pc.SetDeadline(time.Unix(1, 0))
			return true, false
		}
		return false, false
	default:
		return false, true
	}
}

// writeParked writes j's request on w's connection; false when not one
// byte left (the connection is closed by w, and j is still to send).
func (w *worker) writeParked(j job) bool {
	w.build(j.i)
	c := w.pc
	a := &w.pa
	*a = attempt{i: j.i, intended: j.intended, c: c, park: true}
	w.cur.Store(c)
	w.e.writeRequest(a, c, w.wbuf)
	a.start = a.sent
	if a.werr != nil {
		c.SetDeadline(time.Unix(1, 0)) // wake the reader
		if a.wn == 0 && c.used {
			a.retracted = true // as do: a reused connection gone stale
		}
	}
	sent := !a.retracted
	if sent {
		w.fr.directN.Add(1)
		w.sending(a)
	}
	// From here on w's attempt is the worker's: it may record it and park
	// again, and the other dispatcher take it.
	w.sentCh <- struct{}{}
	return sent
}

// onlyParked reports whether every connection pl may open is a parked
// worker's (MaxConnections reached by them): a job worker would wait for a
// slot until one of them exits, at the schedule's end, so pl's IDs wait
// for a parked worker instead.
func (pl *pool) onlyParked() bool {
	return pl.slots != nil && int(pl.parked.Load()) >= cap(pl.slots)
}

// retireIdle wakes one parked worker idle in a lot other than own to exit
// (it signals fr.exited once gone); false when there is none.
func (fr *flowRun) retireIdle(own *lot) bool {
	for _, pl := range fr.pools {
		if pl == nil || pl.lot == nil || pl.lot == own {
			continue
		}
		for {
			woke, empty := pl.lot.wakeOne()
			if woke {
				return true
			}
			if empty {
				break
			}
		}
	}
	return false
}

// closeLots wakes fr's parked workers to exit, at the end of its schedule.
func (fr *flowRun) closeLots() {
	for _, pl := range fr.pools {
		if pl == nil || pl.lot == nil {
			continue
		}
		pl.lot.closing.Store(true)
		for {
			if _, empty := pl.lot.wakeOne(); empty {
				break
			}
		}
	}
}
