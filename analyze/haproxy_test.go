package analyze

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/haproxyrec"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// haproxyEv is a synthetic HAProxy scenario: a stick table of limit 2 per 1 s (decl.HAProxyStickTable) in front
// of the backend as target haproxy-a, and four requests its rule ran at 0, 1, 2 and 1000 ms after t0 by the system
// date (and 300 or 700 µs), while HAProxy's own clock (now_ms) lagged lagUs µs behind it. Each client interval spans 5 ms around the rule,
// so only HAProxy's log pins each request to its ms. admitted are the requests HAProxy let through (200 with a
// receipt); the others got its 429 with the limiter header (classified by the scenario's rule, as the runner
// writes it). rates are the rates HAProxy logged.
func haproxyEv(t *testing.T, lagUs int64, admitted map[int]bool, rates []int64) *ev {
	return haproxyEvLog(t, lagUs, admitted, rates, nil)
}

// haproxyEvLog is haproxyEv with edit applied to the log records before they are written.
func haproxyEvLog(t *testing.T, lagUs int64, admitted map[int]bool, rates []int64, edit func([]haproxyrec.LogRecord) []haproxyrec.LogRecord) *ev {
	e := bare(t)
	spec, err := decl.HAProxyStickTable{Limit: 2, Period: time.Second}.Spec()
	if err != nil {
		t.Fatal(err)
	}
	e.scenario.Limiters = []evidence.Limiter{{Name: "haproxy-a stick table", Stage: evidence.StageLocal, Targets: []string{"haproxy-a"},
		Key: evidence.KeyTarget, Model: &spec}}
	e.scenario.Expect.Admitted = evidence.AdmittedByModel()
	e.scenario.Expect.BackendPeak = []evidence.PeakExpectation{{Window: model.Duration(100 * time.Millisecond), Model: true}}
	e.scenario.Classify = []evidence.ClassRule{{Status: evidence.Range{Min: 429, Max: 429}, Header: "X-Rlbench-Limiter", Value: "haproxy-stick-table", Class: "local_429"}}
	const msNs = int64(time.Millisecond)
	base := t0 / msNs // the rule's ms by the system date
	var recs []haproxyrec.LogRecord
	for i, at := range []int64{0, 1, 2, 1000} {
		id := fmt.Sprintf("h-%d", i)
		dec := (base + at) * msNs
		r := evidence.Request{ID: id, Target: "haproxy-a", Method: "GET", SentNs: dec - 2*msNs, LatencyNs: 5 * msNs}
		decUs := (base+at)*1000 + 300 + 400*int64(i%2)
		rec := haproxyrec.LogRecord{Line: i + 1, ID: id, AcceptMs: base + at, DecideUs: decUs, NowMs: (decUs - lagUs) / 1000,
			Rate: &rates[i], Key: "127.0.0.1", Th: 0, Ti: 0, TR: 0, Tw: -1, Tc: -1, Tr: -1, Ta: 0, Tt: 0, Backend: "fe", Server: haproxyrec.NoServer, Term: "PR"}
		if admitted[i] {
			r.Code, r.Body, r.BytesIn = 200, "ok", 2
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: dec + msNs/2})
			rec.Status, rec.Server, rec.Backend, rec.Term, rec.Tw, rec.Tc, rec.Tr = 200, "s0", "be", "--", 0, 0, 0
		} else {
			r.Code, r.BytesIn = 429, 0
			r.Headers = map[string]string{"x-rlbench-limiter": "haproxy-stick-table"}
			rec.Status = 429
		}
		e.requests = append(e.requests, r)
		recs = append(recs, rec)
	}
	e.attack["sent"] = len(e.requests)
	dir := e.write()
	if edit != nil {
		recs = edit(recs)
	}
	writeLines(t, filepath.Join(dir, evidence.HAProxyPath("haproxy-a", evidence.HAProxyLogFile)), recs)
	return e
}

// TestHAProxyStickTableJudgedAtItsMs: replayed at the ms HAProxy's rule ran (its log; its own clock moved back
// onto the system date by an even number of ms, also when its lag is not a whole ms, so that its truncated ms lag
// the system date's by 129 ms for some requests and 130 for others), freq_ctr admits the first two, denies the third (the same period) and
// the fourth (the next period weighs the previous 3 in full: 3 + 1 > 2): HAProxy doing so PASSes with every
// request decided; HAProxy admitting the fourth is an over-admission (FAIL), naming it.
func TestHAProxyStickTableJudgedAtItsMs(t *testing.T) {
	// with a lag of 129.6 ms the second and third request fall in one ms of HAProxy's clock: one passed, one was
	// denied, and which is which the log does not tell (either); their count it does
	for _, c := range []struct{ off, mustEach int64 }{{0, 2}, {37000, 2}, {129600, 1}} {
		off := c.off
		e := haproxyEv(t, off, map[int]bool{0: true, 1: true}, []int64{1, 2, 3, 4})
		s := run(t, e.dir).Scenarios[0]
		if s.Status != evidence.Pass || len(s.Limiters) != 1 {
			t.Fatalf("now_ms off by %d: %s %v", off, s.Status, s.Reasons)
		}
		l := s.Limiters[0]
		if l.Admitted != 2 || l.Rejected != 2 || int64(l.MustAdmit) != c.mustEach || int64(l.MustReject) != c.mustEach || l.Total.Min != 2 || l.Total.Max != 2 {
			t.Errorf("now_ms off by %d: limiter %+v", off, l)
		}
		if h := s.Harness; h == nil || h.Seen != 4 || strings.Join(h.SeenSources, ",") != "haproxy log" {
			t.Errorf("now_ms off by %d: the limiter's times %+v, want 4 from the haproxy log", off, h)
		}
		// HAProxy's forwards (accept + timers) judged by its own log: 2 within 100 ms, bound 20 (two periods)
		if c := mustCheck(t, s, "limiter forwards per 100ms within the model"); c.Status != "pass" || !strings.Contains(c.Want, "haproxy/haproxy-a/log.jsonl") ||
			!strings.HasPrefix(c.Got, "2 ") || !strings.HasPrefix(c.Want, "<= 4 (HAProxy freq_ctr 2 per 1s") {
			t.Errorf("now_ms off by %d: %+v", off, c)
		}
		if s.Totals.N[evidence.ClassLocal429] != 2 {
			t.Errorf("now_ms off by %d: totals %+v", off, s.Totals)
		}
	}
	e := haproxyEv(t, 0, map[int]bool{0: true, 1: true, 3: true}, []int64{1, 2, 3, 2})
	s := run(t, e.dir).Scenarios[0]
	if s.Status != evidence.Fail || len(s.Limiters) != 1 || s.Limiters[0].OverAdmittedCount != 1 ||
		!strings.Contains(strings.Join(s.Reasons, " "), "h-3") {
		t.Errorf("admitted h-3: %s %v %+v", s.Status, s.Reasons, s.Limiters)
	}
	// the join of the log with the requests
	for name, st := range map[string]string{"requests without haproxy log entry": "pass", "haproxy log agrees with client": "pass",
		"requests with several haproxy log entries": "pass"} {
		if c := mustCheck(t, run(t, haproxyEv(t, 0, map[int]bool{0: true, 1: true}, []int64{1, 2, 3, 4}).dir).Scenarios[0], name); c.Status != st {
			t.Errorf("%s: %+v", name, c)
		}
	}
	lost := haproxyEvLog(t, 0, map[int]bool{0: true, 1: true}, []int64{1, 2, 3, 4}, func(r []haproxyrec.LogRecord) []haproxyrec.LogRecord {
		r[1].Status = 503 // the client got 200
		return append(r[:2], r[3:]...)
	})
	s = run(t, lost.dir).Scenarios[0]
	if c := mustCheck(t, s, "requests without haproxy log entry"); c.Status != "fail" || !strings.Contains(c.Got, "h-2") {
		t.Errorf("lost line: %+v", c)
	}
	if c := mustCheck(t, s, "haproxy log agrees with client"); c.Status != "fail" || !strings.Contains(c.Got, "h-1 haproxy/haproxy-a/log.jsonl:2: client code 200, logged 503") {
		t.Errorf("disagreement: %+v", c)
	}
	if s.Status != evidence.Fail {
		t.Errorf("a lost log line and a disagreement: %s", s.Status)
	}
	// a log that does not parse: the scenario is incomplete, naming the file and line, never judged
	broken := haproxyEv(t, 0, map[int]bool{0: true, 1: true}, []int64{1, 2, 3, 4})
	must(t, os.WriteFile(filepath.Join(broken.dir, evidence.HAProxyPath("haproxy-a", evidence.HAProxyLogFile)), []byte("{\"line\": \"x\"}\n"), 0o644))
	s = run(t, broken.dir).Scenarios[0]
	if s.Status != evidence.NotRun || !strings.Contains(strings.Join(s.Reasons, " "), "log.jsonl:1") {
		t.Errorf("broken log: %s %v", s.Status, s.Reasons)
	}
	if spec := e.scenario.Limiters[0].Model; spec.Align != model.AlignFreqCtr || spec.Count != model.CountAll {
		t.Errorf("declared model %+v", spec)
	}
}
