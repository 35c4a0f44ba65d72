//go:build linux

package attack

import (
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// alarm waits in the network poller for a timerfd(2) (CLOCK_MONOTONIC,
// relative): the waiting goroutine holds no P, and an idle P's thread,
// blocked in epoll_wait(2), wakes when it expires.
type alarm struct {
	halted atomic.Bool // set by interrupt
	fd     int
	f      *os.File // pollable: the fd is non-blocking (os.NewFile)
	buf    [8]byte
}

func newAlarm() (*alarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &alarm{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}, nil
}

// until waits until at; false when interrupted.
func (a *alarm) until(at time.Time) bool {
	d := time.Until(at)
	if a.halted.Load() {
		return false
	}
	if d <= 0 {
		return true
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(a.fd, 0, &spec, nil); err != nil {
		return false
	}
	_, err := a.f.Read(a.buf[:])
	return err == nil
}

// interrupt ends a wait in progress and every later one.
func (a *alarm) interrupt() {
	a.halted.Store(true)
	_ = a.f.SetReadDeadline(time.Unix(1, 0))
}

func (a *alarm) close() { _ = a.f.Close() }
