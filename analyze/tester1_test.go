package analyze

// The analyze verdict defects a fresh-user tester found (report 1): each
// test edits the demo evidence as the tester did and asserts the verdict.

import (
	"strings"
	"testing"
	"time"
)

// spanned is the demo evidence with attack.json's start_ns..end_ns
// around its requests, as `rlbench attack` writes it.
func spanned(t *testing.T) *ev {
	e := newEv(t).demo()
	e.attack["start_ns"], e.attack["end_ns"] = t0-int64(time.Millisecond), t0+int64(time.Second)
	return e
}

// Tester 5: every receipt 1 s before its request was sent PASSed.
func TestTesterReceiptBeforeSendIsNotRun(t *testing.T) {
	e := spanned(t)
	for i := range e.receipts {
		e.receipts[i].RecvNs -= int64(time.Second)
	}
	wantVerdict(t, run(t, e.write()).Scenarios[0], NotRun,
		`receipts.jsonl:1: receipt of id "id-00": recv_ns`, "before its request was sent", "(10 lines so)")

	// within the clock tolerance it is no contradiction
	e = spanned(t)
	for i := range e.receipts {
		e.receipts[i].RecvNs = e.requests[i].SentNs - int64(time.Millisecond)
	}
	wantVerdict(t, run(t, e.write()).Scenarios[0], Pass)
}

// Tester 5: every sent_ns 0 PASSed although attack.json's span says otherwise.
func TestTesterSentOutsideAttackIsNotRun(t *testing.T) {
	e := spanned(t)
	for i := range e.requests {
		e.requests[i].SentNs = 0
	}
	wantVerdict(t, run(t, e.write()).Scenarios[0], NotRun,
		`requests.jsonl:1: id "id-00": sent_ns 0 lies outside the attack's start_ns..end_ns`, "(20 lines so)")
}

// Tester 6: a negative latency_ns FAILed the model check (under-admitted).
func TestTesterNegativeLatencyIsNotRun(t *testing.T) {
	e := spanned(t)
	for i := range e.requests {
		e.requests[i].LatencyNs = -5
	}
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, NotRun, "requests.jsonl:1: latency_ns -5: negative")

	e = spanned(t)
	e.requests[3].LatencyNs = 1<<63 - 1
	wantVerdict(t, run(t, e.write()).Scenarios[0], NotRun, "requests.jsonl:4: sent_ns + latency_ns overflows int64")
}

// Tester 7: an admitted request turned not_sent (code 0) that has a
// receipt FAILed "receipts = admitted"; the attack is incomplete and the
// receipt contradicts it.
func TestTesterNotSentWithReceiptIsNotRun(t *testing.T) {
	e := spanned(t)
	e.requests[2].NotSent, e.requests[2].Code, e.requests[2].BytesIn = true, 0, 0
	wantVerdict(t, run(t, e.write()).Scenarios[0], NotRun,
		`requests.jsonl:3: id "id-02" was not sent (not_sent): the attack is incomplete`,
		`receipts.jsonl:3: receipt of id "id-02", which requests.jsonl records as not sent`)

	// attack.json that reports it: the attack's own reason, no contradiction of counts
	e = spanned(t)
	e.requests[12].NotSent, e.requests[12].Code, e.requests[12].Body, e.requests[12].BytesIn = true, 0, "", 0
	e.attack["complete"] = false
	e.attack["phases"] = []map[string]any{{"complete": false, "not_sent": 1, "error": "1 of 20 requests were not sent"}}
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, NotRun, "attack did not complete")
	if r := reasons(s); strings.Contains(r, "was not sent (not_sent)") {
		t.Fatalf("attack.json reports the request not sent; reasons:\n%s", r)
	}
}
