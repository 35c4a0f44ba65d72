package proxy

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"time"
)

// Clock is a proxy's time source: the token buckets, the access log, the
// retry back-off timer and the outlier detection interval timer use it.
// Tests inject one to drive refills, back-offs and sweeps deterministically;
// the default is the wall clock (Config.Now, else time.Now, with
// time.AfterFunc).
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed and returns
	// a function that cancels the call (true if it stopped it before it ran).
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// lockedRand is the proxy's one random source (runtime percentages, retry
// back-off jitter, the round robin seed): a PCG seeded from Config.Seed, so
// a run with a given seed draws the same sequence for the same requests.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

// newRand returns a source seeded with seed; seed 0 draws a seed from
// crypto/rand. It returns the effective seed (shown in /config_dump).
func newRand(seed uint64) (*lockedRand, uint64) {
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	return &lockedRand{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, seed
}

// Uint64 is Envoy's Random::RandomGenerator::random().
func (l *lockedRand) Uint64() uint64 {
	l.mu.Lock()
	v := l.r.Uint64()
	l.mu.Unlock()
	return v
}

// Float64 returns a value in [0, 1).
func (l *lockedRand) Float64() float64 {
	l.mu.Lock()
	v := l.r.Float64()
	l.mu.Unlock()
	return v
}

// hit draws one runtime feature decision: true with probability pct/100
// (0 never, 100 always), like Envoy's featureEnabled on a percentage. A nil
// pct is 0%.
func (l *lockedRand) hit(pct *float64) bool {
	if pct == nil || *pct <= 0 {
		return false
	}
	if *pct >= 100 {
		return true
	}
	return l.Float64()*100 < *pct
}
