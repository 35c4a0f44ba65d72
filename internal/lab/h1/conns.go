package h1

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// Conns is a server's set of open connections (of type C, one per
// accepted net.Conn), so that closing the server can close them and wait
// for their goroutines. The zero value is ready to use.
type Conns[C comparable] struct {
	mu      sync.Mutex
	set     map[C]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup
}

// Serve accepts connections from ln until it is closed (a timeout error is
// retried), wraps each with wrap and runs serve on it in its own
// goroutine, tracked until serve returns. A connection accepted once
// closing has begun is closed unserved, and Serve returns.
func (s *Conns[C]) Serve(ln net.Listener, wrap func(net.Conn) C, serve func(C)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		cc := wrap(c)
		if !s.add(cc) {
			_ = c.Close()
			return
		}
		go func() {
			defer s.done(cc)
			serve(cc)
		}()
	}
}

func (s *Conns[C]) add(c C) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	if s.set == nil {
		s.set = map[C]struct{}{}
	}
	s.set[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Conns[C]) done(c C) {
	s.mu.Lock()
	delete(s.set, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close marks the set closing (Serve then serves no new connection) and
// calls each on every connection still open; Wait waits for their serve
// calls to return.
func (s *Conns[C]) Close(each func(C)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	for c := range s.set {
		each(c)
	}
}

// Wait waits until the serve of every connection Serve started has
// returned.
func (s *Conns[C]) Wait() { s.wg.Wait() }

// Closing reports whether Close has begun.
func (s *Conns[C]) Closing() bool { return s.closing.Load() }
