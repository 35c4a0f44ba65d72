package evidence

import (
	"fmt"
	"testing"
)

// TestGrowAllocatesOnce: after Requests.Grow(n) and Receipts.Grow(n),
// adding n requests and their receipts keeps every column's backing array
// (one allocation each), and the rows read back as added.
func TestGrowAllocatesOnce(t *testing.T) {
	const n = 1000
	var reqs Requests
	var recs Receipts
	reqs.Grow(n)
	recs.Grow(n)
	sent, recv := &reqs.Code[:1][0], &recs.Request[:1][0]
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("id-%d", i)
		if _, ok := reqs.Add(&Request{ID: id, Target: "t", SentNs: int64(i + 1), Code: 200}); !ok {
			t.Fatalf("request %d not added", i)
		}
		recs.Add(&reqs, &Receipt{ID: &id, RecvNs: int64(i + 2)})
	}
	if &reqs.Code[0] != sent || &recs.Request[0] != recv {
		t.Fatal("a column was reallocated after Grow")
	}
	if reqs.Len() != n || recs.Len() != n || reqs.IDs.ID(n-1) != fmt.Sprintf("id-%d", n-1) || recs.Request[n-1] != n-1 {
		t.Fatalf("rows: %d requests, %d receipts, last id %q, last receipt's request %d", reqs.Len(), recs.Len(), reqs.IDs.ID(n-1), recs.Request[n-1])
	}
	reqs.Grow(0) // nothing
	if cap(reqs.Code) != n {
		t.Fatalf("Grow(0) changed the capacity to %d", cap(reqs.Code))
	}
}

// TestConnColumnLazy: requests without a connection hold no Conn column;
// the first one with a connection allocates it, and ConnOf reads every
// request's connection back ("" for those without).
func TestConnColumnLazy(t *testing.T) {
	var reqs Requests
	reqs.Grow(10)
	for i := 0; i < 3; i++ {
		reqs.Add(&Request{ID: fmt.Sprintf("id-%d", i), Target: "t", SentNs: 1, Code: 200})
	}
	if reqs.Conn != nil {
		t.Fatalf("Conn allocated without a connection: %v", reqs.Conn)
	}
	reqs.Add(&Request{ID: "id-3", Target: "t", SentNs: 1, Code: 200, Conn: "127.0.0.1:5000/1"})
	reqs.Add(&Request{ID: "id-4", Target: "t", SentNs: 1, Code: 200})
	want := []string{"", "", "", "127.0.0.1:5000/1", ""}
	for i, w := range want {
		if got := reqs.ConnOf(i); got != w {
			t.Errorf("ConnOf(%d) = %q, want %q", i, got, w)
		}
	}
	if len(reqs.Conn) != reqs.Len() {
		t.Errorf("Conn has %d rows for %d requests", len(reqs.Conn), reqs.Len())
	}
}

// TestPhaseFlowURLColumnsLazy: requests of one phase, flow and URL hold
// none of those columns; the first request with a second one allocates
// that column alone, and PhaseAt, FlowAt, URLAt and URLOf read every
// request's back.
func TestPhaseFlowURLColumnsLazy(t *testing.T) {
	var reqs Requests
	reqs.Grow(10)
	for i := 0; i < 3; i++ {
		reqs.Add(&Request{ID: fmt.Sprintf("id-%d", i), Target: "t", Phase: "p", Flow: "f", URL: "/a", SentNs: 1, Code: 200})
	}
	if reqs.Phase != nil || reqs.Flow != nil || reqs.URL != nil {
		t.Fatalf("columns allocated for one phase, flow and URL: %v %v %v", reqs.Phase, reqs.Flow, reqs.URL)
	}
	reqs.Add(&Request{ID: "id-3", Target: "t", Phase: "p", Flow: "g", URL: "/b", SentNs: 1, Code: 200})
	reqs.Add(&Request{ID: "id-4", Target: "t", Phase: "p", Flow: "f", URL: "/a", SentNs: 1, Code: 200})
	if reqs.Phase != nil || len(reqs.Flow) != 5 || len(reqs.URL) != 5 {
		t.Fatalf("after a second flow and URL: Phase %v, Flow %v, URL %v", reqs.Phase, reqs.Flow, reqs.URL)
	}
	for i, w := range []string{"f", "f", "f", "g", "f"} {
		if got := reqs.Flows[reqs.FlowAt(i)]; got != w || reqs.Phases[reqs.PhaseAt(i)] != "p" {
			t.Errorf("request %d: flow %q phase %q, want %q p", i, got, reqs.Phases[reqs.PhaseAt(i)], w)
		}
		if u, want := reqs.URLOf(i), map[bool]string{true: "/b", false: "/a"}[i == 3]; u != want {
			t.Errorf("URLOf(%d) = %q, want %q", i, u, want)
		}
	}
	if reqs.PhaseAt(99) != 0 || reqs.URLOf(99) != "" || reqs.URLOf(-1) != "" {
		t.Error("an index out of range is not 0 / \"\"")
	}
}
