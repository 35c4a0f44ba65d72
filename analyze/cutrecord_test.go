package analyze

import (
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// TestCutClientRecordReceiptsSentUnknown (issue 27): after a killed
// attack, receipts of IDs past the cut of requests.jsonl were listed as
// "phantom receipts (never sent)" though their IDs are in the plan's ID set
// and the requests were sent. When the client record is cut, such a
// receipt's sent status is unknown; only an ID outside the planned set is
// phantom. The verdict stays NOT_RUN.
func TestCutClientRecordReceiptsSentUnknown(t *testing.T) {
	// four requests recorded of a plan of r-01..r-06 (attack.IDs(6, "r")),
	// receipts of r-05 and r-06 (sent past the cut), and of x-01 (another
	// prefix) and stray (not an attack.IDs ID).
	build := func(t *testing.T, attack map[string]any) *ev {
		e := newEv(t)
		for i, id := range []string{"r-01", "r-02", "r-03", "r-04"} {
			e.request(id, int64(i), 1, 200)
		}
		e.attack = attack
		for _, id := range []string{"r-05", "r-06", "r-07", "x-01", "stray"} {
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0 + 10*ms})
		}
		return e
	}
	phases := []any{map[string]any{"config": map[string]any{"ids": 6}, "sent": 6, "complete": false, "interrupted": true}}
	for _, c := range []struct {
		name            string
		attack          map[string]any
		status          string
		unknown         []string
		phantom         []string
		unknownRowShown bool
	}{
		// SIGKILL: no attack.json; the count is unknown, r-07 may be planned.
		{"killed", nil, evidence.NotRun, []string{"r-05", "r-06", "r-07"}, []string{"stray", "x-01"}, true},
		// SIGINT: attack.json plans 6 IDs: r-07 is outside the set.
		{"interrupted", map[string]any{"complete": false, "interrupted": true, "sent": 6, "phases": phases}, evidence.NotRun,
			[]string{"r-05", "r-06"}, []string{"r-07", "stray", "x-01"}, true},
		// A complete record: every receipt the record lacks is phantom, as before.
		{"complete", map[string]any{"complete": true, "sent": 4}, evidence.Fail, nil, []string{"r-05", "r-06", "r-07", "stray", "x-01"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := judged(t, build(t, c.attack).write(), "cut-"+c.name)
			if s.Status != c.status {
				t.Fatalf("status %s, want %s; reasons:\n%s", s.Status, c.status, reasons(s))
			}
			rc := s.Receipts
			if rc.SentUnknown != len(c.unknown) || !equalIDs(rc.SentUnknownIDs, c.unknown) || rc.Phantom != len(c.phantom) || !equalIDs(rc.PhantomIDs, c.phantom) {
				t.Fatalf("sent unknown %d %v, want %v; phantom %d %v, want %v", rc.SentUnknown, rc.SentUnknownIDs, c.unknown, rc.Phantom, rc.PhantomIDs, c.phantom)
			}
			row := checkNamed(s, "receipts with sent status unknown (client record cut)")
			if (row != nil) != c.unknownRowShown || row != nil && (row.Status != report.CheckUnknown || row.Got != report.IDsGot(len(c.unknown), c.unknown)) {
				t.Fatalf("sent-unknown check %+v, want shown %v", row, c.unknownRowShown)
			}
			if p := checkNamed(s, "phantom receipts (never sent)"); p == nil || p.Got != report.IDsGot(len(c.phantom), c.phantom) {
				t.Fatalf("phantom check %+v", p)
			}
		})
	}
	// IDs from a file (not attack.IDs's shape): the planned set is unknown,
	// so no receipt the cut record lacks is shown never sent.
	e := newEv(t)
	e.request("alpha", 0, 1, 200)
	e.attack = nil
	e.receipts = append(e.receipts, evidence.Receipt{ID: sp("gamma"), RecvNs: t0 + 10*ms})
	s := judged(t, e.write(), "cut-idsfile")
	if s.Status != evidence.NotRun || s.Receipts.Phantom != 0 || s.Receipts.SentUnknown != 1 {
		t.Fatalf("ids from a file: %s, receipts %+v", s.Status, s.Receipts)
	}
}

func equalIDs(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}
