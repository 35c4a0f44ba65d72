package model

// BucketUse is one bucket (or window counter) a request uses under a model:
// its name as Result.Buckets names it ("key|default", "key|descriptor
// user=A", "zone|key", or the key), and the limit it enforces in requests:
// PerSec its sustained rate (tokens refilled per second, a window's limit
// over its width), Burst what it admits at once from full (a token bucket's
// capacity, a window's limit). PerSec is 0 for a bucket that is never
// refilled.
type BucketUse struct {
	Name   string
	PerSec float64
	Burst  float64
}

// Router tells which buckets each event uses under a model, in the order
// the limiter consumes them (Envoy: descriptors by ascending fill rate,
// then the default bucket; nginx: its zones in order). It decides nothing:
// Check and the simulators do. A Router is not safe for concurrent use.
type Router struct {
	c   checkModel
	buf []bucketRef
	ri  routeIn
}

// NewRouter returns a Router for m.
func NewRouter(m Model) *Router { return &Router{c: m.checker(0)} }

// Route appends to dst the buckets e uses (none: e is not limited, e.g. a
// fixed window with unlimited, an nginx zone whose key is empty; and an
// event whose key is unknown, whose bucket no one can tell). Only the
// Key, Attrs and KeyUnknown of evs's event j are read, Key and Attrs in
// evs's tables.
func (r *Router) Route(evs *Events, j int, dst []BucketUse) []BucketUse {
	if evs.keyUnknown(j) {
		return dst
	}
	r.ri = evs.routeAt(j)
	r.buf = r.c.route(&r.ri, r.buf[:0])
	for _, b := range r.buf {
		u := BucketUse{Name: b.id}
		switch p := b.params.(type) {
		case *tbParams:
			per := p.refill.perUnit
			if p.refill.period > 0 {
				per = p.refill.batch / float64(p.refill.period)
			}
			u.PerSec = per / p.cUp * 1e9 / float64(p.unit) // requests: a request takes cUp
			u.Burst = p.C / p.cUp
		case *fwParams:
			u.PerSec, u.Burst = float64(p.limit)*1e9/float64(p.width), float64(p.limit)
		case *slParams:
			u.PerSec, u.Burst = float64(p.limit)*1e9/float64(p.width), float64(p.limit)
		case *scParams:
			u.PerSec, u.Burst = p.limit*1e9/float64(p.width), p.limit
		}
		dst = append(dst, u)
	}
	return dst
}
