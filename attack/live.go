package attack

import (
	"sync/atomic"

	"github.com/rlbench/rlbench/evidence"
)

// Live counters: what a live exporter (the remote write of package
// export/remotewrite) reads once a second while Run runs. They are off
// unless Progress.CountLive was called before Run; when on, each result
// costs one classification (evidence.Classifier.ClassifyRequest: a few
// lookups in the line's captured headers) and three atomic adds, and the
// reader never blocks a worker.

// liveCounts are one Run's live counters, per attack target.
type liveCounts struct {
	cls     *evidence.Classifier
	names   []string
	targets []liveTarget
}

type liveTarget struct {
	classes  [evidence.NumClasses]atomic.Int64
	notSent  atomic.Int64
	inFlight atomic.Int64
}

// record counts line r of target ti: its class, or not sent; inFlight says
// whether its send was counted in flight (engine.began).
func (l *liveCounts) record(ti int, r *evidence.Request, inFlight bool) {
	t := &l.targets[ti]
	if r.NotSent {
		t.notSent.Add(1)
	} else {
		t.classes[l.cls.ClassifyRequest(r)].Add(1)
	}
	if inFlight {
		t.inFlight.Add(-1)
	}
}

// LiveSnapshot is a Progress's live counters read at one instant
// (Progress.Live).
type LiveSnapshot struct {
	// Targets holds one entry per attack target, in Options.Targets order
	// (empty until Run has validated its options).
	Targets []TargetLive
	// Pacing is the pacing error so far (send time minus intended send
	// time, ns) over every paced flow's sends; N is 0 when nothing paced
	// was sent. Its quantiles are those of evidence.AttackSummary's, read
	// while sends are still counted (each bucket is exact, the set may lag
	// by the sends of the reading instant).
	Pacing evidence.AttackQuantiles
}

// TargetLive is one target's live counts.
type TargetLive struct {
	// Name is the target's name (Target.Name).
	Name string
	// Classes counts the responses by class (indexed by evidence.Class), as
	// classified by the classifier given to CountLive; code 0 (no
	// response) is evidence.ClassNoResponse. Requests that never left are
	// NotSent, in no class.
	Classes [evidence.NumClasses]int64
	// NotSent counts requests that never left the client.
	NotSent int64
	// InFlight is the number of requests whose first byte has left (for
	// HTTP/2: whose RoundTrip began) and whose result is not recorded yet.
	InFlight int64
}

// CountLive turns on the live counters read by Live: responses per target
// and class (classified by c; nil classifies by the built-in marks,
// evidence.Marks.Classify), requests in flight per target, and the pacing
// error. Call it before Run.
func (p *Progress) CountLive(c *evidence.Classifier) {
	p.liveOn = true
	p.liveCls = c
}

// Live reads the live counters; zero until Run began, and without Targets
// unless CountLive was called. Safe from any goroutine while Run runs.
func (p *Progress) Live() LiveSnapshot {
	var s LiveSnapshot
	if l := p.live.Load(); l != nil {
		s.Targets = make([]TargetLive, len(l.targets))
		for i := range l.targets {
			t := &l.targets[i]
			tl := TargetLive{Name: l.names[i], NotSent: t.notSent.Load(), InFlight: t.inFlight.Load()}
			for c := range t.classes {
				tl.Classes[c] = t.classes[c].Load()
			}
			s.Targets[i] = tl
		}
	}
	if ps := p.paces.Load(); ps != nil && len(*ps) > 0 {
		var h hist
		for _, x := range *ps {
			h.merge(x)
		}
		// Sends still being counted: merge read each n after its buckets,
		// so n may count adds whose bucket it did not see; the ranks are
		// taken from the buckets' own total, which they always reach.
		var total uint64
		for i := range h.counts {
			total += h.counts[i].Load()
		}
		h.n.Store(total)
		s.Pacing = h.quantiles()
	}
	return s
}
