package analyze

// The analyze verdict defects a fresh-user tester found (report 1): each
// test edits the demo evidence as the tester did and asserts the verdict.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
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
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.NotRun,
		`receipts.jsonl:1: receipt of id "id-00": recv_ns`, "before its request was sent", "(10 lines so)")

	// within the clock tolerance it is no contradiction
	e = spanned(t)
	for i := range e.receipts {
		e.receipts[i].RecvNs = e.requests[i].SentNs - int64(time.Millisecond)
	}
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.Pass)
}

// Tester 5: every sent_ns 0 PASSed although attack.json's span says otherwise.
func TestTesterSentOutsideAttackIsNotRun(t *testing.T) {
	e := spanned(t)
	for i := range e.requests {
		e.requests[i].SentNs = 0
	}
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.NotRun,
		`requests.jsonl:1: id "id-00": sent_ns 0 lies outside the attack's start_ns..end_ns`, "(20 lines so)")
}

// Tester 6: a negative latency_ns FAILed the model check (under-admitted).
func TestTesterNegativeLatencyIsNotRun(t *testing.T) {
	e := spanned(t)
	for i := range e.requests {
		e.requests[i].LatencyNs = -5
	}
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.NotRun, "requests.jsonl:1: latency_ns -5: negative")

	e = spanned(t)
	e.requests[3].LatencyNs = 1<<63 - 1
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.NotRun, "requests.jsonl:4: sent_ns + latency_ns overflows int64")
}

// Tester 7: an admitted request turned not_sent (code 0) that has a
// receipt FAILed "receipts = admitted"; the attack is incomplete and the
// receipt contradicts it.
func TestTesterNotSentWithReceiptIsNotRun(t *testing.T) {
	e := spanned(t)
	e.requests[2].NotSent, e.requests[2].Code, e.requests[2].BytesIn = true, 0, 0
	wantVerdict(t, run(t, e.write()).Scenarios[0], evidence.NotRun,
		`requests.jsonl:3: id "id-02" was not sent (not_sent): the attack is incomplete`,
		`receipts.jsonl:3: receipt of id "id-02", which requests.jsonl records as not sent`)

	// attack.json that reports it: the attack's own reason, no contradiction of counts
	e = spanned(t)
	e.requests[12].NotSent, e.requests[12].Code, e.requests[12].Body, e.requests[12].BytesIn = true, 0, "", 0
	e.attack["complete"] = false
	e.attack["phases"] = []map[string]any{{"complete": false, "sent": 20, "not_sent": 1, "error": "1 of 20 requests were not sent"}}
	s := run(t, e.write()).Scenarios[0]
	wantVerdict(t, s, evidence.NotRun, "attack did not complete")
	if r := reasons(s); strings.Contains(r, "was not sent (not_sent)") {
		t.Fatalf("attack.json reports the request not sent; reasons:\n%s", r)
	}
}

// yes and no are stats_agree's explicit values.
var yes, no = func() (*bool, *bool) { t, f := true, false; return &t, &f }()

// Tester 9: stats_agree false had no effect: with snapshots present the
// scenario still FAILed on the proxies' counters. Explicit false turns the
// comparison off (the snapshots are still reported); absent, they are
// compared whenever snapshots exist; true requires them.
func TestTesterStatsAgreeFalseTurnsTheComparisonOff(t *testing.T) {
	e := newEv(t).demo()
	dir := e.write()
	writeSnap(t, dir, "proxy-a", "before", 100, 40)
	writeSnap(t, dir, "proxy-a", "after", 105, 47) // local enforced disagrees: 7, the clients saw 5
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.Fail, "proxy-a: local enforced = local 429s: want 5, got 7")

	e.scenario.Expect.StatsAgree = no
	e.write()
	s := run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Pass)
	if len(s.Stats) != 1 || s.Stats[0].Deltas[DeltaLocalEnforced] != 7 {
		t.Fatalf("stats not reported: %+v", s.Stats)
	}
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "proxy-a:") {
			t.Fatalf("check %+v with stats_agree false", c)
		}
	}
	// a reset or a missing snapshot is not judged either
	must(t, os.Remove(filepath.Join(dir, evidence.StatsDir, "proxy-a.after.json")))
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.Pass)

	e.scenario.Expect.StatsAgree = yes
	e.write()
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.NotRun, "proxy-a.after.json")
}

// scenario.json of earlier releases: stats_agree true and false (omitted)
// decode to true and absent.
func TestStatsAgreeDecodes(t *testing.T) {
	for in, want := range map[string]string{`{"stats_agree":true}`: "true", `{"stats_agree":false}`: "false", `{}`: "absent"} {
		var x evidence.Expectation
		must(t, json.Unmarshal([]byte(in), &x))
		got := "absent"
		if x.StatsAgree != nil {
			got = fmt.Sprint(*x.StatsAgree)
		}
		if got != want || x.Checks() != (want == "true") {
			t.Errorf("%s: stats_agree %s, checks %v", in, got, x.Checks())
		}
	}
}

// forgedSharedRLS copies e06's shared-RLS evidence (the lab RLS, 5 per
// hour, 20 requests) with the 429 of id attack-07 turned into a 200 with
// a receipt (6 admitted) and the expectation emptied, as the tester did.
func forgedSharedRLS(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "v1-release", "e06", "02-shared-rls", "1"), dir)
	const forged = "20261201T091558Z-1-s2r1-attack-07"
	var reqs []evidence.Request
	must(t, evidence.ReadFile(filepath.Join(dir, evidence.RequestsFile), func(_ int, r *evidence.Request) error {
		if r.ID == forged {
			if r.Code != 429 {
				t.Fatalf("%s: code %d, want the 429 to forge", forged, r.Code)
			}
			r.Code, r.Error, r.Body, r.BytesIn = 200, "", `{"id":"`+forged+`"}`, 10
			r.Headers = map[string]string{"server": "envoy", "x-envoy-upstream-service-time": "1"}
			defer func() {
				f, err := os.OpenFile(filepath.Join(dir, evidence.ReceiptsFile), os.O_APPEND|os.O_WRONLY, 0)
				must(t, err)
				b, _ := json.Marshal(evidence.Receipt{ID: sp(forged), RecvNs: r.SentNs + 1_000_000, Method: "GET", Path: "/inventory"})
				_, err = f.Write(append(b, '\n'))
				must(t, err)
				must(t, f.Close())
			}()
		}
		reqs = append(reqs, *r)
		return nil
	}))
	writeLines(t, filepath.Join(dir, evidence.RequestsFile), reqs)
	var sc map[string]any
	b, err := os.ReadFile(filepath.Join(dir, evidence.ScenarioFile))
	must(t, err)
	must(t, json.Unmarshal(b, &sc))
	sc["expect"] = map[string]any{}
	b, _ = json.Marshal(sc)
	must(t, os.WriteFile(filepath.Join(dir, evidence.ScenarioFile), b, 0o644))
	return dir
}

// Tester 10: a Redis fault hid the over-admission of a lab RLS, which has
// no Redis: the fault line is impossible evidence (NOT_RUN naming it) and
// acts on no limiter; the RLS fault of the same window still suspends.
func TestTesterRedisFaultOnLabRLSIsImpossible(t *testing.T) {
	dir := forgedSharedRLS(t)
	s := run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.Fail, "admitted within model bounds: want 5..5, got 6")
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "x", Action: evidence.ActionStop, Target: evidence.FaultTargetRedis, BeginNs: 1, EndNs: 1 << 62, OK: true}})
	s = run(t, dir).Scenarios[0]
	wantVerdict(t, s, evidence.NotRun, `faults.jsonl:1: fault "x" (stop redis): the scenario has no redis`, "impossible evidence")
	if len(s.FaultWindows) != 1 || len(s.FaultWindows[0].ActsOn) != 0 {
		t.Fatalf("fault windows %+v: a redis fault acts on no lab-RLS limiter", s.FaultWindows)
	}
	for _, l := range s.Limiters {
		if l.Suspended != 0 {
			t.Fatalf("limiter %s: %d suspended by an impossible fault", l.Name, l.Suspended)
		}
	}

	// begin_ns 1 .. end_ns 2^62 is no time of this scenario, whatever the target
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "x", Action: evidence.ActionStop, Target: evidence.FaultTargetRLS, BeginNs: 1, EndNs: 1 << 62, OK: true}})
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.NotRun, `faults.jsonl:1: fault "x" (stop rls): begin_ns..end_ns 1..4611686018427387904 lies more than 1h0m0s outside the attack's start_ns..end_ns`)
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "x", Action: evidence.ActionRestart, Target: evidence.FaultTargetRLS, BeginNs: 0, EndNs: 5, OK: true}})
	wantVerdict(t, run(t, dir).Scenarios[0], evidence.NotRun, `faults.jsonl:1: fault "x" (restart rls): begin_ns 0 is not a time`)
}

// Tester 11: the forged shared-RLS case reported 21 offered at the bucket
// with 20 requests: the 21st is the RLS's OVER_LIMIT decision that the
// forged 200 cannot have taken (a late decision, counted without
// admitting anyone); the finding says so.
func TestTesterOfferedCountsLateDecisions(t *testing.T) {
	s := run(t, forgedSharedRLS(t)).Scenarios[0]
	l := s.Limiters[0]
	if l.Offered != 20 || l.Zombies != 1 || l.Total.Offered != 21 || len(l.Buckets) != 1 || l.Buckets[0].Offered != 21 {
		t.Fatalf("offered %d, zombies %d, total %+v, buckets %+v", l.Offered, l.Zombies, l.Total, l.Buckets)
	}
	wantVerdict(t, s, evidence.Fail, `bucket "all": 6 admitted, the model admits at most 5 of the 21 offered (20 requests' hits and 1 RLS decisions that reached no request)`)
}
