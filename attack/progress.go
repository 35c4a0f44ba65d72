package attack

import (
	"sort"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// Progress holds live counters of one Run (Options.Progress): the caller
// creates it with new(Progress), passes it in, and reads Snapshot from any
// goroutine while Run runs and after. The attack library only counts; a
// caller renders (the CLI draws a bar on a terminal and prints plain lines
// otherwise). Counting costs a few atomic adds per request, and nothing
// when Options.Progress is nil. A Progress serves one Run.
type Progress struct {
	total      atomic.Int64
	startNs    atomic.Int64 // the start instant; 0 while warming
	endNs      atomic.Int64 // when Run returned; 0 while it runs
	plannedNs  atomic.Int64 // the last paced flow's last intended send; 0 if none
	allPaced   atomic.Bool
	recorded   atomic.Int64
	notSent    atomic.Int64
	noResponse atomic.Int64
	// codes[c] counts responses with status c (100..999; ReadResponse
	// accepts three digits only).
	codes [1000]atomic.Int64

	// Live counters (live.go): liveOn and liveCls are set by CountLive
	// before Run; live by begin, paces (the paced flows' pacing error
	// histograms) by start.
	liveOn  bool
	liveCls *evidence.Classifier
	live    atomic.Pointer[liveCounts]
	paces   atomic.Pointer[[]*hist]
}

// ProgressSnapshot is a Progress read at one instant.
type ProgressSnapshot struct {
	// Total is the number of IDs the attack sends (after sharding).
	Total int
	// Started is false while connections are being warmed (and, with
	// StartAt, while the start is held); Done once Run has returned.
	Started, Done bool
	// Elapsed is the time since the start (until Done: the attack's length).
	Elapsed time.Duration
	// Recorded counts requests with a result line; Sent those of them
	// that left the client (Recorded - NotSent); Answered those with a
	// response (any status); NoResponse those that left but got none
	// (code 0, indeterminate).
	Recorded, Sent, Answered, NotSent, NoResponse int
	// Codes counts the responses per status code, by code.
	Codes []CodeCount
	// PerSec is Recorded / Elapsed, requests per second.
	PerSec float64
	// Left estimates the time to the end: the paced flows' remaining
	// schedule, or for unpaced traffic the remaining IDs at the rate so
	// far, whichever is longer; 0 when unknown or done.
	Left time.Duration
}

// CodeCount is one status code's count in a ProgressSnapshot.
type CodeCount struct {
	Code, N int
}

// begin records the total before warming and returns the live counters
// (nil unless CountLive).
func (p *Progress) begin(pr *prepared) *liveCounts {
	p.total.Store(int64(pr.ids))
	if !p.liveOn {
		return nil
	}
	l := &liveCounts{cls: p.liveCls, names: pr.tnames, targets: make([]liveTarget, len(pr.tnames))}
	p.live.Store(l)
	return l
}

// start records the start instant and the paced schedule's end.
func (p *Progress) start(at time.Time, e *engine) {
	var planned time.Duration
	all := true
	var paces []*hist
	for _, fr := range e.flows {
		f := fr.f
		if !f.paced {
			all = false
			continue
		}
		paces = append(paces, &fr.pace)
		if len(f.ids) == 0 {
			continue
		}
		last := int64(len(f.ids) - 1)
		if f.sched != nil {
			last = f.sched[len(f.sched)-1]
		}
		planned = max(planned, time.Duration(float64(last+1)/f.perSec*float64(time.Second)))
	}
	p.allPaced.Store(all)
	if p.liveOn {
		p.paces.Store(&paces)
	}
	if planned > 0 {
		p.plannedNs.Store(at.Add(planned).UnixNano())
	}
	p.startNs.Store(at.UnixNano())
}

func (p *Progress) finish() { p.endNs.Store(time.Now().UnixNano()) }

// record counts one result line.
func (p *Progress) record(code int, notSent bool) {
	p.recorded.Add(1)
	switch {
	case notSent:
		p.notSent.Add(1)
	case code == 0:
		p.noResponse.Add(1)
	case code > 0 && code < len(p.codes):
		p.codes[code].Add(1)
	}
}

// Snapshot reads the counters. Counts are read one after another, so a
// snapshot taken while requests finish may be off by the few that finished
// meanwhile; the last snapshot after Run returned is exact.
func (p *Progress) Snapshot() ProgressSnapshot {
	s := ProgressSnapshot{Total: int(p.total.Load())}
	start, end := p.startNs.Load(), p.endNs.Load()
	s.Started, s.Done = start != 0, end != 0
	now := time.Now().UnixNano()
	if end != 0 {
		now = end
	}
	if start != 0 {
		s.Elapsed = time.Duration(now - start)
	}
	s.Recorded = int(p.recorded.Load())
	s.NotSent = int(p.notSent.Load())
	s.NoResponse = int(p.noResponse.Load())
	s.Sent = s.Recorded - s.NotSent
	for c := range p.codes {
		if n := p.codes[c].Load(); n > 0 {
			s.Codes = append(s.Codes, CodeCount{Code: c, N: int(n)})
			s.Answered += int(n)
		}
	}
	sort.Slice(s.Codes, func(i, j int) bool { return s.Codes[i].Code < s.Codes[j].Code })
	if s.Elapsed > 0 {
		s.PerSec = float64(s.Recorded) / s.Elapsed.Seconds()
	}
	if s.Started && !s.Done {
		if pl := p.plannedNs.Load(); pl > now {
			s.Left = time.Duration(pl - now)
		}
		if !p.allPaced.Load() && s.Recorded > 0 && s.Recorded < s.Total {
			est := time.Duration(float64(s.Elapsed) * float64(s.Total-s.Recorded) / float64(s.Recorded))
			s.Left = max(s.Left, est)
		}
	}
	return s
}
