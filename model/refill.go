package model

// refill describes how a bucket gains tokens, in the bucket's level units
// and time units (integer ns, or ms for nginx). cum(t) is the refill in
// (ref, t] and cumBefore(p) in (ref, p) for a fixed reference, so that the
// refill over (s, t] is cum(t)-cum(s) and over [p, t] is cum(t)-cumBefore(p)
// when the refill is known exactly. When it is not (a timer of unknown
// phase), every such difference lies within [d-loSlack, d+upSlack].
type refill struct {
	// perUnit > 0: continuous refill of perUnit per time unit from ref.
	perUnit float64
	ref     int64
	// period > 0: batches of batch at phase+k*period, k >= 1 (a timer that
	// first fires one period after its creation at phase). When phaseKnown
	// is false the batches are modelled as continuous at batch/period with
	// one batch of slack either way.
	period     int64
	batch      float64
	phase      int64
	phaseKnown bool
	upSlack    float64
	loSlack    float64
}

func continuousRefill(perUnit float64, ref int64) refill {
	return refill{perUnit: perUnit, ref: ref}
}

// timerRefill: batch every period; phase is the creation time when known.
func timerRefill(batch float64, period int64, phase int64, known bool, ref int64) refill {
	if known {
		return refill{period: period, batch: batch, phase: phase, phaseKnown: true}
	}
	// Any window of length d holds at most floor(d/period)+1 and at least
	// floor(d/period) ticks of an unknown phase.
	return refill{perUnit: batch / float64(period), ref: ref, upSlack: batch, loSlack: batch}
}

// ticks returns the number of timer ticks at or before t.
func (f *refill) ticks(t int64) int64 {
	if t < f.phase+f.period {
		return 0
	}
	return (t - f.phase) / f.period
}

func (f *refill) cum(t int64) float64 {
	if f.phaseKnown {
		return f.batch * float64(f.ticks(t))
	}
	return f.perUnit * float64(t-f.ref)
}

func (f *refill) cumBefore(p int64) float64 {
	if f.phaseKnown {
		return f.batch * float64(f.ticks(p-1))
	}
	return f.perUnit * float64(p-f.ref)
}

// maxOver returns an upper bound of the refill over [p, t].
func (f *refill) maxOver(p, t int64) float64 {
	if t < p {
		return 0
	}
	return f.cum(t) - f.cumBefore(p) + f.upSlack
}
