package analyze

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// ev builds a scenario evidence directory.
type ev struct {
	t        *testing.T
	dir      string
	requests []evidence.Request
	receipts []evidence.Receipt
	scenario evidence.Scenario
	attack   map[string]any
}

const t0 = int64(1796029200_000000000) // an hour boundary

func newEv(t *testing.T) *ev {
	five := 5
	return &ev{t: t, dir: t.TempDir(),
		scenario: evidence.Scenario{Schema: "rlbench.scenario/v1", Name: "two local buckets", IntendedLimit: evidence.IntendedPerRun(five),
			Expect: evidence.Expectation{Label: "local buckets: 10 admitted", Admitted: evidence.AdmittedIn(evidence.Range{Min: 10, Max: 10}), ReceiptsEqualAdmitted: true}},
		attack: map[string]any{"complete": true}}
}

func sp(s string) *string { return &s }

// demo fills the canonical result: 20 IDs, 10 per proxy, 5 admitted per proxy.
func (e *ev) demo() *ev {
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("id-%02d", i)
		target := []string{"proxy-a", "proxy-b"}[i%2]
		r := evidence.Request{ID: id, Target: target, Method: "GET", SentNs: t0 + int64(i)*1000, LatencyNs: 1_000_000}
		if i < 10 {
			r.Code, r.BytesIn = 200, 10
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: r.SentNs + 500})
		} else {
			r.Code, r.Body, r.BytesIn = 429, "local_rate_limited", 18
		}
		e.requests = append(e.requests, r)
	}
	e.attack["sent"] = 20
	return e
}

func (e *ev) write() string {
	e.t.Helper()
	b, _ := json.Marshal(e.scenario)
	must(e.t, os.WriteFile(filepath.Join(e.dir, evidence.ScenarioFile), b, 0o644))
	if e.attack != nil {
		b, _ = json.Marshal(e.attack)
		must(e.t, os.WriteFile(filepath.Join(e.dir, evidence.AttackFile), b, 0o644))
	}
	writeLines(e.t, filepath.Join(e.dir, evidence.RequestsFile), e.requests)
	writeLines(e.t, filepath.Join(e.dir, evidence.ReceiptsFile), e.receipts)
	return e.dir
}

func writeLines[T any](t *testing.T, path string, vs []T) {
	w, err := evidence.Create(path)
	must(t, err)
	for i := range vs {
		must(t, w.Write(&vs[i]))
	}
	must(t, w.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir string) *report.Report {
	t.Helper()
	rep, err := Analyze(context.Background(), dir, Options{Now: func() time.Time { return time.Unix(0, t0) }})
	must(t, err)
	return rep
}

func TestDemoEvidencePasses(t *testing.T) {
	rep := run(t, newEv(t).demo().write())
	s := rep.Scenarios[0]
	if rep.Status != evidence.Pass || s.Status != evidence.Pass {
		t.Fatalf("status %s/%s, reasons %v", rep.Status, s.Status, s.Reasons)
	}
	if s.Totals.N[evidence.ClassAdmitted] != 10 || s.Totals.N[evidence.ClassLocal429] != 10 || s.Receipts.Total != 10 {
		t.Fatalf("totals %+v receipts %+v", s.Totals, s.Receipts)
	}
	if s.OverAdmission == nil || s.OverAdmission.Min != 5 || s.OverAdmission.Max != 5 {
		t.Fatalf("over-admission %+v", s.OverAdmission)
	}
	if len(s.Targets) != 2 || s.Targets[0].Classes.N[evidence.ClassAdmitted] != 5 || s.Targets[1].Classes.N[evidence.ClassLocal429] != 5 {
		t.Fatalf("targets %+v", s.Targets)
	}
}

func TestReconciliationFlagsEachAnomaly(t *testing.T) {
	e := newEv(t).demo()
	// 200 without receipt: drop id-00's receipt.
	e.receipts = e.receipts[1:]
	// 429 with receipt (leaked): id-10 was rejected but reached the backend.
	e.receipts = append(e.receipts, evidence.Receipt{ID: sp("id-10"), RecvNs: t0 + 1e9})
	// duplicate receipt: id-01 arrived twice (a re-send).
	e.receipts = append(e.receipts, evidence.Receipt{ID: sp("id-01"), RecvNs: t0 + 1e9})
	// phantom: an ID never sent.
	e.receipts = append(e.receipts, evidence.Receipt{ID: sp("ghost-1")})
	// and a receipt without any ID header.
	e.receipts = append(e.receipts, evidence.Receipt{ID: nil})
	s := run(t, e.write()).Scenarios[0]
	if s.Status != evidence.Fail {
		t.Fatalf("status %s, want FAIL", s.Status)
	}
	rc := s.Receipts
	if rc.AdmittedWithoutReceipt != 1 || rc.LostIDs[0] != "id-00" {
		t.Errorf("lost: %+v", rc)
	}
	if rc.RejectedWithReceipt != 1 || rc.LeakedIDs[0] != "id-10" {
		t.Errorf("leaked: %+v", rc)
	}
	if rc.Duplicates != 1 || rc.DuplicateIDs[0] != "id-01" {
		t.Errorf("duplicates: %+v", rc)
	}
	if rc.Phantom != 1 || rc.PhantomIDs[0] != "ghost-1" {
		t.Errorf("phantom: %+v", rc)
	}
	if rc.WithoutID != 1 {
		t.Errorf("without id: %d", rc.WithoutID)
	}
	failed := map[string]bool{}
	for _, c := range s.Checks {
		if c.Status == report.CheckFail {
			failed[c.Name] = true
		}
	}
	for _, want := range []string{"admitted without receipt (lost)", "rejected with receipt (leaked)", "duplicate receipts (re-sent)", "phantom receipts (never sent)"} {
		if !failed[want] {
			t.Errorf("check %q did not fail; checks %+v", want, s.Checks)
		}
	}
}

func TestTruncatedRequestsIsIncomplete(t *testing.T) {
	dir := newEv(t).demo().write()
	p := filepath.Join(dir, evidence.RequestsFile)
	b, err := os.ReadFile(p)
	must(t, err)
	// Cut the file in the middle of line 7.
	lines := strings.SplitAfter(string(b), "\n")
	cut := strings.Join(lines[:6], "") + lines[6][:len(lines[6])/2]
	must(t, os.WriteFile(p, []byte(cut), 0o644))
	rep := run(t, dir)
	s := rep.Scenarios[0]
	if s.Status != evidence.NotRun || !s.Incomplete || rep.Status != evidence.NotRun {
		t.Fatalf("status %s incomplete %v", s.Status, s.Incomplete)
	}
	joined := strings.Join(s.Reasons, "\n")
	if !strings.Contains(joined, evidence.RequestsFile+":7: truncated last line") {
		t.Fatalf("reasons do not name line 7: %s", joined)
	}
}

func TestMissingAndInterruptedEvidenceIsNeverPass(t *testing.T) {
	t.Run("no requests", func(t *testing.T) {
		e := newEv(t)
		e.write()
		must(t, os.Remove(filepath.Join(e.dir, evidence.RequestsFile)))
		if s := run(t, e.dir).Scenarios[0]; s.Status != evidence.NotRun {
			t.Fatalf("status %s", s.Status)
		}
	})
	t.Run("interrupted attack", func(t *testing.T) {
		e := newEv(t).demo()
		e.attack = map[string]any{"complete": false, "interrupted": true, "sent": 20}
		s := run(t, e.write()).Scenarios[0]
		if s.Status != evidence.NotRun || !strings.Contains(strings.Join(s.Reasons, " "), "interrupted") {
			t.Fatalf("status %s reasons %v", s.Status, s.Reasons)
		}
	})
	t.Run("no attack.json", func(t *testing.T) {
		e := newEv(t).demo()
		e.attack = nil
		if s := run(t, e.write()).Scenarios[0]; s.Status != evidence.NotRun {
			t.Fatalf("status %s", s.Status)
		}
	})
	t.Run("fewer lines than sent", func(t *testing.T) {
		e := newEv(t).demo()
		e.attack["sent"] = 25
		if s := run(t, e.write()).Scenarios[0]; s.Status != evidence.NotRun {
			t.Fatalf("status %s", s.Status)
		}
	})
	t.Run("empty run dir", func(t *testing.T) {
		rep := run(t, t.TempDir())
		if rep.Status != evidence.NotRun || len(rep.Scenarios) != 1 || !strings.HasPrefix(rep.Scenarios[0].Reasons[0], "no scenario evidence") {
			t.Fatalf("status %s", rep.Status)
		}
	})
	t.Run("NOT_RUN marker", func(t *testing.T) {
		root := t.TempDir()
		d := filepath.Join(root, "external", "1")
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, evidence.NotRunFile), []byte("target proxy-x unreachable: connection refused\n"), 0o644))
		rep := run(t, root)
		if rep.Status != evidence.NotRun || rep.Scenarios[0].Reasons[0] != "target proxy-x unreachable: connection refused" {
			t.Fatalf("%+v", rep.Scenarios)
		}
	})
}

func TestWrongExpectationFails(t *testing.T) {
	e := newEv(t).demo()
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 5, Max: 5})
	s := run(t, e.write()).Scenarios[0]
	if s.Status != evidence.Fail || !strings.Contains(strings.Join(s.Reasons, " "), "admitted: want 5, got 10") {
		t.Fatalf("status %s reasons %v", s.Status, s.Reasons)
	}
}

func TestNoResponseMakesRanges(t *testing.T) {
	e := newEv(t).demo()
	// Two rejected requests never got an answer: they may have been admitted.
	e.requests[10].Code, e.requests[10].Body, e.requests[10].Error = 0, "", "context deadline exceeded"
	e.requests[11].Code, e.requests[11].Body, e.requests[11].Error = 0, "", "EOF"
	e.scenario.Expect.Admitted = evidence.AdmittedIn(evidence.Range{Min: 10, Max: 11})
	s := run(t, e.write()).Scenarios[0]
	if s.OverAdmission.Min != 5 || s.OverAdmission.Max != 7 {
		t.Fatalf("over-admission %+v", s.OverAdmission)
	}
	var adm report.Check
	for _, c := range s.Checks {
		if c.Name == "admitted" {
			adm = c
		}
	}
	if adm.Status != report.CheckUnknown || s.Status != evidence.NotRun || !strings.Contains(strings.Join(s.Reasons, " "), "inconclusive: admitted") {
		t.Fatalf("admitted check %+v status %s", adm, s.Status)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		r    evidence.Request
		want string
	}{
		{evidence.Request{Code: 200}, evidence.ClassAdmitted.String()},
		{evidence.Request{Code: 204}, evidence.ClassAdmitted.String()},
		{evidence.Request{Code: 429, Body: "local_rate_limited", BytesIn: 18}, evidence.ClassLocal429.String()},
		{evidence.Request{Code: 429, Headers: map[string]string{"x-envoy-ratelimited": "true"}}, evidence.ClassGlobal429.String()},
		{evidence.Request{Code: 429, Body: "slow down", BytesIn: 9}, evidence.ClassOther4xx.String()}, // no mark of its origin (a receipt makes it backend_429)
		{evidence.Request{Code: 429, Body: `{"id":"x"}`, BytesIn: 10}, evidence.ClassBackend429.String()},
		{evidence.Request{Code: 503, Headers: map[string]string{"x-envoy-overloaded": "true"}}, evidence.ClassCircuitBreaker.String()},
		{evidence.Request{Code: 500}, evidence.ClassRLSError.String()},
		{evidence.Request{Code: 500, BytesIn: 5, Body: "oops!"}, evidence.ClassOther5xx.String()},
		{evidence.Request{Code: 500, Headers: map[string]string{"x-envoy-upstream-service-time": "3"}}, evidence.ClassBackend5xx.String()},
		{evidence.Request{Code: 503, BytesIn: 10}, evidence.ClassOther5xx.String()},
		{evidence.Request{Code: 0, Error: "EOF"}, evidence.ClassNoResponse.String()},
		{evidence.Request{Code: 302}, evidence.ClassOther.String()},
	}
	for _, c := range cases {
		if got := Classify(&c.r); got != c.want {
			t.Errorf("Classify(%d %q %v) = %s, want %s", c.r.Code, c.r.Body, c.r.Headers, got, c.want)
		}
	}
}

func mkdirAll(p string) error { return os.MkdirAll(p, 0o755) }
