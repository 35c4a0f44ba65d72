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

// TestKilledSenderReceiptsSentUnknown: a plan's attack step of 2 senders
// (shards of r-01..r-10) whose sender 1 was killed before its attack.json:
// attack.json holds sender 0's shard (5 IDs of the attack's 10) and says
// incomplete. Receipts of sender 1's IDs, r-06 .. r-10 included (past the
// 5 IDs sender 0 planned), have their sent status unknown, never phantom;
// r-11, outside the attack's 10, is phantom (previous release: r-06 ..
// r-10 phantom, the planned set bounded by the surviving shard's 5 IDs).
func TestKilledSenderReceiptsSentUnknown(t *testing.T) {
	e := newEv(t)
	for i, id := range []string{"r-01", "r-03", "r-05", "r-07", "r-09"} {
		e.request(id, int64(i), 1, 200)
	}
	shard := map[string]any{"index": 0, "count": 2, "ids": 5, "total_ids": 10, "id_set_digest": "sha256:ids", "digest": "sha256:attack",
		"flows": []any{map[string]any{"flow": "", "ids": 5, "total_ids": 10, "id_set_digest": "sha256:ids", "config_digest": "sha256:c"}}}
	e.attack = map[string]any{"complete": false, "error": "1 of 2 senders failed", "sent": 5,
		"phases": []any{map[string]any{"config": map[string]any{"ids": 5}, "sent": 5, "complete": true, "shard": shard}}}
	for _, id := range []string{"r-02", "r-08", "r-10", "r-11"} {
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0 + 10*ms})
	}
	s := judged(t, e.write(), "killed-sender")
	rc := s.Receipts
	if s.Status != evidence.NotRun || !equalIDs(rc.SentUnknownIDs, []string{"r-02", "r-08", "r-10"}) || !equalIDs(rc.PhantomIDs, []string{"r-11"}) {
		t.Fatalf("%s: sent unknown %v, phantom %v; reasons:\n%s", s.Status, rc.SentUnknownIDs, rc.PhantomIDs, reasons(s))
	}
}
