package analyze

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// Kinds of RateHeaderMismatch.Kind.
const (
	// HeaderLimit: x-ratelimit-limit (or RateLimit-Limit, or its ;w=
	// window) differs from the configured limit.
	HeaderLimit = "limit"
	// HeaderRemainingRose: remaining went up between two responses of one
	// key within one window (the later surely decided after the earlier).
	HeaderRemainingRose = "remaining_rose"
	// HeaderRemainingOnReject: a rejection of the limiter says remaining > 0.
	HeaderRemainingOnReject = "remaining_on_reject"
	// HeaderReset: reset lies outside the window (or does not end it).
	HeaderReset = "reset"
)

// headerWindow is what a limiter tells of the window a header belongs to.
type headerWindow struct {
	limit    int64 // configured limit; -1 unknown
	seconds  int64 // window or refill length in s; 0 unknown
	width    int64 // ns of an aligned window, 0 when windows are not aligned to something known
	origin   int64 // aligned windows start at origin + k*width
	monotone bool  // remaining cannot rise within one window
}

func (r *limiterRun) headerWindow(i int) headerWindow {
	hw := headerWindow{limit: -1}
	if r.decl.RLS != nil {
		set := r.set(i)
		u := set.firstLimited(true)
		if u < 0 || set.rule == nil {
			return hw
		}
		rule := r.rules[set.rule[u]]
		hw.limit = int64(rule.Limit.RequestsPerUnit)
		hw.seconds = model.UnitSeconds(rule.Limit.Unit)
		if r.decl.RLS.Align != model.AlignFirstHit {
			hw.width, hw.monotone = hw.seconds*int64(time.Second), true
		}
		return hw
	}
	s := r.decl.Model
	switch s.Kind {
	case model.KindFixedWindow:
		hw.limit, hw.seconds = int64(s.Limit), model.UnitSeconds(s.Unit)
		if s.Align != model.AlignFirstHit {
			hw.width, hw.monotone = hw.seconds*int64(time.Second), true
		}
	case model.KindEnvoyLocal:
		if len(s.Descriptors) > 0 {
			return hw // the header reports whichever bucket decided
		}
		hw.limit = int64(s.MaxTokens)
		hw.seconds = int64((time.Duration(s.FillInterval) + time.Second - 1) / time.Second)
		if t, err := time.Parse(time.RFC3339Nano, s.TimerStart); err == nil && s.TimerStart != "" {
			hw.width, hw.origin, hw.monotone = int64(s.FillInterval), t.UnixNano(), true
		}
	case model.KindTokenBucket:
		hw.limit = int64(s.Capacity)
	case model.KindSlidingLog, model.KindSlidingCounter:
		hw.limit = int64(s.Limit)
		hw.seconds = int64((time.Duration(s.Window) + time.Second - 1) / time.Second)
	}
	return hw
}

// headersSection checks the responses' rate-limit headers against the
// limiters (ScenarioReport.RateLimitHeaders).
var headersSection = section{name: "headers", needs: []string{"receipts", "limiters"}, compute: func(in *Input) {
	in.Report.RateLimitHeaders = in.limiters.rateHeaders(in, in.received)
}}

// rateHeaders checks every response's rate-limit headers against the
// limiter that set them.
func (ls *limiterSet) rateHeaders(in *Input, received []bool) *report.RateHeaderReport {
	reqs := &in.Evidence.Requests
	if len(reqs.Rate) == 0 {
		return nil
	}
	rep := &report.RateHeaderReport{Responses: len(reqs.Rate), Mismatches: []report.RateHeaderMismatch{}}
	c := &headerCheck{ls: ls, reqs: reqs, received: received, found: map[string]*report.RateHeaderMismatch{}, windows: map[string][]headerObs{}}
	c.flagged = ls != nil && slicesAny(ls.runs, func(r *limiterRun) bool { return r.decl.RateLimitHeaders })
	for _, h := range reqs.Rate {
		r := c.setter(h)
		if r == nil {
			rep.Unattributed++
			continue
		}
		rep.Checked++
		c.response(r, h)
	}
	c.remainingRose()
	for _, kind := range []string{HeaderLimit, HeaderRemainingRose, HeaderRemainingOnReject, HeaderReset} {
		if m := c.found[kind]; m != nil {
			rep.Mismatches = append(rep.Mismatches, *m)
		}
	}
	return rep
}

// headerObs is a remaining value request i's response reported.
type headerObs struct {
	i      int
	remain int64
}

// headerCheck is the rate-limit headers of a run being checked.
type headerCheck struct {
	ls       *limiterSet
	reqs     *evidence.Requests
	received []bool
	// flagged: some limiter is declared with rate_limit_headers.
	flagged bool
	// found holds the mismatches by kind.
	found map[string]*report.RateHeaderMismatch
	// windows holds the remaining values per limiter, key (and epoch) and
	// aligned window.
	windows map[string][]headerObs
}

// flag records a mismatch of kind at request id.
func (c *headerCheck) flag(kind, id, detail string) {
	m := c.found[kind]
	if m == nil {
		m = &report.RateHeaderMismatch{Kind: kind, IDs: []string{}, Detail: id + ": " + detail}
		c.found[kind] = m
	}
	m.Count++
	if len(m.IDs) < report.SampleIDs {
		m.IDs = append(m.IDs, id)
	}
}

// setter returns the limiter that set the headers h (nil: none or several
// could have): among those the request reached (declared with
// rate_limit_headers when some are), the one whose limit is h's, or the
// only one.
func (c *headerCheck) setter(h evidence.RateHeaders) *limiterRun {
	ls, i := c.ls, int(h.Request)
	var cands []int
	if ls != nil {
		for k, r := range ls.runs {
			if (!c.flagged || r.decl.RateLimitHeaders) && ls.reaches(k, i, c.reqs, c.received) {
				cands = append(cands, k)
			}
		}
	}
	var pick []int
	for _, k := range cands {
		if hw := ls.runs[k].headerWindow(i); hw.limit >= 0 && hw.limit == h.Limit {
			pick = append(pick, k)
		}
	}
	if len(pick) == 0 && len(cands) == 1 {
		pick = cands
	}
	if len(pick) != 1 {
		return nil
	}
	return ls.runs[pick[0]]
}

// response checks the headers h against r, the limiter that set them:
// the limit (and window), remaining on a rejection, reset; and keeps
// remaining for remainingRose.
func (c *headerCheck) response(r *limiterRun, h evidence.RateHeaders) {
	reqs, i := c.reqs, int(h.Request)
	id := reqs.IDs.ID(i)
	hw := r.headerWindow(i)
	if hw.limit >= 0 && h.Limit >= 0 && h.Limit != hw.limit {
		c.flag(HeaderLimit, id, fmt.Sprintf("%slimit %d, %s configures %d", h.Prefix, h.Limit, r.decl.Name, hw.limit))
	} else if h.Window > 0 && hw.seconds > 0 && h.Window != hw.seconds && r.decl.Stage == evidence.StageGlobal {
		c.flag(HeaderLimit, id, fmt.Sprintf("%slimit window w=%d, the rule's unit is %d s", h.Prefix, h.Window, hw.seconds))
	}
	if h.Remaining > 0 && containsClass(r.rejects, reqs.Class[i]) && !c.received[i] {
		c.flag(HeaderRemainingOnReject, id, fmt.Sprintf("rejected (%s) with %sremaining %d", reqs.Class[i], h.Prefix, h.Remaining))
	}
	lo, hi := reqs.SentNs.At(i), reqs.EndNs.At(i)
	if h.Reset >= 0 && hw.seconds > 0 {
		c.reset(h, hw, id, lo, hi)
	}
	if hw.monotone && h.Remaining >= 0 && floorDiv(lo-hw.origin, hw.width) == floorDiv(hi-hw.origin, hw.width) {
		key, ok := r.eventKey(i, reqs)
		if ok {
			for _, e := range r.epochsOf(lo, hi) {
				wk := fmt.Sprintf("%s\x00%s%s\x00%d", r.decl.Name, key, e, floorDiv(lo-hw.origin, hw.width))
				c.windows[wk] = append(c.windows[wk], headerObs{i, h.Remaining})
			}
		}
	}
}

// reset checks h's reset of request id, sent at lo and answered at hi
// (unix ns), against the window hw: it ends the aligned window the request
// lies in, or is no longer than the window.
func (c *headerCheck) reset(h evidence.RateHeaders, hw headerWindow, id string, lo, hi int64) {
	reset := h.Reset * int64(time.Second)
	switch {
	case hw.width > 0 && floorDiv(lo-hw.origin, hw.width) == floorDiv(hi-hw.origin, hw.width):
		end := hw.origin + (floorDiv(lo-hw.origin, hw.width)+1)*hw.width
		if end-hi > reset+int64(time.Second) || reset > end-lo+int64(time.Second) {
			c.flag(HeaderReset, id, fmt.Sprintf("%sreset %d s, the window ends %s after the request", h.Prefix, h.Reset,
				time.Duration(end-lo).Round(time.Millisecond)))
		}
	case hw.width == 0 && h.Reset > hw.seconds:
		c.flag(HeaderReset, id, fmt.Sprintf("%sreset %d s is longer than the %d s window", h.Prefix, h.Reset, hw.seconds))
	}
}

// remainingRose flags, per window, remaining values that rose between
// responses surely decided one after the other.
func (c *headerCheck) remainingRose() {
	reqs := c.reqs
	keys := make([]string, 0, len(c.windows))
	for k := range c.windows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		os := c.windows[k]
		byHi := append([]headerObs(nil), os...)
		sort.Slice(byHi, func(a, b int) bool { return reqs.EndNs.At(byHi[a].i) < reqs.EndNs.At(byHi[b].i) })
		byLo := append([]headerObs(nil), os...)
		sort.Slice(byLo, func(a, b int) bool { return reqs.SentNs.At(byLo[a].i) < reqs.SentNs.At(byLo[b].i) })
		p := 0
		best := headerObs{i: -1}
		for _, o := range byLo {
			for ; p < len(byHi) && reqs.EndNs.At(byHi[p].i) < reqs.SentNs.At(o.i); p++ {
				if best.i < 0 || byHi[p].remain < best.remain {
					best = byHi[p]
				}
			}
			if best.i >= 0 && o.remain > best.remain {
				c.flag(HeaderRemainingRose, reqs.IDs.ID(o.i), fmt.Sprintf("remaining %d after %s had %d in the same window",
					o.remain, reqs.IDs.ID(best.i), best.remain))
			}
		}
	}
}

func containsClass(cs []evidence.Class, c evidence.Class) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func slicesAny[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}

// checkRateHeaders: the rate-limit headers agree with the limiter that set
// them: its configured limit, remaining never rising within a window and
// 0 on its rejections, reset within (and ending) the window.
func checkRateHeaders(in *Input) (r Result) {
	rh := in.Report.RateLimitHeaders
	if rh == nil || rh.Checked == 0 {
		return r
	}
	names := map[string]string{
		HeaderLimit:             "rate-limit headers: limit = configured limit",
		HeaderRemainingRose:     "rate-limit headers: remaining non-increasing within a window",
		HeaderRemainingOnReject: "rate-limit headers: remaining 0 on a rejection",
		HeaderReset:             "rate-limit headers: reset within the window",
	}
	for _, kind := range []string{HeaderLimit, HeaderRemainingRose, HeaderRemainingOnReject, HeaderReset} {
		got := "0 of " + fmt.Sprint(rh.Checked)
		st := report.CheckPass
		for _, m := range rh.Mismatches {
			if m.Kind == kind {
				st = report.CheckFail
				got = report.IDsGot(m.Count, m.IDs) + "; " + m.Detail
			}
		}
		r.add(names[kind], st, "0 mismatches", strings.TrimSpace(got))
	}
	return r
}
