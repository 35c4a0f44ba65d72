//go:build linux

package attack

// An event-loop sender for the simplest flow shape (a prototype, issue 28
// item 3): a closed-loop (unpaced) HTTP/1.1 flow over plain TCP with
// keep-alive, to one target, without a connection cap. It is wrk's design
// (github.com/wg/wrk, src/wrk.c and src/ae.c: one loop per thread, each
// with its own epoll instance and non-blocking sockets it owns, no
// per-connection thread): GOMAXPROCS loops (and one P more while they run:
// procs.Spare), each a goroutine locked to its
// thread with its own epoll descriptor and the sockets it dials itself, so
// the runtime's netpoller never sees them and no goroutine is parked or
// woken per request. Each loop records the evidence lines of its requests
// with one worker's buffers and worker.record, as the goroutine engine does
// (same fields, same errors: they are built as the net package would report
// them to worker.do).
//
// What it keeps of the goroutine engine's semantics: each ID is written at
// most once (a write that put no byte on a reused connection goes to a
// fresh one, as worker.do does: TestEvloopResendsUnsentWrite); a request's
// deadline is its send time plus Options.Timeout, checked by the loop
// (deadlines are send time plus a constant, so the requests in flight are
// kept in send order and the oldest bounds the wait); an interrupted attack
// takes no further IDs and, once aborted (engine.abortAll), ends its
// requests in flight with the error the goroutine engine records; a
// connection the server closes is dialled again for the next ID; a
// connection idle for staleAfter is peeked before it is reused (drain, as
// hconn.liveAt does: TestEvloopIdleLiveness).
//
// It is the default for the flows it can send (Options.Engine EngineAuto;
// rlbench attack --engine goroutines opts out; bench/evloop.sh measures
// both). TLS, HTTP/2, paced flows, Connection: close flows
// (DisableKeepAlives), MaxConnections, Pipeline, splits over several
// targets and hosts with several addresses go to the goroutine engine.
//
// A response net/http frames (chunked, ended by the close, a head the fast
// parser does not take) is parsed again from its start as parts arrive,
// up to evHandOffBytes; past that a goroutine streams the rest (handOff).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rlbench/rlbench/internal/procs"
)

// forceGoroutines runs every flow on goroutines, whatever Options.Engine
// (tests only: the suite's TestMain sets it from RLBENCH_ENGINE=goroutines,
// to run every test on the goroutine engine).
var forceGoroutines bool

// evloopAddr returns the resolved address of fr's only pool when the
// flow can run on event loops, nil otherwise (see the file comment; also
// nil when the host has more than one address).
func (fr *flowRun) evloopAddr() *net.TCPAddr {
	o := fr.e.p.opts
	if o.Engine == EngineGoroutines || forceGoroutines || fr.f.paced || !fr.f.keep || o.MaxConnections > 0 || o.testDial != nil || o.testResend || fr.f.workers == 0 || fr.f.pipe > 1 {
		return nil
	}
	var pl *pool
	for _, t := range fr.tmpls {
		if t.pool.h2 != nil || t.pool.tlsConf != nil || (pl != nil && t.pool != pl) {
			return nil
		}
		pl = t.pool
	}
	if pl == nil {
		return nil
	}
	// One address only: net.Dialer tries a name's addresses in turn (and
	// races IPv4 against IPv6), which the loop's dial does not.
	host, port, err := net.SplitHostPort(pl.addr)
	if err != nil {
		return nil
	}
	ips, err := net.DefaultResolver.LookupIPAddr(fr.e.abortCtx, host)
	pn, perr := net.LookupPort("tcp", port)
	if err != nil || perr != nil || len(ips) != 1 {
		return nil
	}
	return &net.TCPAddr{IP: ips[0].IP, Port: pn, Zone: ips[0].Zone}
}

// evBurst is the burst's first requests shared by the loops: each claims
// burstChunk connections at a time (of any loop) and writes their first
// requests (writeRaw), so that a loop whose thread runs slower (it shares
// a core with the server) does not leave the others idle with its share
// unsent, as burstSend's senders do; done counts the connections claimed
// and written, and each loop takes its own connections back once all are.
type evBurst struct {
	conns      []*evConn // by first ID
	next, done atomic.Int64
}

// burstShare claims and writes first requests of b until none are left.
func (l *evLoop) burstShare(b *evBurst) {
	for {
		lo := int(b.next.Add(burstChunk)) - burstChunk
		if lo >= len(b.conns) {
			return
		}
		hi := min(lo+burstChunk, len(b.conns))
		for _, c := range b.conns[lo:hi] {
			if c.state == evIdle { // its request built before the release (run)
				c.a.sent = time.Now()
				c.burstErr = writeRaw(c)
			}
		}
		b.done.Add(int64(hi - lo))
	}
}

// evConn states.
const (
	evClosed  = iota // no socket (not dialled yet, failed or retired)
	evDialing        // non-blocking connect in progress (EPOLLOUT)
	evIdle           // connected, no request on it (warm, or between two)
	evWriting        // the request partly written (EPOLLOUT)
	evReading        // the request written, awaiting the response (EPOLLIN)
)

// evConn is one connection slot of a loop: its socket (dialled again when
// the server closes it) and the attempt it carries.
type evConn struct {
	slot  int
	fd    int
	state int
	name  string // evidence.Request.Conn
	used  bool   // has carried a request
	// idleSince is when c's last response ended (the wake-up that read
	// it), for the liveness peek (drain).
	idleSince time.Time
	a         attempt
	tg        *tmpl
	try       int // 1 once the attempt went to a fresh connection after a failed write
	wbuf      []byte
	rbuf      []byte // the response so far (of a long body, its prefix: dropped)
	// dropped counts the body bytes received and not kept in rbuf (parse).
	dropped int64
	// deadline is the monotonic instant (ns since the loop's base) the
	// dial or request times out; prev and next link the loop's list of
	// connections with a deadline, in deadline order.
	deadline   int64
	prev, next *evConn
	listed     bool
	out        bool       // registered for EPOLLOUT (a short write)
	owner      *evLoop    // the loop whose epoll set holds c
	burstErr   unix.Errno // the errno of c's burst write (burstShare)
	// gen numbers c's sockets (the events' Pad): an event a batch still
	// holds for a socket closed earlier in the batch is not the new one's.
	gen int32
}

// evLoop is one event loop: its epoll instance, an eventfd that wakes it
// when the attack is aborted, and its connection slots.
type evLoop struct {
	e     *engine
	fr    *flowRun
	w     *worker
	pl    *pool
	ra    *net.TCPAddr
	sa    unix.Sockaddr
	ep    int
	efd   int
	conns []*evConn
	runq  []*evConn // slots that take their next ID
	head  *evConn   // oldest deadline
	tail  *evConn
	base  time.Time
	now   time.Time // read once per wake-up
	evs   []unix.EpollEvent
	// aborted is set (by an AfterFunc on the engine's abort context) when
	// the attack is aborted; the eventfd then wakes the loop.
	aborted atomic.Bool
	burst   *evBurst
	// away counts the slots whose response a goroutine reads (handOff);
	// back receives each such slot, and the worker that recorded its line,
	// when it is done; spare holds those workers for the next hand-offs
	// (at most one per slot is ever made).
	away  int
	back  chan evBack
	spare []*worker
	// efdMu guards efd against wake's writes once closeAll closes it.
	efdMu   sync.Mutex
	warming bool
	n       int
	src     evSrc
	br      *bufio.Reader
}

// evloopFlows counts the flows started on event loops (tests check that
// the engine they meant to run did).
var evloopFlows atomic.Int64

// startLoops starts fr's event loops in place of startUnpaced: each dials
// its connections (warm) before ready, then after the release sends ID k on
// connection k and takes the remaining IDs in order until none are left.
func (fr *flowRun) startLoops(ra *net.TCPAddr, ready, done *sync.WaitGroup, release chan struct{}) {
	e := fr.e
	evloopFlows.Add(1)
	workers := fr.f.workers
	fr.burstN = workers
	fr.next.Store(int64(workers))
	// One P more than the loops while they run (procs.Spare), so that
	// sysmon leaves the loops waiting in epoll_wait their Ps: on 2 cores
	// against the rlbench backend on loopback (perf stat, 300,000 requests,
	// under other load) the client's context switches per request went
	// from 0.46-0.49 to 0.28-0.39, sysmon's nanosleep(2) calls from
	// 0.16-0.17 to 0.05-0.09, its futex(2) calls from 0.08-0.12 to
	// 0.04-0.05, and bench/compare.sh's A/B client CPU per request fell by
	// 11-15 % at the same throughput.
	releaseSpare, maxProcs := procs.Spare()
	nl := max(1, min(maxProcs, workers))
	var left atomic.Int64 // loops of fr still running: the last releases the spare P
	left.Store(int64(nl))
	loops := make([]*evLoop, nl)
	for j := range loops {
		loops[j] = &evLoop{e: e, fr: fr, w: fr.newWorker(), pl: fr.tmpls[0].pool, ra: ra, sa: sockaddr(ra), n: len(fr.f.ids), ep: -1, efd: -1}
		loops[j].back = make(chan evBack, workers)
	}
	b := &evBurst{conns: make([]*evConn, workers)}
	for k := range workers {
		l := loops[k%nl]
		c := &evConn{slot: len(l.conns), fd: -1, a: attempt{i: k, inBurst: true}, owner: l}
		l.conns = append(l.conns, c)
		b.conns[k] = c
	}
	for _, l := range loops {
		l.burst = b
	}
	fr.peekLoops = func() {
		for _, l := range loops {
			l.peekWarm()
		}
	}
	ready.Add(nl)
	done.Add(nl)
	for _, l := range loops {
		go func() {
			defer done.Done()
			defer func() {
				if left.Add(-1) == 0 {
					releaseSpare()
				}
			}()
			l.run(ready, release)
		}()
	}
}

// sockaddr is ra for connect(2), one per loop (unix.Connect writes into it).
func sockaddr(ra *net.TCPAddr) unix.Sockaddr {
	if ip4 := ra.IP.To4(); ip4 != nil {
		s := &unix.SockaddrInet4{Port: ra.Port}
		copy(s.Addr[:], ip4)
		return s
	}
	s := &unix.SockaddrInet6{Port: ra.Port}
	copy(s.Addr[:], ra.IP.To16())
	return s
}

// run is the loop's goroutine.
func (l *evLoop) run(ready *sync.WaitGroup, release chan struct{}) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := l.e
	l.base = time.Now()
	l.br = bufio.NewReaderSize(&l.src, 4096)
	l.evs = make([]unix.EpollEvent, len(l.conns)+1)
	var err error
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err == nil {
		l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	}
	if err == nil {
		err = unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, l.efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1})
	}
	if err != nil {
		e.fail(errors.New("attack: event loop: " + err.Error()))
		ready.Done()
		<-release
		l.closeAll()
		return
	}
	stopWake := context.AfterFunc(e.abortCtx, func() {
		l.aborted.Store(true)
		l.wake()
	})
	defer stopWake()
	defer l.closeAll()

	// Warm: dial every connection, wait until each is up or failed.
	l.warming = true
	l.now = time.Now()
	for _, c := range l.conns {
		l.dial(c)
	}
	for l.head != nil {
		l.wait()
	}
	l.warming = false
	for _, c := range l.conns {
		if c.state == evIdle {
			l.fr.warm.Add(1)
			l.build(c) // every first request built before the release, as startUnpaced does
		}
	}
	ready.Done()
	l.awaitRelease(release)
	if !e.proceed {
		return
	}
	// The burst: the loops write every first request on a warm connection
	// back to back (burstShare), then each takes its own back: their
	// deadlines in send order, the outcomes of their writes; then the dials
	// of the others, then the live counts of those still in flight (as
	// burstSend counts after its writes; an attempt recorded already, its
	// write failed, was counted by Progress.record).
	l.burstShare(l.burst)
	for l.burst.done.Load() < int64(len(l.burst.conns)) {
		runtime.Gosched()
	}
	l.now = time.Now()
	var warm, cold []*evConn
	for _, c := range l.conns {
		c.a.start = l.now
		if c.state == evIdle {
			warm = append(warm, c)
		} else {
			cold = append(cold, c)
		}
	}
	slices.SortFunc(warm, func(x, y *evConn) int { return x.a.sent.Compare(y.a.sent) })
	for _, c := range warm {
		l.push(c, c.a.sent)
		c.state = evWriting
		l.wrote(c, c.burstErr)
	}
	for _, c := range cold {
		l.dial(c)
	}
	for _, c := range l.conns {
		if c.listed {
			l.w.sending(&c.a)
		}
	}
	for {
		l.drain()
		if l.head == nil && l.away == 0 {
			return // nothing in flight: every slot is retired
		}
		l.wait()
	}
}

// awaitRelease returns once release is closed. Without Options.StartAt
// (the release comes within milliseconds of ready) it yields in a loop
// rather than parking: a parked goroutine's wake-up waits for the
// scheduler, which took milliseconds on a loaded machine (burstSend's
// senders spin for the same reason); with StartAt it parks.
func (l *evLoop) awaitRelease(release chan struct{}) {
	if !l.e.p.opts.StartAt.IsZero() {
		<-release
		return
	}
	for {
		select {
		case <-release:
			return
		default:
			runtime.Gosched()
		}
	}
}

// peekWarm closes the loop's warm connections that the server has already
// ended or written on (engine.peekWarm's rule: peekFdClosed): they are
// dialled again after the burst and their first requests sent then. It runs
// on the goroutine that releases the burst, while the loop waits for the
// release (after ready, before release: nothing else touches the
// connections then).
func (l *evLoop) peekWarm() {
	for _, c := range l.conns {
		if c.state == evIdle && peekFdClosed(c.fd) {
			l.closeConn(c)
		}
	}
}

// closeAll closes the loop's sockets and descriptors.
func (l *evLoop) closeAll() {
	for _, c := range l.conns {
		l.closeConn(c)
	}
	l.efdMu.Lock()
	if l.efd >= 0 {
		unix.Close(l.efd)
		l.efd = -1
	}
	l.efdMu.Unlock()
	if l.ep >= 0 {
		unix.Close(l.ep)
	}
}

// wait waits for events until the oldest deadline and handles them, then
// the deadlines that passed.
func (l *evLoop) wait() {
	ms := -1
	if l.head != nil {
		left := l.head.deadline - int64(time.Since(l.base))
		ms = int(max(0, (left+int64(time.Millisecond)-1)/int64(time.Millisecond)))
	}
	n := l.epollWait(ms)
	l.now = time.Now()
	for _, ev := range l.evs[:n] {
		if ev.Fd < 0 {
			var b [8]byte
			_, _ = unix.Read(l.efd, b[:])
			l.takeBack()
			continue
		}
		c := l.conns[ev.Fd]
		if ev.Pad != c.gen || c.fd < 0 {
			continue
		}
		switch c.state {
		case evDialing:
			l.connected(c)
		case evWriting:
			l.write(c)
		case evReading:
			l.read(c)
		}
	}
	if l.aborted.Load() {
		for l.head != nil {
			l.expire(l.head, true)
		}
		return
	}
	now := int64(l.now.Sub(l.base))
	for l.head != nil && l.head.deadline <= now {
		l.expire(l.head, false)
	}
}

// epollWait is epoll_wait(2) on the loop's epoll instance for up to ms
// milliseconds (-1: no limit) and returns the number of events in l.evs.
func (l *evLoop) epollWait(ms int) int {
	n, err := unix.EpollWait(l.ep, l.evs, ms)
	if err != nil {
		return 0 // EINTR
	}
	return n
}

// drain gives each slot in the run queue its next ID (or retires it). A
// slot's connection idle for staleAfter or more is peeked first, as the
// goroutine engine's hconn.liveAt does: when the server closed it or sent
// something unsolicited on it (peekFdClosed), the ID goes to a fresh
// connection instead of a dead socket.
func (l *evLoop) drain() {
	var now time.Time // read once, when a slot first needs it
	for len(l.runq) > 0 {
		c := l.runq[len(l.runq)-1]
		l.runq = l.runq[:len(l.runq)-1]
		e := l.e
		i := -1
		if !e.stopped() {
			if k := int(l.fr.next.Add(1) - 1); k < l.n {
				i = k
			}
		}
		if i < 0 {
			l.closeConn(c)
			continue
		}
		c.a = attempt{i: i, start: l.now}
		c.try = 0
		l.w.sending(&c.a)
		if c.state == evIdle {
			if h := e.p.opts.testIdle; h != nil {
				h(i, uintptr(c.fd))
				now = time.Now()
			}
			if now.IsZero() {
				now = time.Now()
			}
			if now.Sub(c.idleSince) >= staleAfter && peekFdClosed(c.fd) {
				l.closeConn(c)
			}
		}
		if c.state == evIdle {
			if h := e.p.opts.testReuse; h != nil {
				h(i, uintptr(c.fd))
			}
			l.send(c)
		} else {
			l.dial(c)
		}
	}
}

// push appends c to the deadline list with deadline at+d.
func (l *evLoop) push(c *evConn, at time.Time) {
	c.deadline = int64(at.Sub(l.base) + l.e.timeout)
	c.prev, c.next, c.listed = l.tail, nil, true
	if l.tail != nil {
		l.tail.next = c
	} else {
		l.head = c
	}
	l.tail = c
}

// unlist removes c from the deadline list.
func (l *evLoop) unlist(c *evConn) {
	if !c.listed {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next, c.listed = nil, nil, false
}

// closeConn closes c's socket (which leaves the epoll set).
func (l *evLoop) closeConn(c *evConn) {
	l.unlist(c)
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	c.state, c.used, c.out = evClosed, false, false
	c.rbuf, c.dropped = c.rbuf[:0], 0
}

// dial starts a non-blocking connect for c, as net.Dialer would (TCP_NODELAY,
// keep-alive probes after 30s idle).
func (l *evLoop) dial(c *evConn) {
	l.closeConn(c)
	family := unix.AF_INET
	if _, ok := l.sa.(*unix.SockaddrInet6); ok {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		l.dialFailed(c, os.NewSyscallError("socket", err))
		return
	}
	c.fd = fd
	c.gen++
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 30)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 30)
	err = unix.Connect(fd, l.sa)
	if err != nil && err != unix.EINPROGRESS {
		l.dialFailed(c, os.NewSyscallError("connect", err))
		return
	}
	c.state = evDialing
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(c.slot), Pad: c.gen}); err != nil {
		l.dialFailed(c, os.NewSyscallError("epoll_ctl", err))
		return
	}
	l.push(c, l.now)
}

// connected handles the end of c's connect (its socket is writable, or in
// error).
func (l *evLoop) connected(c *evConn) {
	l.unlist(c)
	if errno, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || errno != 0 {
		if err == nil {
			err = unix.Errno(errno)
		}
		l.dialFailed(c, os.NewSyscallError("connect", err))
		return
	}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.slot), Pad: c.gen}); err != nil {
		l.dialFailed(c, os.NewSyscallError("epoll_ctl", err))
		return
	}
	c.name = l.pl.nameConn(sockLocalAddr(c.fd))
	c.state = evIdle
	if !l.warming {
		l.send(c)
	}
}

// dialFailed ends a failed dial: while warming the slot is dialled again
// after the release (as a worker whose warm dial failed dials in do);
// otherwise the attempt is recorded as not sent, as worker.do records a
// failed pool.get.
func (l *evLoop) dialFailed(c *evConn, err error) {
	l.closeConn(c)
	if l.warming {
		return
	}
	c.a.err = &net.OpError{Op: "dial", Net: "tcp", Addr: l.ra, Err: err}
	c.a.notSent = true
	l.finishErr(c)
}

// send builds c's request (ID c.a.i) and writes it.
func (l *evLoop) send(c *evConn) {
	l.build(c)
	c.a.sent = time.Now()
	l.push(c, c.a.sent)
	c.state = evWriting
	l.write(c)
}

// build puts the request of c's ID in c.wbuf and resets the attempt's
// write and response state (as worker.build; it reads only what the loops
// share read-only).
func (l *evLoop) build(c *evConn) {
	a := &c.a
	c.tg = l.fr.tmpls[l.fr.f.assign[a.i]]
	c.wbuf = c.tg.appendRequest(c.wbuf[:0], l.fr.f.ids[a.i])
	a.wn, a.werr = 0, nil
	c.rbuf, c.dropped = c.rbuf[:0], 0
}

// write writes what is left of c's request in one raw non-blocking write(2)
// (as rawWrite does); a short write waits for EPOLLOUT.
func (l *evLoop) write(c *evConn) {
	a := &c.a
	if l.aborted.Load() {
		// sendRest's Write after abortAll: its deadline is in the past.
		a.werr = l.opErr("write", c, os.ErrDeadlineExceeded)
		l.writeFailed(c)
		return
	}
	l.wrote(c, writeRaw(c))
}

// writeRaw makes one raw non-blocking write(2) of what is left of c's
// request and returns its errno. It touches c alone: during the burst any
// loop's thread writes any loop's connections (burstShare).
func writeRaw(c *evConn) unix.Errno {
	a := &c.a
	b := c.wbuf[a.wn:]
	r, en := rawIO(unix.SYS_WRITE, c.fd, b)
	if en == 0 && r > 0 {
		raceRead(b[:r])
		if a.wn == 0 {
			a.writes++
		}
		a.wn += int(r)
	}
	return en
}

// wrote handles the outcome of c's write (errno en): a failure, the whole
// request out (await the response), or a short write (await room).
func (l *evLoop) wrote(c *evConn, en unix.Errno) {
	a := &c.a
	if en != 0 && en != unix.EAGAIN && en != unix.EINTR {
		a.werr = l.opErr("write", c, os.NewSyscallError("write", en))
		l.writeFailed(c)
		return
	}
	if a.wn == len(c.wbuf) {
		if c.out { // was waiting for room
			c.out = false
			_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(c.slot), Pad: c.gen})
		}
		c.state = evReading
		return
	}
	if a.wn == 0 {
		a.sent = time.Now() // the send begins when a byte leaves (sendRest)
	}
	if !c.out {
		c.out = true
		_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLOUT, Fd: int32(c.slot), Pad: c.gen})
	}
}

// writeFailed ends an attempt whose write failed: a reused connection that
// took no byte sends it on a fresh one, once (worker.do); anything else is
// recorded with the error, not sent when no byte left. The connection is
// not named on the line (worker.do drops it before finish).
func (l *evLoop) writeFailed(c *evConn) {
	a := &c.a
	reused := c.used
	l.closeConn(c)
	if a.wn == 0 && reused && c.try == 0 && !l.aborted.Load() {
		c.try = 1
		a.werr = nil
		l.dial(c)
		return
	}
	a.err, a.notSent = a.werr, a.wn == 0
	l.finishErr(c)
}

// rawIO is one non-blocking read(2) or write(2) (trap) of b on fd as a raw
// system call (rawWrite's reasons); through package syscall under the race
// detector (raceOn).
func rawIO(trap uintptr, fd int, b []byte) (uintptr, unix.Errno) {
	if raceOn {
		var n int
		var err error
		if trap == unix.SYS_READ {
			n, err = syscall.Read(fd, b)
		} else {
			n, err = syscall.Write(fd, b)
		}
		if err != nil {
			return 0, err.(syscall.Errno)
		}
		return uintptr(n), 0
	}
	r, _, en := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return r, en
}

// opErr is the *net.OpError c's net.Conn would have returned.
func (l *evLoop) opErr(op string, c *evConn, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: sockLocalAddr(c.fd), Addr: l.ra, Err: err}
}

// sockLocalAddr is fd's local TCP address (getsockname(2)), a nil
// interface when unknown.
func sockLocalAddr(fd int) net.Addr {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil
	}
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), s.Addr[:]...)), Port: s.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), s.Addr[:]...)), Port: s.Port}
	}
	return nil
}

// read reads what arrived on c and parses the response so far.
func (l *evLoop) read(c *evConn) {
	if cap(c.rbuf)-len(c.rbuf) < 1024 {
		c.rbuf = append(c.rbuf, make([]byte, max(4096, cap(c.rbuf)))...)[:len(c.rbuf)]
	}
	b := c.rbuf[len(c.rbuf):cap(c.rbuf)]
	r, en := rawIO(unix.SYS_READ, c.fd, b)
	switch {
	case en == unix.EAGAIN || en == unix.EINTR:
		return
	case en != 0:
		l.parse(c, l.opErr("read", c, os.NewSyscallError("read", en)))
	case r == 0:
		l.parse(c, io.EOF)
	default:
		c.rbuf = c.rbuf[:len(c.rbuf)+int(r)]
		l.parse(c, nil)
	}
}

// expire ends c's dial or request at its deadline (or at once when the
// attack was aborted): the error the goroutine engine's read, write or dial
// reports when its deadline passes.
func (l *evLoop) expire(c *evConn, aborted bool) {
	l.unlist(c)
	switch c.state {
	case evDialing:
		err := error(os.ErrDeadlineExceeded)
		if aborted {
			err = errors.New("operation was canceled") // net's errCanceled
		}
		l.dialFailed(c, err)
	case evWriting:
		c.a.werr = l.opErr("write", c, os.ErrDeadlineExceeded)
		c.try = 1
		l.writeFailed(c)
	case evReading:
		l.parse(c, l.opErr("read", c, os.ErrDeadlineExceeded))
	}
}

// errNeedMore is evSrc's error at the end of the bytes received so far:
// the response is parsed again from its start when more arrive.
var errNeedMore = errors.New("attack: event loop: more bytes needed")

// evSrc reads a response's bytes received so far, then term (io.EOF, a
// read error) or, when term is nil, errNeedMore.
type evSrc struct {
	b    []byte
	term error
}

func (s *evSrc) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		if s.term != nil {
			return 0, s.term
		}
		return 0, errNeedMore
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// parse parses c's response from the bytes received so far; term is what
// ended them (nil: more may come). It records the line when the response
// is complete (or can no longer be).
func (l *evLoop) parse(c *evConn, term error) {
	w, a, tg := l.w, &c.a, c.tg
	b := c.rbuf
	a.fast, a.resp, a.err = false, nil, nil
	r := w.startLine(a, tg)
	r.Conn = c.name
	if canFast(tg.req) {
		end, more := w.fast.headIn(b, l.e.p.capturesBytes)
		if end > 0 {
			body := b[end:]
			n := w.fast.length
			k := int(min(int64(len(w.body)), n))
			have := int64(len(body)) + c.dropped
			if have < n && term == nil {
				// Keep the head and the body's prefix only: a long body
				// neither grows the buffer nor is copied again.
				if len(body) > k {
					c.dropped += int64(len(body) - k)
					c.rbuf = c.rbuf[:end+k]
				}
				return
			}
			kept := copy(w.body[:k], body)
			w.setBody(kept)
			a.fast = true
			if have < n {
				if term == io.EOF {
					term = io.ErrUnexpectedEOF
				}
				l.complete(c, w.fast.code, false, 0, term)
				return
			}
			l.complete(c, w.fast.code, w.fast.close || have > n, uint64(n), nil)
			return
		}
		if more {
			if term == nil {
				return
			}
			if len(b) == 0 {
				if term == io.EOF {
					term = io.ErrUnexpectedEOF
				}
				a.err = term
				l.complete(c, 0, true, 0, nil)
				return
			}
		}
	}
	// Not the common form: net/http reads it, from the start, as worker.readResp would.
	l.src.b, l.src.term = b, term
	l.br.Reset(&l.src)
	resp, err := readResponse(l.br, tg.req)
	if err != nil {
		if term == nil && errors.Is(err, errNeedMore) {
			return
		}
		a.err = err
		l.complete(c, 0, true, 0, nil)
		return
	}
	nb, berr := w.readBody(resp)
	if term == nil && errors.Is(berr, errNeedMore) {
		if len(b) > evHandOffBytes {
			l.handOff(c)
		}
		return
	}
	a.resp = resp
	left := l.br.Buffered() > 0 || len(l.src.b) > 0
	l.complete(c, resp.StatusCode, resp.Close || left, nb, berr)
}

// complete ends c's attempt once its response was read (or failed: a.err,
// berr), as worker.finish does: it keeps the connection for the next ID when
// it may carry one, records the line and queues the slot for its next ID.
func (l *evLoop) complete(c *evConn, code int, closes bool, nb uint64, berr error) {
	w, a, r := l.w, &c.a, &l.w.line
	l.unlist(c)
	switch {
	case a.err != nil:
		l.closeConn(c)
	case berr != nil:
		a.err = berr
		l.closeConn(c)
	default:
		r.Code, r.BytesIn = code, nb
		if a.fast {
			w.captureFast()
		} else {
			w.capture(a.resp.Header)
		}
		if !closes && code != http.StatusSwitchingProtocols && !l.aborted.Load() {
			c.used, c.idleSince = true, l.now
			c.state = evIdle
			c.rbuf, c.dropped = c.rbuf[:0], 0
		} else {
			l.closeConn(c)
		}
	}
	w.record(a, r, l.now)
	l.runq = append(l.runq, c)
}

// finishErr records c's attempt that ended before a response (a.err set)
// and queues the slot for its next ID.
func (l *evLoop) finishErr(c *evConn) {
	r := l.w.startLine(&c.a, l.fr.tmpls[l.fr.f.assign[c.a.i]])
	l.w.record(&c.a, r, time.Now())
	l.runq = append(l.runq, c)
}

// evHandOffBytes is how much of a response that net/http frames (chunked,
// ended by the close, or another shape the fast head does not take) the
// loop keeps and parses again from its start as parts arrive; past it the
// connection goes to a goroutine that streams the rest (handOff), so that
// such a body costs neither memory nor time beyond its prefix.
const evHandOffBytes = 64 << 10

// evloopHandOffs counts the responses handed off (tests check that the
// path ran).
var evloopHandOffs atomic.Int64

// handOff gives c's connection and the response read so far to a goroutine
// that reads the rest with net/http, as worker.readResp and finish do,
// records the line with its own worker and closes the connection; the slot
// comes back through l.back (takeBack) and is dialled again for its next ID.
// The request's deadline (its send time plus the timeout) and an abort
// (engine.abortAll) end the read as they end the goroutine engine's.
func (l *evLoop) handOff(c *evConn) {
	evloopHandOffs.Add(1)
	l.unlist(c)
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	f := os.NewFile(uintptr(c.fd), "")
	nc, err := net.FileConn(f) // a duplicate, in the runtime's poller
	f.Close()
	c.fd = -1
	c.state, c.used, c.out = evClosed, false, false
	if err != nil {
		c.a.err = &net.OpError{Op: "read", Net: "tcp", Addr: l.ra, Err: err}
		l.finishErr(c)
		return
	}
	got := append([]byte(nil), c.rbuf...)
	c.rbuf, c.dropped = c.rbuf[:0], 0
	l.away++
	var hw *worker
	if n := len(l.spare); n > 0 {
		hw, l.spare = l.spare[n-1], l.spare[:n-1]
	} else {
		hw = l.fr.newWorker()
	}
	go l.stream(c, hw, nc, got)
}

// stream is handOff's goroutine: it reads c's response from got (the bytes
// the loop received) then nc, records its line with hw, closes nc, and
// sends c back to its loop.
func (l *evLoop) stream(c *evConn, hw *worker, nc net.Conn, got []byte) {
	e, a := l.e, &c.a
	stop := context.AfterFunc(e.abortCtx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	nc.SetDeadline(a.sent.Add(e.timeout))
	if e.abortCtx.Err() != nil {
		nc.SetDeadline(time.Unix(1, 0))
	}
	r := hw.startLine(a, c.tg)
	r.Conn = c.name
	a.fast, a.resp, a.err = false, nil, nil
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(got), nc))
	resp, err := readResponse(br, c.tg.req)
	if err != nil {
		a.err = err
	} else if nb, berr := hw.readBody(resp); berr != nil {
		a.err = berr
	} else {
		a.resp = resp
		r.Code, r.BytesIn = resp.StatusCode, nb
		hw.capture(resp.Header)
	}
	end := time.Now()
	stop()
	nc.Close()
	hw.record(a, r, end)
	l.back <- evBack{c, hw}
	l.wake()
}

// wake wakes the loop from its wait through its eventfd, from another
// goroutine (an abort, a hand-off done); once the loop has closed the
// eventfd (closeAll: nothing is left for it to take) it does nothing, so a
// late wake never writes to a descriptor number the process reused.
func (l *evLoop) wake() {
	l.efdMu.Lock()
	defer l.efdMu.Unlock()
	if l.efd >= 0 {
		one := [8]byte{1}
		_, _ = unix.Write(l.efd, one[:])
	}
}

// evBack is a handed-off slot back from stream, with its worker.
type evBack struct {
	c *evConn
	w *worker
}

// takeBack queues the slots whose handed-off responses are recorded for
// their next ID (a fresh connection).
func (l *evLoop) takeBack() {
	for {
		select {
		case b := <-l.back:
			l.away--
			l.spare = append(l.spare, b.w)
			l.runq = append(l.runq, b.c)
		default:
			return
		}
	}
}
