package testfix

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// FreePortSpan returns a port base such that the span ports base ..
// base+span-1 of 127.0.0.1 could all be bound just now (each was bound and
// closed again), for tests of fixed-port layouts (`rlbench lab
// --listen-base`). Another process may still take one before the caller
// binds it: the caller's bind error is the check. It fails the test when 50
// random bases in 20000..59999 all had a port taken.
func FreePortSpan(t testing.TB, span int) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(40000-span)
		if err := bindSpan(base, span); err == nil {
			return base
		}
	}
	t.Fatalf("testfix: no free span of %d ports on 127.0.0.1 in 50 tries", span)
	return 0
}

func bindSpan(base, span int) error {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for p := base; p < base+span; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("port %d: %w", p, err)
		}
		lns = append(lns, ln)
	}
	return nil
}
