package analyze

import (
	"slices"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// TestReceiptCountsPastAByte: a request with 300 receipts counts 300 (its
// byte saturates at 255 and the rest go to the map), its neighbours stay
// at their counts, and several() sees a count of two.
func TestReceiptCountsPastAByte(t *testing.T) {
	c := newReceiptCounts(3)
	if c.several() {
		t.Fatal("several() with no receipts")
	}
	for range 300 {
		c.inc(1)
	}
	c.inc(2)
	if got := [3]int32{c.at(0), c.at(1), c.at(2)}; got != [3]int32{0, 300, 1} {
		t.Fatalf("counts %v, want [0 300 1]", got)
	}
	if !c.several() {
		t.Fatal("several() false with a request of 300 receipts")
	}
	d := newReceiptCounts(2)
	d.inc(0)
	d.inc(0)
	if !d.several() || d.at(0) != 2 {
		t.Fatalf("two receipts: at %d, several %v", d.at(0), d.several())
	}
}

// TestReceiptNsSkipsZeroTimes: a receipt time of 0 is no time, so a later
// receipt of the same request gives its earliest receipt time (as before
// the earliest receipt was held by index: 0 meant none), while the
// earliest of two real times wins whatever their order.
func TestReceiptNsSkipsZeroTimes(t *testing.T) {
	ev := &evidence.ScenarioEvidence{}
	for _, id := range []string{"a", "b", "c"} {
		ev.Requests.Add(&evidence.Request{ID: id, Target: "t", SentNs: 100, LatencyNs: 50, Code: 200})
	}
	for _, r := range []struct {
		id string
		ns int64
	}{{"a", 0}, {"a", 130}, {"b", 140}, {"b", 120}, {"c", 0}} {
		ev.Receipts.Add(&ev.Requests, &evidence.Receipt{ID: &r.id, RecvNs: r.ns})
	}
	in := &Input{Evidence: ev, Report: &report.ScenarioReport{}}
	reconcile(in)
	for i, want := range []int64{130, 120, 0} {
		if got := in.ReceiptNs(i); got != want {
			t.Errorf("request %d: ReceiptNs %d, want %d", i, got, want)
		}
		if !in.Received(i) {
			t.Errorf("request %d: not received", i)
		}
	}
}

// TestResentIDsOfACutRecordInOrder: the receipts of IDs a cut client record
// lacks (sent status unknown), each received twice, are named among the
// re-sent IDs sorted, the same every time (they were taken from a map
// before being sorted, so the report changed from run to run).
func TestResentIDsOfACutRecordInOrder(t *testing.T) {
	var first []string
	for run := range 8 {
		ev := &evidence.ScenarioEvidence{} // no attack.json: the record may be cut
		for _, id := range []string{"id-01", "id-02", "id-03"} {
			ev.Requests.Add(&evidence.Request{ID: id, Target: "t", SentNs: 100, LatencyNs: 50, Code: 200})
		}
		for _, id := range []string{"id-07", "id-05", "id-09", "id-06", "id-08", "id-07", "id-05", "id-09", "id-06", "id-08"} {
			ev.Receipts.Add(&ev.Requests, &evidence.Receipt{ID: &id, RecvNs: 120})
		}
		in := &Input{Evidence: ev, Report: &report.ScenarioReport{}}
		reconcile(in)
		got := in.Report.Receipts.ResentIDs
		if !slices.IsSorted(got) || len(got) != 5 {
			t.Fatalf("run %d: re-sent IDs %v, want the 5 sorted", run, got)
		}
		if run == 0 {
			first = got
		} else if !slices.Equal(got, first) {
			t.Fatalf("run %d: re-sent IDs %v, run 0 gave %v", run, got, first)
		}
	}
}
