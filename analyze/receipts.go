package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// receiptsSection reconciles the receipts with the requests
// (ScenarioReport.Receipts; Input.Received, ReceiptNs; the retry split and
// the receipts per target for totalsSection).
var receiptsSection = section{name: "receipts", needs: []string{"nginx"}, compute: func(in *Input) {
	in.targetReceipts = reconcile(in)
}}

// reconcile joins receipts to requests by ID (sr.Receipts), sets
// in.received and in.recvNs, and returns the number of requests with a
// receipt per target index.
func reconcile(in *Input) []int {
	ev, sr := in.Evidence, in.Report
	reqs, recs := &ev.Requests, &ev.Receipts
	rc := &sr.Receipts
	rc.Total = recs.Len()
	count := newReceiptCounts(reqs.Len())
	in.received = make([]bool, reqs.Len())
	in.firstRecv = make([]int32, reqs.Len())
	for i := range in.firstRecv {
		in.firstRecv[i] = -1
	}
	phantom := map[string]int{}
	pi := 0
	for k, r := range recs.Request {
		switch {
		case r >= 0:
			count.inc(r)
			in.received[r] = true
			// a receipt time of 0 (not recorded) is no time: a later receipt
			// of the request replaces it (ReceiptNs 0 means none)
			if f := in.firstRecv[r]; f < 0 || recs.RecvNs.At(int(f)) == 0 || recs.RecvNs.At(k) < recs.RecvNs.At(int(f)) {
				in.firstRecv[r] = int32(k)
			}
		case r == evidence.NoID:
			rc.WithoutID++
		default:
			phantom[recs.PhantomIDs[pi]]++
			pi++
		}
	}
	sample := func(l *[]string, id string) {
		if len(*l) < report.SampleIDs {
			*l = append(*l, id)
		}
	}
	in.retries = splitRetries(reqs, recs, in.nginx, count)
	perTarget := make([]int, len(reqs.Targets))
	var dups []string
	for i := range reqs.Len() {
		c, n := reqs.Class[i], count.at(i)
		if n > 0 {
			perTarget[reqs.Target[i]]++
		}
		if n > 1 {
			rc.Duplicates += int(n) - 1
			rc.ProxyRetries += in.retries.retriesOf(i)
			rc.Resent += in.retries.resentOf(i)
			dups = append(dups, reqs.IDs.ID(i))
		}
		rejected := c.ProxyRejected() || in.nginx != nil && in.nginx.rejected[i]
		switch {
		case c.FromBackend() && n > 0:
			rc.AdmittedWithReceipt++
		case c.FromBackend():
			rc.AdmittedWithoutReceipt++
			sample(&rc.LostIDs, reqs.IDs.ID(i))
		case rejected && n > 0:
			rc.RejectedWithReceipt++
			sample(&rc.LeakedIDs, reqs.IDs.ID(i))
		case c == evidence.ClassNoResponse:
			rc.Indeterminate++
			if n > 0 {
				rc.IndeterminateWithReceipt++
			}
		}
	}
	// A client record cut short (a killed attack) lacks requests sent past
	// the cut: a receipt of an ID of the plan's ID set that the record
	// lacks may be one of them, its sent status unknown; only an ID outside
	// the plan's set is shown never sent.
	var inPlan func(string) bool
	cut := len(phantom) > 0 && clientRecordCut(ev)
	if cut {
		inPlan = plannedIDs(ev)
	}
	var unknown []string
	phantoms := make([]string, 0, len(phantom))
	for id, n := range phantom {
		if cut && (inPlan == nil || inPlan(id)) {
			unknown = append(unknown, id)
			rc.SentUnknown += n
		} else {
			phantoms = append(phantoms, id)
			rc.Phantom += n
		}
		if n > 1 {
			rc.Duplicates += n - 1
			rc.Resent += n - 1
			dups = append(dups, id)
		}
	}
	sort.Strings(dups)
	sort.Strings(phantoms)
	sort.Strings(unknown) // before ResentIDs takes from it: map order is no order
	for _, id := range dups {
		sample(&rc.DuplicateIDs, id)
	}
	rc.ResentIDs = resentIDs(reqs, in.retries)
	for _, id := range append(phantoms, unknown...) {
		if phantom[id] > 1 && len(rc.ResentIDs) < report.SampleIDs {
			rc.ResentIDs = append(rc.ResentIDs, id)
		}
	}
	for _, id := range phantoms {
		sample(&rc.PhantomIDs, id)
	}
	for _, id := range unknown {
		sample(&rc.SentUnknownIDs, id)
	}
	return perTarget
}

// checkAdmitted: the requests that passed every limiter within the
// expected range: a fixed one, or "model", the limiters' end-to-end model
// bound for this run (ScenarioReport.Model; without one the check is
// unknown: nothing to compare with is not a PASS). Requests without
// response that may have passed make the count a range; when they decide
// the check it is unknown.
func checkAdmitted(in *Input) (r Result) {
	ex, t := in.Scenario.Expect, in.Report.Totals
	if ex.Admitted == nil {
		return r
	}
	lo, hi := t.Passed, t.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)
	got := strconv.Itoa(lo)
	if hi != lo {
		got = fmt.Sprintf("%d..%d (%d without response)", lo, hi, hi-lo)
	}
	if v := admittedVacuous(in); v != nil {
		r.notChecked(v, got)
		return r
	}
	want, wantText := ex.Admitted.Range, ex.Admitted.String()
	if ex.Admitted.Model {
		m := in.Report.Model
		if m == nil {
			why := in.noModel
			if why == "" {
				why = "no limiter model"
			}
			r.add("admitted", report.CheckUnknown, "model", got+"; admitted: model needs a limiter model ("+why+")")
			return r
		}
		want = evidence.Range{Min: m.Min, Max: m.Max}
		wantText = fmt.Sprintf("model %d..%d", m.Min, m.Max)
	}
	st := report.CheckFail
	switch {
	case want.Contains(lo) && want.Contains(hi):
		st = report.CheckPass
	case hi >= want.Min && lo <= want.Max:
		st = report.CheckUnknown // some no-response requests decide it
	}
	if why := premiseMissed(in, want, lo, hi); st == report.CheckFail && !ex.Admitted.Model && why != "" {
		st, got = report.CheckUnknown, got+", "+why
	}
	r.add("admitted", st, wantText, got)
	return r
}

// timingPremise says why a fixed count range that failed follows from the
// admitted count's missed premise (premiseMissed), or "".
func timingPremise(in *Input) string {
	ex, t := in.Scenario.Expect, in.Report.Totals
	if ex.Admitted == nil || ex.Admitted.Model {
		return ""
	}
	lo, hi := t.Passed, t.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)
	if ex.Admitted.Range.Contains(lo) && ex.Admitted.Range.Contains(hi) {
		return ""
	}
	if why := premiseMissed(in, ex.Admitted.Range, lo, hi); why != "" {
		return fmt.Sprintf("follows from the admitted count %d, %s", lo, why)
	}
	return ""
}

func checkClasses(in *Input) (r Result) {
	ex := in.Scenario.Expect
	for _, k := range sortedKeys(ex.Classes) {
		want := ex.Classes[k]
		n, ok := in.Report.Totals.Get(k)
		switch v := classVacuous(in, k, want); {
		case !ok:
			r.add("class "+k, report.CheckFail, want.String(), "unknown class")
		case v != nil:
			r.notChecked(v, strconv.Itoa(n))
		default:
			st, got := passIf(want.Contains(n)), strconv.Itoa(n)
			if why := timingPremise(in); st == report.CheckFail && why != "" {
				st, got = report.CheckUnknown, got+", "+why
			}
			r.add("class "+k, st, want.String(), got)
		}
	}
	return r
}

func checkReceipts(in *Input) (r Result) {
	rc := in.Report.Receipts
	r.add("admitted without receipt (lost)", passIf(rc.AdmittedWithoutReceipt == 0), "0", report.IDsGot(rc.AdmittedWithoutReceipt, rc.LostIDs))
	r.add("rejected with receipt (leaked)", passIf(rc.RejectedWithReceipt == 0), "0", report.IDsGot(rc.RejectedWithReceipt, rc.LeakedIDs))
	resent := report.IDsGot(rc.Resent, rc.ResentIDs)
	if rc.ProxyRetries > 0 {
		resent += fmt.Sprintf("; %d more are proxy retries", rc.ProxyRetries)
	}
	st := passIf(rc.Resent == 0)
	if st == report.CheckFail && in.nginx != nil {
		// Every re-send went through an nginx proxy whose access log, which
		// tells nginx's retries (splitRetries), is absent: lost evidence.
		reqs, k := &in.Evidence.Requests, 0
		for i := range reqs.Len() {
			if in.nginx.unloggedTarget(reqs, i) {
				k += in.retries.resentOf(i)
			}
		}
		if k == rc.Resent {
			st, resent = report.CheckUnknown, resent+"; every one sent to an nginx proxy whose access log, which tells nginx's retries from re-sends, is absent ("+
				strings.Join(sortedKeys(in.nginx.unlogged), ", ")+")"
		}
	}
	r.add("duplicate receipts (re-sent)", st, "0", resent)
	r.add("phantom receipts (never sent)", passIf(rc.Phantom == 0), "0", report.IDsGot(rc.Phantom, rc.PhantomIDs))
	if rc.SentUnknown > 0 {
		r.add("receipts with sent status unknown (client record cut)", report.CheckUnknown, "0", report.IDsGot(rc.SentUnknown, rc.SentUnknownIDs))
	}
	return r
}

// checkReceiptsEqualAdmitted: every admitted ID has a receipt and no
// rejected one has. It compares IDs, and its got says what it counted: the
// IDs with receipts and, when those hold more receipts than IDs, how many
// and why ("5 IDs with receipts (15 receipts: 10 proxy retries)"). The
// receipts beyond an ID's first are judged elsewhere: client re-sends by
// "duplicate receipts (re-sent)", proxy retries by expect.amplification
// (checkAmplification, which fails a retry storm nobody declared).
func checkReceiptsEqualAdmitted(in *Input) (r Result) {
	if !in.Scenario.Expect.ReceiptsEqualAdmitted {
		return r
	}
	t := in.Report.Totals
	rc, lo := in.Report.Receipts, t.N[evidence.ClassAdmitted]+t.N[evidence.ClassBackend4xx]+t.N[evidence.ClassBackend429]+t.N[evidence.ClassBackend5xx]
	got := rc.AdmittedWithReceipt + rc.IndeterminateWithReceipt
	r.add("receipts = admitted", passIf(got == lo && rc.AdmittedWithoutReceipt == 0), strconv.Itoa(lo),
		receiptsCounted(in, rc.AdmittedWithReceipt+rc.IndeterminateWithReceipt+rc.RejectedWithReceipt))
	return r
}

// receiptsCounted describes ids IDs with receipts: their number when each
// has one receipt ("5"), else what their receipts are ("5 IDs with
// receipts (15 receipts: 10 proxy retries)"): the receipts beyond an ID's
// first split into proxy retries and client re-sends, and the rejected
// IDs among them.
func receiptsCounted(in *Input, ids int) string {
	s := in.retries
	var receipts, retries, resent int
	for i := range s.receipts.small {
		receipts += int(s.receipts.at(i))
		retries += s.retriesOf(i)
		resent += s.resentOf(i)
	}
	if receipts == ids {
		return strconv.Itoa(ids)
	}
	var why []string
	if retries > 0 {
		why = append(why, plural(retries, "proxy retry", "proxy retries"))
	}
	if resent > 0 {
		why = append(why, plural(resent, "client re-send", "client re-sends"))
	}
	got := fmt.Sprintf("%s (%s", plural(ids, "ID with receipts", "IDs with receipts"), plural(receipts, "receipt", "receipts"))
	if len(why) > 0 {
		got += ": " + strings.Join(why, ", ")
	}
	if n := in.Report.Receipts.RejectedWithReceipt; n > 0 {
		got += fmt.Sprintf("; %d of the IDs rejected", n)
	}
	return got + ")"
}

// checkWithoutID: a receipt without X-Rlbench-Id is a request the attack did
// not send (it bypassed the proxy, or lost the header on the way).
func checkWithoutID(in *Input) (r Result) {
	n := in.Report.Receipts.WithoutID
	r.add("receipts without id (unidentified)", passIf(n == 0), "0", strconv.Itoa(n))
	return r
}
