//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

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

// burstFloor is the send spread of a burst sender that costs nothing: it
// opens n connections to the URL's host, then GOMAXPROCS goroutines write
// one minimal request on each, back to back, in one raw write(2) each, as
// rlbench's burst senders do, with nothing else in the process; the answers
// are read only afterwards. Its spread is what the machine allows (the
// kernel's loopback sends, and the target's reads on the same cores);
// rlbench's spread is compared with it in the same run.
func burstFloor(args []string) error {
	fs := flag.NewFlagSet("burstfloor", flag.ContinueOnError)
	n := fs.Int("n", 2000, "requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *n < 1 {
		return errors.New("usage: measure burstfloor [-n N] URL (N >= 1)")
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil {
		return err
	}
	raws := make([]syscall.RawConn, *n)
	reqs := make([][]byte, *n)
	conns := make([]net.Conn, *n)
	for i := range conns {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			return err
		}
		conns[i] = c
		if raws[i], err = c.(*net.TCPConn).SyscallConn(); err != nil {
			return err
		}
		reqs[i] = fmt.Appendf(nil, "GET / HTTP/1.1\r\nHost: %s\r\nX-Request-Id: floor-%d-%d\r\n\r\n", u.Host, time.Now().UnixNano(), i)
	}
	senders := min(runtime.GOMAXPROCS(0), *n)
	sent := make([]int64, *n)
	var ready, done sync.WaitGroup
	ready.Add(senders)
	done.Add(senders)
	release := make(chan struct{})
	for s := range senders {
		go func() {
			defer done.Done()
			ready.Done()
			<-release
			for i := s * *n / senders; i < (s+1)**n/senders; i++ {
				sent[i] = time.Now().UnixNano()
				b := reqs[i]
				_ = raws[i].Write(func(fd uintptr) bool {
					if r, _, errno := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))); errno != 0 || int(r) != len(b) {
						sent[i] = 0
					}
					return true
				})
			}
		}()
	}
	ready.Wait()
	runtime.GC()
	close(release)
	done.Wait()
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range sent {
		if s == 0 {
			return errors.New("burstfloor: a write failed or was short")
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Read(make([]byte, 512))
		c.Close()
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"spread_ns": hi - lo, "requests": *n, "senders": senders})
}
