package evidence

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// ClockTolerance is how far a receipt's recv_ns may precede its request's
// sent_ns, and a request's sent_ns may lie outside its attack's
// start_ns..end_ns (attack.json), before the evidence contradicts itself:
// 10 ms. The attack and a backend on its host read one wall clock
// (CLOCK_REALTIME, which NTP may slew but not by that much between two
// reads of one request). Across hosts the tolerance grows by the largest
// clock_skew_ns the scenario's limiters declare (evidence.Limiter), by
// the client clock's max_error_ns (attack.json's clock, adjtimex(2)) and,
// in a merged run, by the shards' measured clock offset bound against the
// backend (merge.json, MergeRecord.ClockBound).
const ClockTolerance = 10 * time.Millisecond

// clockChecks are what the loader checks of the times on each line of
// requests.jsonl and receipts.jsonl; the zero value checks only that a
// request's sent_ns and latency_ns are a time span.
type clockChecks struct {
	// startNs and endNs are the attack's span (attack.json); 0 when unknown.
	startNs, endNs int64
	// tolNs is the clock tolerance, ns (ClockTolerance and more).
	tolNs int64
	// attackNotSent counts the requests attack.json reports as not sent
	// when it says the attack did not complete; -1 otherwise.
	attackNotSent int
}

// newClockChecks returns the checks for a scenario of attack a (nil when
// attack.json is missing), declared limiters and merge record m (nil when
// the run was not merged).
func newClockChecks(a *Attack, limiters []Limiter, m *MergeRecord) clockChecks {
	c := clockChecks{tolNs: int64(ClockTolerance), attackNotSent: -1}
	var skew int64
	for _, l := range limiters {
		skew = max(skew, l.ClockSkewNs)
	}
	if m != nil {
		b, _ := m.ClockBound()
		skew += b
	}
	c.tolNs += skew
	if a == nil {
		return c
	}
	if a.StartNs > 0 && a.EndNs >= a.StartNs {
		c.startNs, c.endNs = a.StartNs, a.EndNs
	}
	notSent := 0
	for _, p := range a.Phases {
		notSent += p.NotSent
		if p.Clock != nil && p.Clock.MaxErrorNs > 0 {
			c.tolNs = max(c.tolNs, int64(ClockTolerance)+skew+p.Clock.MaxErrorNs)
		}
	}
	if !a.Complete {
		c.attackNotSent = notSent
	}
	return c
}

// requestTimesError says why a request line's sent_ns and latency_ns are
// not a time span (negative, or sent_ns + latency_ns past int64), or nil.
func requestTimesError(sent, latency int64) error {
	switch {
	case sent < 0:
		return fmt.Errorf("sent_ns %d: negative", sent)
	case latency < 0:
		return fmt.Errorf("latency_ns %d: negative", latency)
	case sent > 1<<63-1-latency:
		return errors.New("sent_ns + latency_ns overflows int64")
	}
	return nil
}

// requestCodeError says why a request line's code is not one a client can
// have recorded, or nil: 0 (no response) or a three-digit HTTP status
// 100..999 (RFC 9110 section 15: a status code is three digits; Go's
// net/http refuses any other). A negative or wider code is not clamped into
// a class (65736 read as 65535, -429 as 0): the line is bad evidence.
func requestCodeError(code int64) error {
	if code == 0 || code >= 100 && code <= 999 {
		return nil
	}
	return fmt.Errorf("code %d: not an HTTP status (0 for no response, else 100..999)", code)
}

// outside reports whether a request sent at sent lies outside the attack's span.
func (c *clockChecks) outside(sent int64) bool {
	return c.startNs > 0 && (sent < c.startNs-c.tolNs || sent > c.endNs+c.tolNs)
}

// lineFinding is the first line of a file (or of a span of it) that shows
// one kind of contradiction, what it shows, and how many lines do.
type lineFinding struct {
	line int
	what string
	n    int
}

// note counts a line; what is called for the first only.
func (f *lineFinding) note(line int, what func() string) {
	if f.n == 0 {
		f.line, f.what = line, what()
	}
	f.n++
}

// merge adds g, a later span's finding whose lines start after offset.
func (f *lineFinding) merge(g lineFinding, offset int) {
	if g.n == 0 {
		return
	}
	if f.n == 0 {
		f.line, f.what = g.line+offset, g.what
	}
	f.n += g.n
}

// problem is the finding as a Problem of file (its path name), or false.
func (f *lineFinding) problem(file, name string) (Problem, bool) {
	if f.n == 0 {
		return Problem{}, false
	}
	msg := fmt.Sprintf("%s:%d: %s", name, f.line, f.what)
	if f.n > 1 {
		msg += fmt.Sprintf(" (%d lines so)", f.n)
	}
	return Problem{File: file, Msg: msg}, true
}

// IsNotSent reports whether request i was recorded with not_sent
// (Request.NotSent).
func (r *Requests) IsNotSent(i int) bool {
	if len(r.NotSent) == 0 {
		return false
	}
	k := sort.Search(len(r.NotSent), func(k int) bool { return r.NotSent[k] >= int32(i) })
	return k < len(r.NotSent) && r.NotSent[k] == int32(i)
}
