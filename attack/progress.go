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
//
// It is the one owner of an attack's live counts: the progress bar, the
// event stream (package events) and the live metrics pushed by remote
// write (export/remotewrite) read the same Snapshot.
type Progress struct {
	// Classifier, if set before Run, classifies the responses counted per
	// target (TargetProgress.Classes) with a scenario's rules
	// (evidence.Scenario.Classify); nil: the built-in marks
	// (evidence.Marks.Classify).
	Classifier *evidence.Classifier

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
	// targets are the per-target counters, made by begin (nil before).
	targets atomic.Pointer[[]targetCounters]
	// pace is the pacing error of the paced sends so far (SentNs -
	// IntendedNs, ns).
	pace hist
}

// targetCounters are one target's live counters.
type targetCounters struct {
	name string
	// started counts requests whose send began (sending), recorded those
	// with a result line; started - recorded are in flight.
	started, recorded, notSent atomic.Int64
	classes                    [evidence.NumClasses]atomic.Int64
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
	// InFlight counts the requests whose send began and that have no
	// result line yet (the sum of Targets' InFlight).
	InFlight int
	// Targets are the counts per attack target, in Options.Targets order
	// (empty before Run has begun).
	Targets []TargetProgress
	// PacingErrorNs are the quantiles of the paced sends' lateness so far
	// (SentNs - IntendedNs, ns; the figure evidence.AttackPacing.ErrorNs
	// gives at the end); N is 0 without paced sends.
	PacingErrorNs evidence.AttackQuantiles
}

// TargetProgress is one attack target's counts in a ProgressSnapshot.
type TargetProgress struct {
	// Name is the target's name (Target.Name, else its URL's host).
	Name string
	// Recorded counts its requests with a result line, Sent those of them
	// that left the client, NotSent the others; InFlight those whose send
	// began without a result yet.
	Recorded, Sent, NotSent, InFlight int
	// Classes counts the recorded requests that left the client per
	// response class (index: evidence.Class; no_response is code 0).
	Classes [evidence.NumClasses]int
	// PerSec is Sent / the snapshot's Elapsed, requests per second (0
	// before the start).
	PerSec float64
}

// CodeCount is one status code's count in a ProgressSnapshot.
type CodeCount struct {
	Code, N int
}

// begin records the total before warming.
func (p *Progress) begin(pr *prepared) {
	p.total.Store(int64(pr.ids))
	ts := make([]targetCounters, len(pr.tnames))
	for i, n := range pr.tnames {
		ts[i].name = n
	}
	p.targets.Store(&ts)
}

// target is the counters of target index t (nil before begin or out of range).
func (p *Progress) target(t int) *targetCounters {
	ts := p.targets.Load()
	if ts == nil || t < 0 || t >= len(*ts) {
		return nil
	}
	return &(*ts)[t]
}

// sending counts a request to target t whose send begins.
func (p *Progress) sending(t int) {
	if tc := p.target(t); tc != nil {
		tc.started.Add(1)
	}
}

// paced counts one paced send's lateness (ns).
func (p *Progress) paced(lateNs int64) { p.pace.add(lateNs) }

// start records the start instant and the paced schedule's end.
func (p *Progress) start(at time.Time, e *engine) {
	var planned time.Duration
	all := true
	for _, fr := range e.flows {
		f := fr.f
		if !f.paced {
			all = false
			continue
		}
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
	if planned > 0 {
		p.plannedNs.Store(at.Add(planned).UnixNano())
	}
	p.startNs.Store(at.UnixNano())
}

func (p *Progress) finish() { p.endNs.Store(time.Now().UnixNano()) }

// record counts one result line r to target index t; started says
// whether sending counted it.
func (p *Progress) record(t int, r *evidence.Request, started bool) {
	code, notSent := r.Code, r.NotSent
	p.recorded.Add(1)
	switch {
	case notSent:
		p.notSent.Add(1)
	case code == 0:
		p.noResponse.Add(1)
	case code > 0 && code < len(p.codes):
		p.codes[code].Add(1)
	}
	tc := p.target(t)
	if tc == nil {
		return
	}
	if !started {
		tc.started.Add(1)
	}
	if notSent {
		tc.notSent.Add(1)
	} else {
		tc.classes[p.Classifier.ClassifyRequest(r)].Add(1)
	}
	tc.recorded.Add(1)
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
	if ts := p.targets.Load(); ts != nil {
		s.Targets = make([]TargetProgress, len(*ts))
		for i := range *ts {
			tc := &(*ts)[i]
			tp := &s.Targets[i]
			tp.Name = tc.name
			// recorded before started: a request recorded meanwhile was
			// started before, so InFlight is never negative.
			tp.Recorded = int(tc.recorded.Load())
			tp.InFlight = max(int(tc.started.Load())-tp.Recorded, 0)
			tp.NotSent = int(tc.notSent.Load())
			for c := range tc.classes {
				tp.Classes[c] = int(tc.classes[c].Load())
				tp.Sent += tp.Classes[c]
			}
			if s.Elapsed > 0 {
				tp.PerSec = float64(tp.Sent) / s.Elapsed.Seconds()
			}
			s.InFlight += tp.InFlight
		}
	}
	s.PacingErrorNs = p.pace.quantiles()
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
