package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// XRate is golang.org/x/time/rate as a gateway's in-process middleware:
// one rate.Limiter (a token bucket of Burst tokens, full at the start,
// refilled continuously at PerSecond tokens per second; Limiter.AllowN
// takes one token when there is one) for every request, or one per key.
//
// Its clock never goes backwards: concurrent requests read the time before
// they take the limiter's lock, and rate.Limiter, given a time before its
// last, counts the tokens of that time again when time moves on (its
// advance sets last = t); XRate decides a request that read an earlier
// time at the latest time it has decided by (Decision.At), as a monotonic
// clock read under the lock would.
type XRate struct {
	perSecond float64
	burst     int
	perKey    bool

	mu     sync.Mutex
	last   time.Time
	global *rate.Limiter
	keys   map[string]*rate.Limiter
}

// MaxXRateKeys bounds the keys of a per-key XRate; a request with a new
// key beyond it is a limiter error.
const MaxXRateKeys = 1 << 20

// NewXRate returns an XRate of perSecond tokens per second (> 0, finite)
// and burst tokens (>= 1), per key or for every request.
func NewXRate(perSecond float64, burst int, perKey bool) (*XRate, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 0) {
		return nil, fmt.Errorf("xrate: rate %v: want a finite number > 0 (tokens per second)", perSecond)
	}
	if burst < 1 {
		return nil, fmt.Errorf("xrate: burst %d: want >= 1", burst)
	}
	x := &XRate{perSecond: perSecond, burst: burst, perKey: perKey, keys: map[string]*rate.Limiter{}}
	if !perKey {
		x.global = rate.NewLimiter(rate.Limit(perSecond), burst)
	}
	return x, nil
}

// errTooManyKeys is the error of a key beyond MaxXRateKeys.
var errTooManyKeys = errors.New("xrate: too many keys")

// Allow takes a token of key's limiter (the one limiter when not per key) at now.
func (x *XRate) Allow(_ context.Context, key string, now time.Time) (Decision, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if now.Before(x.last) {
		now = x.last
	} else {
		x.last = now
	}
	l := x.global
	if x.perKey {
		if l = x.keys[key]; l == nil {
			if len(x.keys) >= MaxXRateKeys {
				return Decision{}, errTooManyKeys
			}
			l = rate.NewLimiter(rate.Limit(x.perSecond), x.burst)
			x.keys[key] = l
		}
	}
	return Decision{Allowed: l.AllowN(now, 1), At: now}, nil
}
