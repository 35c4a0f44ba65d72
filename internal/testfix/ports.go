package testfix

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePortSpan returns a port base such that the span ports base ..
// base+span-1 of 127.0.0.1 could all be bound just now (each was bound and
// closed again), for tests of fixed-port layouts (`rlbench lab
// --listen-base`). Another process may still take one before the caller
// binds it: the caller's bind error is the check. The bases are drawn from
// 11000 up to the kernel's ephemeral port range
// (/proc/sys/net/ipv4/ip_local_port_range, default 32768), where the port-0
// binds of other tests do not land. It fails the test when 50 random bases
// all had a port taken.
func FreePortSpan(t testing.TB, span int) int {
	t.Helper()
	low, high := 11000, ephemeralLow()-span
	if high <= low {
		t.Fatalf("testfix: no room for %d ports between %d and the ephemeral range", span, low)
	}
	for range 50 {
		base := low + rand.IntN(high-low)
		if err := bindSpan(base, span); err == nil {
			return base
		}
	}
	t.Fatalf("testfix: no free span of %d ports on 127.0.0.1 in 50 tries", span)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 2048 {
		return 32768
	}
	return n
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
