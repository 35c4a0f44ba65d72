package analyze

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// TestAdmittedRangeLeavesOutNeverSent: a request the client recorded as
// never sent (not_sent: its connection failed, as every one after a killed
// backend) cannot have passed a limiter: the admitted count's range tops
// at the sent requests that may have passed, not at every request
// (previous release: 4..10, so "admitted: 0..6" was unknown, for 4 admitted, 2 without response and 4 never
// sent). The report's JSON keeps the count, so a report read back (groups,
// diff) gives the same range.
func TestAdmittedRangeLeavesOutNeverSent(t *testing.T) {
	e := newEv(t)
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 0, Max: 6})}
	for i := range 10 {
		id := fmt.Sprintf("id-%02d", i)
		r := evidence.Request{ID: id, Target: "backend", Method: "GET", SentNs: t0 + int64(i)*1000, LatencyNs: 1_000_000}
		switch {
		case i < 4:
			r.Code, r.BytesIn = 200, 2
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: r.SentNs + 500})
		case i < 6:
			r.Error = "read: connection reset by peer" // sent, no response: may have passed
		default:
			r.NotSent, r.Error = true, "dial tcp 127.0.0.1:1: connect: connection refused"
		}
		e.requests = append(e.requests, r)
	}
	e.attack["sent"] = 6
	e.attack["not_sent"] = 4
	rep := run(t, e.write())
	s := rep.Scenarios[0]
	if s.Totals.Sent != 10 || s.Totals.Passed != 4 || s.Totals.NotSent != 4 {
		t.Fatalf("totals %+v", s.Totals)
	}
	if hi := s.Totals.PassedMax(s.Receipts.IndeterminateWithReceipt); hi != 6 {
		t.Errorf("PassedMax %d, want 6: 4 admitted and 2 without response; the 4 never sent cannot have passed", hi)
	}
	c := mustCheck(t, s, "admitted")
	if c.Got != "4..6 (2 without response)" || c.Status != report.CheckPass {
		t.Errorf("admitted: %+v, want got 4..6 (2 without response), PASS (previous release: unknown, 4..10 reached past 6)", c)
	}
	if g := rep.Groups; len(g) != 1 || g[0].Admitted == nil || *g[0].Admitted != (evidence.Range{Min: 4, Max: 6}) {
		t.Errorf("group %+v", g)
	}
	b, err := json.Marshal(s.Totals)
	must(t, err)
	var back report.Classes
	must(t, json.Unmarshal(b, &back))
	if back != s.Totals {
		t.Errorf("JSON %s reads back as %+v, want %+v", b, back, s.Totals)
	}
}
