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
