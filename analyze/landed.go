package analyze

import (
	"fmt"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// landing is the first to last arrival of requests at one limiter, each
// arrival known as an interval [lo, hi] of the limiter's clock: lo == hi
// when the time is exact, [ms, ms+1ms-1ns] for a record to the ms (nginx's
// cached clock). It is the one owner of how wide a burst landed: the
// landed_within check judges its width, the harness line (limiterSeen) and
// the sender landings print it.
type landing struct {
	first, lastLo, last int64
	n                   int
}

// add counts an arrival in [lo, hi].
func (l *landing) add(lo, hi int64) {
	if l.n == 0 {
		l.first, l.lastLo, l.last = lo, lo, hi
	}
	l.n++
	l.first, l.lastLo, l.last = min(l.first, lo), max(l.lastLo, lo), max(l.last, hi)
}

// width is the most the arrivals can have been apart, ns: the last one's
// hi less the first one's lo (with records to the ms, up to 1 ms more than
// the records' difference); 0 without arrivals.
func (l landing) width() int64 { return l.last - l.first }

// recorded is the records' difference, ns: the last lo less the first lo.
func (l landing) recorded() int64 { return l.lastLo - l.first }

// checkLanded judges expect.landed_within (evidence.Expectation.LandedWithin):
// did the burst the scenario asks for land at the limiter as asked? It
// measures, per proxy whose log records join the requests, the first to
// last arrival of the scenario's requests on that proxy's clock, and takes
// the widest: an Envoy or lab proxy access log's entries (Input.AccessLogs;
// AccessLogResponse.ArrivedNs), an nginx access log's records
// (nginxrec.AccessRecord.AcceptMs: nginx's cached clock, the one limit_req
// decides by, to the ms, so the width is bounded from above: one ms more
// than the records' difference); when the logs do not record every sent
// request, the first to last receipt at the backend, if every sent request
// has one. A landing wider
// than asked, or one nothing measures, is an unknown check (the limiter
// was not tested against that burst: NOT_RUN), never a failure of the
// limiter. Met, the check passes only when the scenario checks something
// else; alone it is not_checked (a precondition proves nothing about the
// limiter).
func checkLanded(in *Input) (r Result) {
	w := time.Duration(in.Scenario.Expect.LandedWithin)
	if w <= 0 {
		return r
	}
	name := "burst landed within " + w.String()
	want := fmt.Sprintf("every sent request at the limiter within %v", w)
	reqs := &in.Evidence.Requests
	sent := reqs.Len() - len(reqs.NotSent)
	if sent <= 0 {
		r.add(name, report.CheckUnknown, want, "no request was sent")
		return r
	}
	seen, covered := make([]bool, reqs.Len()), 0
	var spans []landing
	var proxies []string
	at := map[string]int{} // proxy's name as reported -> index in spans
	isSent := sentMask(reqs)
	visitLandings(in, isSent, func(i int, proxy string, lo, hi int64) {
		if !seen[i] {
			seen[i], covered = true, covered+1
		}
		k, ok := at[proxy]
		if !ok {
			k, at[proxy] = len(spans), len(spans)
			spans, proxies = append(spans, landing{}), append(proxies, proxy)
		}
		spans[k].add(lo, hi)
	})
	var width time.Duration
	var where string
	switch {
	case covered == sent && len(spans) > 0:
		for k, sp := range spans {
			if d := time.Duration(sp.width()); d >= width {
				width, where = d, "in the access log of "+proxies[k]
			}
		}
		if len(spans) > 1 {
			where += fmt.Sprintf(" (the widest of %d proxies)", len(spans))
		}
	default:
		var sp landing
		for i := 0; i < reqs.Len(); i++ {
			if !isSent[i] {
				continue
			}
			at := in.ReceiptNs(i)
			if at <= 0 {
				r.add(name, report.CheckUnknown, want, fmt.Sprintf("%d of %d sent requests have an arrival in an access log and not every one has a receipt: the width that landed is not measured",
					covered, sent))
				return r
			}
			sp.add(at, at)
		}
		width, where = time.Duration(sp.width()), "at the backend (receipts)"
	}
	got := fmt.Sprintf("%d requests landed over %v %s", sent, width.Round(time.Microsecond), where)
	if width > w {
		r.add(name, report.CheckUnknown, want, got+": wider than the burst asked for, so the limiter was not tested against it")
		return r
	}
	e := in.Scenario.Expect
	e.LandedWithin = 0
	sc := in.Scenario
	if !e.Checks() && sc.IntendedLimit == nil && len(sc.Limits) == 0 && len(sc.Limiters) == 0 {
		r.add(name, report.CheckNotChecked, want, got+" (a precondition: nothing else is checked)")
		return r
	}
	r.add(name, report.CheckPass, want, got)
	return r
}

// visitLandings calls visit with each arrival of a sent request (isSent[i])
// at the limiter that the limiter's own logs record, on the clock of the
// proxy it names: every entry of an Envoy or lab proxy access log
// (Input.AccessLogs, AccessLogResponse.ArrivedNs: lo == hi, exact; a request
// several proxies logged, or one logged twice, is visited for each), then,
// for the sent requests no access log has, their first nginx access log
// record (nginxrec.AccessRecord.AcceptMs: nginx's cached clock, the one
// limit_req decides by, to the ms: the arrival is in [lo, hi] = [ms,
// ms+1ms-1ns]), named "nginx NAME (1 ms resolution)".
func visitLandings(in *Input, isSent []bool, visit func(i int, proxy string, lo, hi int64)) {
	reqs := &in.Evidence.Requests
	seen := make([]bool, reqs.Len())
	if j := in.AccessLogs; j != nil {
		for _, r := range j.Responses {
			if r.ArrivedNs <= 0 || !isSent[r.Request] {
				continue
			}
			seen[r.Request] = true
			visit(r.Request, r.Proxy, r.ArrivedNs, r.ArrivedNs)
		}
	}
	for k := range in.Evidence.Nginx {
		ng := &in.Evidence.Nginx[k]
		for _, a := range ng.Records {
			acc, ok := a.AcceptMs()
			if !ok || a.ID == "" {
				continue
			}
			i, ok := reqs.IDs.Lookup(a.ID)
			if !ok || !isSent[i] || seen[i] {
				continue
			}
			seen[i] = true
			lo := acc * int64(time.Millisecond)
			visit(int(i), "nginx "+ng.Proxy+" (1 ms resolution)", lo, lo+int64(time.Millisecond)-1)
		}
	}
}

// sentMask is true for every request that was sent (not in
// Requests.NotSent).
func sentMask(reqs *evidence.Requests) []bool {
	isSent := make([]bool, reqs.Len())
	for i := range isSent {
		isSent[i] = true
	}
	for _, i := range reqs.NotSent {
		isSent[i] = false
	}
	return isSent
}

// senderLandingsSection sets, for each sender of a sharded or multi-sender
// attack (Arrivals.Senders, senderRanges), how wide its requests landed at
// the limiter by the limiter's own logs (visitLandings): AtLimiter and
// LimiterWidthNs.
var senderLandingsSection = section{name: "sender landings", needs: []string{"arrivals", "access logs", "nginx"}, compute: func(in *Input) {
	a := in.Report.Arrivals
	if a == nil || len(a.Senders) == 0 {
		return
	}
	ranges := senderRanges(in.Evidence)
	if len(ranges) != len(a.Senders) {
		return
	}
	spans := make([]map[string]*landing, len(ranges))
	counted := make([]bool, in.Evidence.Requests.Len())
	visitLandings(in, sentMask(&in.Evidence.Requests), func(i int, proxy string, lo, hi int64) {
		k := senderOfLine(ranges, i)
		if k >= len(ranges) {
			return
		}
		if !counted[i] {
			counted[i] = true
			a.Senders[k].AtLimiter++
		}
		if spans[k] == nil {
			spans[k] = map[string]*landing{}
		}
		sp := spans[k][proxy]
		if sp == nil {
			sp = &landing{}
			spans[k][proxy] = sp
		}
		sp.add(lo, hi)
	})
	for k := range a.Senders {
		for _, sp := range spans[k] {
			a.Senders[k].LimiterWidthNs = max(a.Senders[k].LimiterWidthNs, sp.width())
		}
	}
}}
