package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// boundSection is the legacy limits' configured bound over the run's span
// (ScenarioReport.Bound).
var boundSection = section{name: "bound", needs: []string{"totals"}, compute: func(in *Input) {
	in.Report.Bound = configuredBound(in.Scenario.Limits, in.Report.StartNs, in.Report.EndNs)
}}

// configuredBound computes the most admissions the limiters allow between
// start and end (unix ns). With several limiters in series (a local bucket in
// front of a global limit) the smallest bound holds. It returns nil when no
// limiter is described.
//
// Token bucket (Envoy local_ratelimit): each of Buckets buckets starts full with
// max_tokens and gains tokens_per_fill at every fill_interval tick of a timer
// that runs from the bucket's creation; bound = Buckets × (max_tokens +
// tokens_per_fill × ticks inside [start, end]). When the creation time is
// unknown, the worst phase is assumed: floor(D/fill_interval)+1 ticks. With
// refill "continuous" (Envoy >= 1.31) bound = Buckets × floor(max_tokens +
// tokens_per_fill × D / fill_interval).
//
// Fixed window (envoyproxy/ratelimit): windows aligned to multiples of the unit
// since the Unix epoch (or starting at the first hit); bound = limit × windows
// touched by [start, end], so a run straddling a boundary may admit 2 × limit.
func configuredBound(limits []evidence.LimitSpec, start, end int64) *report.Bound {
	if len(limits) == 0 || start == 0 {
		return nil
	}
	d := end - start
	if d < 0 {
		d = 0
	}
	var b *report.Bound
	for _, l := range limits {
		var allowed int
		var why string
		switch l.Kind {
		case evidence.LimitTokenBucket:
			buckets := max(l.Buckets, 1)
			fi := l.FillInterval
			var ticks int64
			switch {
			case fi <= 0:
			case l.StartNs > 0:
				// ticks at StartNs + k*fi for k >= 1 inside [start, end].
				kLo := max(int64(1), -floorDiv(-(start-l.StartNs), fi)) // ceil
				kHi := floorDiv(end-l.StartNs, fi)
				ticks = kHi - kLo + 1
				ticks = max(ticks, 0)
			default:
				ticks = d/fi + 1
			}
			allowed = buckets * (l.MaxTokens + l.TokensPerFill*int(ticks))
			why = fmt.Sprintf("token bucket: %d bucket(s) × (max_tokens %d + tokens_per_fill %d × %d refill(s) of %s in %s) = %d",
				buckets, l.MaxTokens, l.TokensPerFill, ticks, time.Duration(fi), time.Duration(d), allowed)
			if l.Refill == evidence.RefillContinuous && fi > 0 {
				// Envoy >= 1.31 refills continuously: at most max_tokens at
				// the start plus tokens_per_fill/fill_interval for the
				// duration, whole tokens.
				per := int(math.Floor(float64(l.MaxTokens) + float64(l.TokensPerFill)*float64(d)/float64(fi) + 1e-9))
				allowed = buckets * per
				why = fmt.Sprintf("token bucket (continuous refill): %d bucket(s) × floor(max_tokens %d + tokens_per_fill %d × %s / %s) = %d",
					buckets, l.MaxTokens, l.TokensPerFill, time.Duration(d), time.Duration(fi), allowed)
			}
		case evidence.LimitFixedWindow:
			div := model.UnitSeconds(l.Unit)
			if div == 0 {
				continue
			}
			divNs := div * int64(time.Second)
			var windows int64
			if l.WindowStart == evidence.WindowFirstHit {
				windows = d/divNs + 1
			} else {
				windows = end/divNs - start/divNs + 1
			}
			allowed = l.Limit * int(windows)
			why = fmt.Sprintf("fixed window: limit %d per %s × %d window(s) touched (%s) = %d",
				l.Limit, l.Unit, windows, windowMode(l.WindowStart), allowed)
		default:
			continue
		}
		if b == nil || allowed < b.Allowed {
			if b == nil {
				b = &report.Bound{}
			}
			b.Allowed = allowed
		}
		b.Explain = append(b.Explain, why)
	}
	if b != nil {
		b.DurationNs = d
	}
	return b
}

func windowMode(s string) string {
	if s == evidence.WindowFirstHit {
		return "windows start at the first hit"
	}
	return "epoch-aligned"
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
