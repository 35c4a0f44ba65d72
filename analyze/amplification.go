package analyze

import (
	"fmt"
	"math"
	"sort"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// retrySplit is, per request, its receipts and how many of them are
// explained retries and unexplained re-sends. retries and resent are nil
// while no request has several receipts (most runs): read them through
// retriesOf and resentOf.
type retrySplit struct {
	receipts receiptCounts
	retries  []int32
	resent   []int32
	by       map[string]int
}

// retriesOf is request i's receipts explained as proxy retries.
func (s *retrySplit) retriesOf(i int) int {
	if s.retries == nil {
		return 0
	}
	return int(s.retries[i])
}

// resentOf is request i's receipts re-sent by the client.
func (s *retrySplit) resentOf(i int) int {
	if s.resent == nil {
		return 0
	}
	return int(s.resent[i])
}

// receiptCounts counts the receipts of each request: a byte a request,
// the counts of 255 and more in big (a request re-sent or retried that
// often is rare; most have 0 or 1).
type receiptCounts struct {
	small []uint8
	big   map[int32]int32
}

// newReceiptCounts returns the zero counts of n requests.
func newReceiptCounts(n int) receiptCounts {
	return receiptCounts{small: make([]uint8, n), big: map[int32]int32{}}
}

// inc counts one more receipt of request r.
func (c receiptCounts) inc(r int32) {
	if c.small[r] < math.MaxUint8 {
		c.small[r]++
		return
	}
	c.big[r]++ // the count is math.MaxUint8 + big[r]
}

// at is request i's receipts.
func (c receiptCounts) at(i int) int32 {
	n := int32(c.small[i])
	if n == math.MaxUint8 {
		n += c.big[int32(i)]
	}
	return n
}

// several reports whether some request has several receipts.
func (c receiptCounts) several() bool {
	for _, n := range c.small {
		if n > 1 {
			return true
		}
	}
	return false
}

// splitRetries explains each request's repeated receipts. A request with k
// receipts has allowed = the distinct x-envoy-attempt-count values among
// them when every one carries the header, else the server tries nginx
// logged for it (nj, may be nil), else 1; max(k - max(allowed, 1), 0) of
// them are re-sent by the client, the rest beyond the first are proxy
// retries. receipts counts each request's receipts (recs.Request); the
// split keeps it.
func splitRetries(reqs *evidence.Requests, recs *evidence.Receipts, nj *nginxJoin, receipts receiptCounts) *retrySplit {
	n := reqs.Len()
	s := &retrySplit{receipts: receipts, by: map[string]int{}}
	// distinct[i] holds the distinct attempt counts of request i, only for
	// requests with several receipts (most have one), every one with an
	// attempt count (none has without the column).
	distinct := map[int32]map[int]bool{}
	if recs.Attempt != nil {
		withAttempt := make([]int32, n)
		for k, r := range recs.Request {
			if r >= 0 && int(r) < n && recs.AttemptOf(k) > 0 {
				withAttempt[r]++
			}
		}
		for k, r := range recs.Request {
			if r >= 0 && int(r) < n && s.receipts.at(int(r)) > 1 && withAttempt[r] == s.receipts.at(int(r)) {
				if distinct[r] == nil {
					distinct[r] = map[int]bool{}
				}
				distinct[r][recs.AttemptOf(k)] = true
			}
		}
	}
	for i := 0; i < n; i++ {
		k := s.receipts.at(i)
		if k <= 1 {
			continue
		}
		if s.retries == nil {
			s.retries, s.resent = make([]int32, n), make([]int32, n)
		}
		allowed, by := int32(1), ""
		switch {
		case distinct[int32(i)] != nil:
			allowed, by = int32(len(distinct[int32(i)])), report.ExplainedByAttemptCount
		case nj != nil && nj.tries[i] > 0:
			allowed, by = int32(nj.tries[i]), report.ExplainedByNginxTries
		}
		s.resent[i] = max(k-max(allowed, 1), 0)
		s.retries[i] = k - 1 - s.resent[i]
		if s.retries[i] > 0 {
			s.by[by] += int(s.retries[i])
		}
	}
	return s
}

// passedLimiter reports whether request i passed the limiter: a receipt,
// a 2xx, or an nginx record that says so.
func passedLimiter(reqs *evidence.Requests, s *retrySplit, nj *nginxJoin, i int) bool {
	if s.receipts.at(i) > 0 || reqs.Class[i] == evidence.ClassAdmitted {
		return true
	}
	return nj != nil && nj.tries[i] >= 0 && !nj.rejected[i] && nj.producer[i] != ""
}

// amplificationSection counts the receipts per request
// (ScenarioReport.Amplification).
var amplificationSection = section{name: "amplification", needs: []string{"nginx", "receipts", "faults"}, compute: func(in *Input) {
	in.Report.Amplification = amplificationOf(in, in.retries)
}}

// amplificationOf computes the Amplification section: when some request
// has several receipts, a receipt carries an attempt count, nginx retried a
// request, or the scenario expects an amplification; nil otherwise.
func amplificationOf(in *Input, s *retrySplit) *report.Amplification {
	ev, sr := in.Evidence, in.Report
	reqs := &ev.Requests
	show := ev.Receipts.Attempt != nil || in.Scenario.Expect.Amplification != nil
	if in.nginx != nil {
		for _, p := range in.nginx.report.Proxies {
			show = show || p.Retried > 0
		}
	}
	show = show || s.receipts.several()
	if !show {
		return nil
	}
	a := &report.Amplification{ByAttempts: []int{}, ExplainedBy: s.by, Windows: []report.AmplificationWindow{}}
	wins := make([]report.AmplificationWindow, len(sr.FaultWindows))
	for w, f := range sr.FaultWindows {
		wins[w] = report.AmplificationWindow{Name: f.Name, Target: f.Target, BeginNs: f.BeginNs, EndNs: f.EndNs}
	}
	outside := report.AmplificationWindow{Name: "outside fault windows"}
	for i := 0; i < reqs.Len(); i++ {
		if !passedLimiter(reqs, s, in.nginx, i) {
			continue
		}
		k := int(s.receipts.at(i))
		a.Passed++
		a.Attempts += k
		a.MaxAttempts = max(a.MaxAttempts, k)
		for len(a.ByAttempts) <= k {
			a.ByAttempts = append(a.ByAttempts, 0)
		}
		a.ByAttempts[k]++
		a.ProxyRetries += s.retriesOf(i)
		a.ClientResends += s.resentOf(i)
		in := false
		for w := range wins {
			if t := reqs.SentNs.At(i); t >= wins[w].BeginNs && t <= wins[w].EndNs {
				wins[w].Passed++
				wins[w].Attempts += k
				in = true
			}
		}
		if !in {
			outside.Passed++
			outside.Attempts += k
		}
	}
	a.Factor = ratio(a.Attempts, a.Passed)
	if len(wins) > 0 {
		for _, w := range append(wins, outside) {
			w.Factor = ratio(w.Attempts, w.Passed)
			a.Windows = append(a.Windows, w)
		}
	}
	return a
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// checkAmplification judges expect.amplification: the attempts per request
// that passed the limiter.
//
// Without expect.amplification, proxy retries (a retry storm: Envoy
// retry_policy, nginx proxy_next_upstream) FAIL "backend amplification":
// the receipts show the backend received more attempts than the limiter
// passed, so the rate limit does not bound the backend's load, and nothing
// in the plan says that is acceptable. It is a FAIL, not inconclusive: the
// evidence is complete and the harness delivered every premise (the
// attempt counts or nginx's upstream lists explain each retry); only the
// user can say how much amplification to accept, by declaring
// expect.amplification, which then judges it. A PASS here would contradict
// the receipts on file.
func checkAmplification(in *Input) (r Result) {
	ex := in.Scenario.Expect.Amplification
	a := in.Report.Amplification
	if ex == nil {
		if a != nil && a.ProxyRetries > 0 {
			r.add("backend amplification", report.CheckFail, "no proxy retries, or an expect.amplification that allows them",
				fmt.Sprintf("%.2f×: %s (%d attempts for %d requests that passed the limiter); declare expect.amplification to judge it",
					a.Factor, plural(a.ProxyRetries, "proxy retry", "proxy retries"), a.Attempts, a.Passed))
		}
		return r
	}
	v := amplificationVacuous(ex)
	if a == nil || a.Passed == 0 {
		if v != nil {
			r.notChecked(v, "no request passed the limiter")
			return r
		}
		r.add("upstream attempts per passed request", report.CheckUnknown, ex.String(), "no request passed the limiter")
		return r
	}
	got := fmt.Sprintf("%.2f (%d attempts for %d requests; %d proxy retries, %d client re-sends)", a.Factor, a.Attempts, a.Passed,
		a.ProxyRetries, a.ClientResends)
	if v != nil {
		r.notChecked(v, got)
		return r
	}
	r.add("upstream attempts per passed request", passIf(ex.Contains(a.Factor)), ex.String(), got)
	return r
}

// resentIDs returns up to SampleIDs IDs of requests with client re-sends,
// sorted.
func resentIDs(reqs *evidence.Requests, s *retrySplit) []string {
	ids := []string{}
	for i, k := range s.resent {
		if k > 0 {
			ids = append(ids, reqs.IDs.ID(i))
		}
	}
	sort.Strings(ids)
	return sampleOf(ids)
}
