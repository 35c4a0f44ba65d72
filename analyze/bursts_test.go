package analyze

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	collectnginx "github.com/rlbench/rlbench/collect/nginx"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/model"
)

func mustCheck(t *testing.T, s report.ScenarioReport, name string) report.Check {
	t.Helper()
	c := checkNamed(s, name)
	if c == nil {
		t.Fatalf("no check %q in %+v", name, s.Checks)
	}
	return *c
}

func peakFor(t *testing.T, st report.ArrivalStats, w time.Duration) report.WindowPeak {
	t.Helper()
	p, ok := st.PeakOf(w)
	if !ok {
		t.Fatalf("no %v peak in %+v", w, st.Peaks)
	}
	return p
}

// burstEv is a scenario of n admitted requests with one receipt each at
// the given receipt times (ns after t0), sent 100 µs before.
func burstEv(t *testing.T, recv []int64) *ev {
	e := newEv(t)
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{ReceiptsEqualAdmitted: true}
	for i, r := range recv {
		id := fmt.Sprintf("id-%03d", i)
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "proxy-a", SentNs: t0 + r - 100_000, LatencyNs: 200_000, Code: 200, BytesIn: 2})
		e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0 + r})
	}
	e.attack["sent"] = len(recv)
	return e
}

// TestArrivalPeaksExact: the sliding-window peaks of synthetic receipts,
// their place and instant rate, and the inter-arrival percentiles.
func TestArrivalPeaksExact(t *testing.T) {
	// 100 receipts 1 ms apart, then a burst of 50 within 490 µs 500 ms
	// later (10 µs apart), then one more 2 s after the burst.
	var recv []int64
	for i := range 100 {
		recv = append(recv, int64(i)*ms)
	}
	burst := 600 * ms
	for i := range 50 {
		recv = append(recv, burst+int64(i)*10_000)
	}
	recv = append(recv, burst+2000*ms)
	// file order is not time order: the peaks must not care
	recv[3], recv[60] = recv[60], recv[3]
	s := run(t, burstEv(t, recv).write()).Scenarios[0]
	if s.Status != evidence.Pass {
		t.Fatalf("%s %v", s.Status, s.Reasons)
	}
	a := s.Arrivals
	if a == nil || a.Receipts.Count != 151 || a.Receipts.FirstNs != t0 || a.Receipts.LastNs != t0+burst+2000*ms {
		t.Fatalf("arrivals %+v", a)
	}
	for _, c := range []struct {
		w    time.Duration
		peak int
		at   int64
	}{
		{time.Millisecond, 50, t0 + burst},      // the burst, 490 µs wide
		{10 * time.Millisecond, 50, t0 + burst}, // the 1 ms stream has 10 per 10 ms
		{100 * time.Millisecond, 100, t0},       // the stream: 100 in [0, 100 ms)
		{time.Second, 150, t0 + 0},              // stream + burst within [0, 1 s)
		{3 * time.Second, 151, t0},              // a window no expectation names is not computed...
	} {
		if c.w == 3*time.Second {
			if _, ok := a.Receipts.PeakOf(c.w); ok {
				t.Errorf("3s peak computed without an expectation naming it")
			}
			continue
		}
		p := peakFor(t, a.Receipts, c.w)
		if p.Peak != c.peak || p.AtNs != c.at || p.RatePerSec != float64(c.peak)/c.w.Seconds() {
			t.Errorf("%v: %+v, want %d at %d", c.w, p, c.peak, c.at-t0)
		}
	}
	g := a.Receipts.InterArrival
	// 150 gaps: 99 of 1 ms, 49 of 10 µs, one of 501 ms (stream end to burst: 600-99), one of 2000 ms - 490 µs.
	if g.Count != 150 || g.MinNs != 10_000 || g.MaxNs != 2000*ms-490_000 {
		t.Fatalf("gaps %+v", g)
	}
	if g.P50Ns != ms || g.P90Ns != ms || g.P99Ns < 501*ms*999/1000 || g.P99Ns > 501*ms*1001/1000 {
		t.Errorf("gap percentiles %+v: want p50 = p90 = 1ms, p99 ≈ 501ms", g)
	}
	wantMean := (99*ms + 49*10_000 + 501*ms + 2000*ms - 490_000) / 150
	if g.MeanNs != wantMean {
		t.Errorf("mean %d, want %d", g.MeanNs, wantMean)
	}
	// The clients' admissions are the responses: 100 µs after each receipt.
	if p := peakFor(t, a.Admissions, time.Millisecond); a.Admissions.Count != 151 || p.Peak != 50 || p.AtNs != t0+burst+100_000 {
		t.Errorf("admissions %+v", a.Admissions)
	}
	// With one target and one (unnamed) endpoint there is no split.
	if len(a.Targets) != 0 || len(a.Endpoints) != 0 {
		t.Errorf("split %+v %+v", a.Targets, a.Endpoints)
	}
}

// TestArrivalsPerTargetAndEndpoint: receipts split by the target of their
// ID and by the endpoint that received them; phantom receipts count only
// in the total.
func TestArrivalsPerTargetAndEndpoint(t *testing.T) {
	e := burstEv(t, []int64{0, 1, 2, 3, 10 * ms, 20 * ms})
	for i := range e.requests {
		e.requests[i].Target = []string{"proxy-a", "proxy-b"}[i%2]
		e.receipts[i].Endpoint = []string{"backend-0", "backend-1", "backend-2"}[i%3]
	}
	e.receipts = append(e.receipts, evidence.Receipt{ID: sp("ghost"), RecvNs: t0 + 4})
	s := run(t, e.write()).Scenarios[0]
	a := s.Arrivals
	if a.Receipts.Count != 7 || peakFor(t, a.Receipts, time.Millisecond).Peak != 5 {
		t.Fatalf("all: %+v", a.Receipts)
	}
	if len(a.Targets) != 2 || a.Targets[0].Target != "proxy-a" || a.Targets[0].Receipts.Count != 3 ||
		peakFor(t, a.Targets[0].Receipts, time.Millisecond).Peak != 2 || a.Targets[1].Receipts.Count != 3 || a.Targets[1].Admissions.Count != 3 {
		t.Errorf("targets %+v", a.Targets)
	}
	// backend-1 got the receipts at 1 ns and 10 ms.
	if len(a.Endpoints) != 3 || a.Endpoints[1].Endpoint != "backend-1" || a.Endpoints[1].Receipts.Count != 2 ||
		peakFor(t, a.Endpoints[1].Receipts, 100*time.Millisecond).Peak != 2 || peakFor(t, a.Endpoints[1].Receipts, time.Millisecond).Peak != 1 {
		t.Errorf("endpoints %+v", a.Endpoints)
	}
}

// TestBackendPeakChecks: max, min, a target's receipts and the model's
// bound (a lab token bucket of 200 refilled 5 per 50 ms: at most 201 per
// 10 ms + 5 ms tolerance... as Envoy 1.31 refills continuously).
func TestBackendPeakChecks(t *testing.T) {
	var recv []int64
	for i := range 150 {
		recv = append(recv, int64(i)*20_000) // 150 within 3 ms
	}
	for i := range 60 {
		recv = append(recv, 100*ms+int64(i)*10*ms) // then 100/s
	}
	ten, twenty, hundred := 10, 20, 100
	e := burstEv(t, recv)
	e.scenario.Limits = []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 1, MaxTokens: 200, TokensPerFill: 5,
		FillInterval: int64(50 * time.Millisecond), Refill: evidence.RefillContinuous}}
	e.scenario.Expect.BackendPeak = evidence.PeakExpectations{
		{Window: model.Duration(10 * time.Millisecond), Max: &twenty},                    // fails: 150
		{Window: model.Duration(10 * time.Millisecond), Min: &hundred, Max: &hundred},    // min passes, max fails
		{Window: model.Duration(10 * time.Millisecond), Model: true},                     // 150 <= 201
		{Window: model.Duration(time.Millisecond), Max: &ten, Target: "proxy-a"},         // fails: 50
		{Window: model.Duration(2 * time.Millisecond), Model: true, Target: "proxy-zzz"}, // no such target
	}
	s := run(t, e.write()).Scenarios[0]
	var got []string
	for _, c := range s.Checks {
		if strings.HasPrefix(c.Name, "backend peak") {
			got = append(got, c.Name+" "+c.Status+" want "+c.Want+" got "+c.Got)
		}
	}
	want := []string{
		"backend peak per 10ms fail want <= 20 got 150 (15000/s)",
		"backend peak per 10ms fail want <= 100 got 150 (15000/s)",
		"backend peak per 10ms pass want >= 100 got 150 (15000/s)",
		"backend peak per 10ms within the model pass want <= 201 (Envoy 1.31 local token bucket max_tokens 200, tokens_per_fill 5 every 50ms over 10ms, the 5ms timing tolerance (the default: the evidence measured no lateness) not needed; plus the model's forwards a silence held back) got 150 at +0s",
		"backend peak per 1ms (proxy-a) fail want <= 10 got 50 (50000/s)",
		"backend peak per 2ms (proxy-zzz) fail want receipts of target proxy-zzz got no request was sent to proxy-zzz",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s.Status != evidence.Fail {
		t.Errorf("status %s", s.Status)
	}
	ex := s.Arrivals.Expected
	if len(ex) != 1 || ex[0].Instances != 1 {
		t.Fatalf("expected %+v", ex)
	}
	// The model on the clients' sends: 200 at once (the bucket is full), 1 per 10 ms after.
	for _, w := range ex[0].Windows {
		if w.WindowNs == int64(10*time.Millisecond) && (w.Simulated != 150 || w.Bound != 201) {
			t.Errorf("10ms: %+v, want simulated 150 bound 201", w)
		}
	}
	// Without any declared limiter the model check is unknown, never a pass.
	e2 := burstEv(t, recv)
	e2.scenario.Expect.BackendPeak = evidence.PeakExpectations{{Window: model.Duration(10 * time.Millisecond), Model: true}}
	s2 := run(t, e2.write()).Scenarios[0]
	if c := mustCheck(t, s2, "backend peak per 10ms within the model"); c.Status != report.CheckUnknown || s2.Status != evidence.NotRun {
		t.Errorf("%+v, status %s", c, s2.Status)
	}
}

// TestModelPeakBoundCombinesLimiters: a shared limiter bounds all targets
// at once; per-target ones add up; the least wins; a target no limiter
// covers leaves no bound.
func TestModelPeakBoundCombinesLimiters(t *testing.T) {
	tpf := uint32(1)
	local := model.Spec{Kind: model.KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 10, TokensPerFill: &tpf, FillInterval: model.Duration(time.Second)}
	global := model.Spec{Kind: model.KindFixedWindow, Limit: 5, Unit: "hour"}
	nginx := model.Spec{Kind: model.KindNginxLimitReq, Rate: "100r/s", Burst: 200}
	var reqs evidence.Requests
	for i := range 40 {
		reqs.Add(&evidence.Request{ID: fmt.Sprintf("r%d", i), Target: []string{"a", "b"}[i%2], SentNs: t0 + int64(i)})
	}
	w := 10 * time.Millisecond
	for _, c := range []struct {
		ls       []peakLimiter
		targets  []string
		want     int
		forwards int
		ok       bool
	}{
		{[]peakLimiter{{name: "l", spec: local}}, []string{"a", "b"}, 20, 20, true},                                         // 10 each
		{[]peakLimiter{{name: "l", spec: local}, {name: "g", spec: global, shared: true}}, []string{"a", "b"}, 10, 5, true}, // 2 windows × 5
		{[]peakLimiter{{name: "n", spec: nginx, targets: []string{"a"}}}, []string{"a"}, 2, 20, true},
		{[]peakLimiter{{name: "n", spec: nginx, targets: []string{"a"}}}, []string{"a", "b"}, 0, 0, false},
		{nil, []string{"a"}, 0, 0, false},
	} {
		sims := map[int]simulation{}
		pb, ok := modelPeakBound(c.ls, sims, &reqs, c.targets, w)
		got, _ := pb.at(w)
		fwd := pb.simForwards(sims)
		if got != c.want || ok != c.ok || len(fwd) != c.forwards {
			t.Errorf("%+v on %v: %d %v with %d forwards, want %d %v with %d", c.ls, c.targets, got, ok, len(fwd), c.want, c.ok, c.forwards)
		}
	}
}

// modelPeakWindows is heldBackScan's window to report: the worst
// violation, or the fullest window when every one fits.
func modelPeakWindows(recv, fwd []int64, w, tol time.Duration, bound int) peakWindow {
	return heldBackScan(recv, fwd, w, tol, bound).result()
}

// TestModelPeakWindowsAllowsOnlyHeldBackForwards: a leaky bucket's
// forwards every 10 ms, received on time, fit 2 per 10 ms; after a 235 ms
// silence the 23 forwards it held back may arrive together (a stalled
// machine), and later windows keep that allowance while the backlog
// drains; but the same bunch without a silence before it, or a burst the
// model queues, has nothing to explain it.
func TestModelPeakWindowsAllowsOnlyHeldBackForwards(t *testing.T) {
	const w, tol, bound = 10 * time.Millisecond, 5 * time.Millisecond, 2
	var fwd []int64
	for i := range 200 {
		fwd = append(fwd, int64(i)*10*ms)
	}
	onTime := make([]int64, len(fwd))
	for i, f := range fwd {
		onTime[i] = f + 300_000 // 0.3 ms late each
	}
	if v := modelPeakWindows(onTime, fwd, w, tol, bound); v.count > v.allowed || v.count != 1 || v.backlog != 0 {
		t.Errorf("on time: %+v", v)
	}
	// A stall from 1475 ms to 1708 ms: the 23 forwards due meanwhile arrive at 1708 ms.
	var stalled []int64
	for i, f := range fwd {
		switch {
		case f < 1475*ms:
			stalled = append(stalled, onTime[i])
		case f < 1708*ms:
			stalled = append(stalled, 1708*ms+int64(i%50)*20_000)
		default:
			stalled = append(stalled, onTime[i])
		}
	}
	slices.Sort(stalled)
	v := modelPeakWindows(stalled, fwd, w, tol, bound)
	if v.count > v.allowed || v.count < 23 || v.backlog < 22 {
		t.Errorf("stall: %+v, want the bunch allowed by its backlog", v)
	}
	// 100 ms windows across the bunch: later window starts keep the backlog.
	if v := modelPeakWindows(stalled, fwd, 100*time.Millisecond, tol, 11); v.count > v.allowed {
		t.Errorf("stall, 100ms: %+v", v)
	}
	// The same 23 in one ms with nothing held back (every earlier forward received).
	bunch := append([]int64{}, onTime[:100]...)
	for i := range 23 {
		bunch = append(bunch, 1000*ms+int64(i)*20_000)
	}
	if v := modelPeakWindows(bunch, fwd[:100], w, tol, bound); v.count <= v.allowed || v.count != 23 {
		t.Errorf("unexplained bunch: %+v, want a violation", v)
	}
	// A limiter that lets 201 through at once where the model queues them.
	var burst []int64
	for i := range 201 {
		burst = append(burst, int64(i)*10_000)
	}
	if v := modelPeakWindows(burst, fwd[:201], w, tol, bound); v.count <= v.allowed || v.at != 0 {
		t.Errorf("no smoothing: %+v, want a violation at the start", v)
	}
	// nodelay: the model forwards 201 at the sends (within 3 ms); the
	// receipts come 6..9 ms later: that is latency, not a silence, and the
	// allowance stays the bound (the model forwards no more than 201).
	var at, late []int64
	for i := range 201 {
		at = append(at, int64(i)*15_000)
		late = append(late, 6*ms+int64(i)*15_000)
	}
	if v := modelPeakWindows(late, at, w, tol, 202); v.count != 201 || v.allowed != 202 || v.backlog != 0 {
		t.Errorf("latency: %+v, want 201 allowed 202 without backlog", v)
	}
	// A bucket that lets 300 through where the model forwards 200: caught, latency or not.
	var over []int64
	for i := range 300 {
		over = append(over, 6*ms+int64(i)*10_000)
	}
	if v := modelPeakWindows(over, at[:200], w, tol, 201); v.count <= v.allowed || v.allowed != 201 {
		t.Errorf("over-admission: %+v, want a violation against 201", v)
	}
	if v := modelPeakWindows(nil, fwd, w, tol, bound); v.count != 0 || v.allowed != bound {
		t.Errorf("no receipts: %+v", v)
	}
}

// attemptEv: ids with the given attempt counts on their receipts (0: no header).
func attemptEv(t *testing.T, attempts map[string][]int) *ev {
	e := newEv(t)
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{}
	for i, id := range slices.Sorted(maps.Keys(attempts)) {
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "proxy-a", SentNs: t0 + int64(i)*ms, LatencyNs: ms, Code: 503, BytesIn: 9})
		for k, a := range attempts[id] {
			r := evidence.Receipt{ID: sp(id), RecvNs: t0 + int64(i)*ms + int64(k)*1000, Status: 503}
			if a > 0 {
				r.Headers = map[string]string{evidence.AttemptCountHeader: strconv.Itoa(a)}
			}
			e.receipts = append(e.receipts, r)
		}
	}
	e.attack["sent"] = len(attempts)
	return e
}

// TestAmplificationSplitsRetriesFromResends: distinct attempt counts are
// proxy retries; a repeated attempt count, or repeats without any header,
// are client re-sends; the factor counts every receipt of a passed request.
func TestAmplificationSplitsRetriesFromResends(t *testing.T) {
	e := attemptEv(t, map[string][]int{
		"a-retried":  {1, 2, 3, 4}, // 3 proxy retries
		"b-once":     {1},
		"c-resent":   {1, 1},       // the client sent it twice: 1 re-send
		"d-both":     {1, 2, 1, 2}, // re-sent, and each retried once: 2 re-sends, 1 retry
		"e-noheader": {0, 0},       // nothing explains the repeat
		"f-none":     {},           // no receipt: it did not pass (a 503 of unknown origin)
	})
	four := 4.0
	e.scenario.Expect.Amplification = &evidence.FactorRange{Max: &four}
	s := run(t, e.write()).Scenarios[0]
	a := s.Amplification
	if a == nil {
		t.Fatal("no amplification section")
	}
	if a.Passed != 5 || a.Attempts != 13 || a.MaxAttempts != 4 || a.ProxyRetries != 4 || a.ClientResends != 4 ||
		fmt.Sprint(a.ByAttempts) != "[0 1 2 0 2]" || a.ExplainedBy[report.ExplainedByAttemptCount] != 4 {
		t.Errorf("amplification %+v", a)
	}
	if a.Factor != 13.0/5 {
		t.Errorf("factor %v", a.Factor)
	}
	rc := s.Receipts
	if rc.Duplicates != 8 || rc.ProxyRetries != 4 || rc.Resent != 4 || strings.Join(rc.ResentIDs, ",") != "c-resent,d-both,e-noheader" {
		t.Errorf("receipts %+v", rc)
	}
	c := mustCheck(t, s, "duplicate receipts (re-sent)")
	if c.Status != report.CheckFail || c.Got != "4 (c-resent,d-both,e-noheader,…); 4 more are proxy retries" {
		t.Errorf("%+v", c)
	}
	if c := mustCheck(t, s, "upstream attempts per passed request"); c.Status != report.CheckPass || !strings.HasPrefix(c.Got, "2.60 (13 attempts for 5 requests; 4 proxy retries, 4 client re-sends)") {
		t.Errorf("%+v", c)
	}

	// The lab retry storm: 4 attempts each, all explained: the re-sent check passes.
	storm := map[string][]int{}
	for i := range 30 {
		storm[fmt.Sprintf("s-%02d", i)] = []int{1, 2, 3, 4}
	}
	e = attemptEv(t, storm)
	three := 3.0
	e.scenario.Expect.Amplification = &evidence.FactorRange{Min: &three, Max: &four}
	s = run(t, e.write()).Scenarios[0]
	if s.Status != evidence.Pass || s.Amplification.Factor != 4 || s.Amplification.ProxyRetries != 90 || s.Receipts.Resent != 0 {
		t.Fatalf("storm: %s %v %+v", s.Status, s.Reasons, s.Amplification)
	}
	if c := mustCheck(t, s, "duplicate receipts (re-sent)"); c.Got != "0; 90 more are proxy retries" {
		t.Errorf("%+v", c)
	}
	e.scenario.Expect.Amplification = &evidence.FactorRange{Max: &three}
	if s := run(t, e.write()).Scenarios[0]; s.Status != evidence.Fail {
		t.Errorf("4× with max 3: %s", s.Status)
	}
}

// TestAmplificationPerFaultWindow: requests sent inside a set/clear window
// are amplified, those outside are not.
func TestAmplificationPerFaultWindow(t *testing.T) {
	m := map[string][]int{}
	for i := range 10 {
		if i >= 3 && i < 7 {
			m[fmt.Sprintf("r-%02d", i)] = []int{1, 2, 3}
		} else {
			m[fmt.Sprintf("r-%02d", i)] = []int{1}
		}
	}
	e := attemptEv(t, m)
	dir := e.write()
	writeLines(t, filepath.Join(dir, evidence.FaultsFile), []evidence.Fault{
		{Name: "fail backend", Action: evidence.ActionSet, Target: "backend", BeginNs: t0 + 3*ms - 1, EndNs: t0 + 3*ms - 1, OK: true},
		{Name: "fail backend", Action: evidence.ActionClear, Target: "backend", BeginNs: t0 + 7*ms - 1, EndNs: t0 + 7*ms - 1, OK: true},
	})
	s := run(t, dir).Scenarios[0]
	a := s.Amplification
	if len(a.Windows) != 2 {
		t.Fatalf("windows %+v", a.Windows)
	}
	if w := a.Windows[0]; w.Name != "fail backend" || w.Passed != 4 || w.Attempts != 12 || w.Factor != 3 {
		t.Errorf("inside: %+v", w)
	}
	if w := a.Windows[1]; w.Name != "outside fault windows" || w.Passed != 6 || w.Attempts != 6 || w.Factor != 1 {
		t.Errorf("outside: %+v", w)
	}
	if a.Factor != 1.8 {
		t.Errorf("total %v", a.Factor)
	}
}

// TestNoAmplificationSectionWithoutRetries: one receipt per request and no
// attempt counts: no section (reports of plain scenarios are unchanged).
func TestNoAmplificationSectionWithoutRetries(t *testing.T) {
	if s := run(t, newEv(t).demo().write()).Scenarios[0]; s.Amplification != nil {
		t.Errorf("%+v", s.Amplification)
	}
}

// nginxFixtureEv turns a capture of shared/fixtures/nginx into a scenario
// directory: client.jsonl → requests.jsonl (target "nginx"), upstream.jsonl
// → receipts.jsonl (endpoint = the upstream port), access.log →
// nginx/nginx/access.log, the stub_status pages → nginx/nginx/stub_status.*.json.
func nginxFixtureEv(t *testing.T, fixture string, byLimitReq map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	d := evidence.Dir(dir)
	read := func(name string) []byte { return testfix.ReadFixture(t, "nginx", fixture+"/"+name) }
	var reqs []evidence.Request
	eachJSONLine(t, read("client.jsonl"), func(b []byte) {
		var c struct {
			ID        string `json:"id"`
			SendNs    int64  `json:"send_ns"`
			Code      int    `json:"code"`
			LatencyNs int64  `json:"latency_ns"`
			XLimitReq string `json:"x_limit_req_status"`
			Method    string `json:"method"`
		}
		must(t, json.Unmarshal(b, &c))
		reqs = append(reqs, evidence.Request{ID: c.ID, Target: "nginx", Method: c.Method, SentNs: c.SendNs, LatencyNs: c.LatencyNs, Code: c.Code,
			BytesIn: 150, Headers: map[string]string{"x-limit-req-status": c.XLimitReq, "server": "nginx/1.22.1"}})
	})
	var recs []evidence.Receipt
	eachJSONLine(t, read("upstream.jsonl"), func(b []byte) {
		var u struct {
			ID     string `json:"id"`
			RecvNs int64  `json:"recv_ns"`
			Port   int    `json:"port"`
			Method string `json:"method"`
		}
		must(t, json.Unmarshal(b, &u))
		recs = append(recs, evidence.Receipt{ID: sp(u.ID), RecvNs: u.RecvNs, Method: u.Method, Endpoint: "port-" + strconv.Itoa(u.Port)})
	})
	writeLines(t, d.Requests(), reqs)
	writeLines(t, d.Receipts(), recs)
	// The scenario expects the README's $limit_req_status counts (a
	// scenario that asks nothing is NOT_RUN and runs no check).
	want := map[string]evidence.Range{}
	for k, n := range byLimitReq {
		want[k] = evidence.Range{Min: n, Max: n}
	}
	sc, _ := json.Marshal(evidence.Scenario{Schema: evidence.ScenarioSchema, Name: fixture, Expect: evidence.Expectation{LimitReqStatus: want}})
	must(t, os.WriteFile(d.Scenario(), sc, 0o644))
	att, _ := json.Marshal(map[string]any{"complete": true, "sent": len(reqs)})
	must(t, os.WriteFile(d.Attack(), att, 0o644))
	must(t, os.MkdirAll(d.Path(evidence.NginxPath("nginx", "")), 0o755))
	must(t, os.WriteFile(d.Path(evidence.NginxPath("nginx", evidence.NginxAccessLogFile)), read("access.log"), 0o644))
	must(t, evidence.WriteNginxConf(d, "nginx", read("nginx.conf"))) // worker_processes 1
	for label, file := range map[string]string{evidence.LabelBefore: "stub_status_before.txt", evidence.LabelAfter: "stub_status_after.txt"} {
		st, err := collectnginx.ParseStubStatus(bytes.NewReader(read(file)), file)
		must(t, err)
		b, _ := json.Marshal(st)
		must(t, os.WriteFile(d.Path(evidence.NginxPath("nginx", evidence.NginxStubStatusJSON(label))), b, 0o644))
	}
	return dir
}

func eachJSONLine(t *testing.T, b []byte, fn func([]byte)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), len(b)+1) // a line may be as long as the input
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			fn(l)
		}
	}
	must(t, sc.Err())
}

// TestNginxFixturesClassifiedByTheLog: the real captures' exact counts
// (shared/fixtures/nginx/README.md), classified by the access log: every
// limit_req REJECTED reply (503 by default, 429 with limit_req_status) is
// local_429 and no leaked receipt hides among them; the upstream tries of
// proxy_next_upstream are proxy retries; stub_status agrees with the log.
func TestNginxFixturesClassifiedByTheLog(t *testing.T) {
	for _, c := range []nginxFixtureCase{
		{fixture: "a-rate10-noburst", admitted: 1, local429: 19, receipts: 1, passed: 1, attempts: 1,
			byLimitReq: map[string]int{"PASSED": 1, "REJECTED": 19}},
		{fixture: "b-burst5-delay", admitted: 6, local429: 14, receipts: 6, passed: 6, attempts: 6,
			byLimitReq: map[string]int{"PASSED": 1, "DELAYED": 5, "REJECTED": 14}},
		{fixture: "c-burst5-nodelay", admitted: 9, local429: 16, receipts: 9, passed: 9, attempts: 9,
			byLimitReq: map[string]int{"PASSED": 9, "REJECTED": 16}},
		{fixture: "d-burst10-delay4", admitted: 11, local429: 9, receipts: 11, passed: 11, attempts: 11,
			byLimitReq: map[string]int{"PASSED": 5, "DELAYED": 6, "REJECTED": 9}},
		{fixture: "e-status429", admitted: 1, local429: 19, receipts: 1, passed: 1, attempts: 1,
			byLimitReq: map[string]int{"PASSED": 1, "REJECTED": 19}},
		{fixture: "f-next-upstream-500", other5xx: 2, backend5xx: 2, receipts: 4, passed: 4, attempts: 4, retries: 2,
			byLimitReq: map[string]int{"none": 4}},
		{fixture: "f2-next-upstream-500-maxfails0", backend5xx: 4, receipts: 10, passed: 4, attempts: 10, retries: 6,
			byLimitReq: map[string]int{"none": 4}},
		{fixture: "f3-next-upstream-timeout-error", admitted: 1, receipts: 2, passed: 1, attempts: 2, retries: 1,
			byLimitReq: map[string]int{"none": 1}},
		{fixture: "h-dry-run", admitted: 20, receipts: 20, passed: 20, attempts: 20,
			byLimitReq: map[string]int{"PASSED": 1, "DELAYED_DRY_RUN": 5, "REJECTED_DRY_RUN": 14}},
		{fixture: "k-two-zones", admitted: 3, local429: 17, receipts: 3, passed: 3, attempts: 3,
			byLimitReq: map[string]int{"PASSED": 3, "REJECTED": 17}},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			s := run(t, nginxFixtureEv(t, c.fixture, c.byLimitReq)).Scenarios[0]
			checkNginxFixtureCounts(t, s, c)
			checkNginxFixtureRetries(t, s, c)
		})
	}
}

// nginxFixtureCase is one capture of TestNginxFixturesClassifiedByTheLog
// and its exact counts.
type nginxFixtureCase struct {
	fixture             string
	admitted, local429  int
	other5xx            int
	backend5xx          int // 5xx of a request whose try reached the backend (its receipt)
	receipts            int
	passed, attempts    int
	retries             int
	byLimitReq          map[string]int
	rejectedBy, resends int
}

// checkNginxFixtureCounts: the classes, receipts and nginx section of a
// capture have its exact counts, and stub_status agrees with the log.
func checkNginxFixtureCounts(t *testing.T, s report.ScenarioReport, c nginxFixtureCase) {
	t.Helper()
	tot := s.Totals
	if tot.N[evidence.ClassAdmitted] != c.admitted || tot.N[evidence.ClassLocal429] != c.local429 || tot.N[evidence.ClassOther5xx] != c.other5xx ||
		tot.N[evidence.ClassBackend5xx] != c.backend5xx || tot.N[evidence.ClassOther4xx] != 0 || s.Receipts.Total != c.receipts {
		t.Errorf("totals %+v, receipts %d", tot, s.Receipts.Total)
	}
	rc := s.Receipts
	if rc.RejectedWithReceipt != 0 || rc.AdmittedWithoutReceipt != 0 || rc.Resent != c.resends || rc.ProxyRetries != c.retries {
		t.Errorf("receipts %+v", rc)
	}
	n := s.Nginx
	if n == nil || len(n.Proxies) != 1 || n.Rejected != c.local429 || n.Reclassified != c.local429 || n.MissingCount != 0 || n.SeveralCount != 0 ||
		n.DisagreementCount != 0 || n.Unjoined != 0 {
		t.Fatalf("nginx %+v", n)
	}
	if fmt.Sprint(n.Proxies[0].ByLimitReqStatus) != fmt.Sprint(c.byLimitReq) {
		t.Errorf("limit_req_status %v, want %v", n.Proxies[0].ByLimitReqStatus, c.byLimitReq)
	}
	if n.Producers[envoyLocal] != c.local429 {
		t.Errorf("producers %v", n.Producers)
	}
	if ch := mustCheck(t, s, "nginx: stub_status requests = access log records + 1"); ch.Status != report.CheckPass {
		t.Errorf("%+v", ch)
	}
}

// checkNginxFixtureRetries: nginx's proxy retries of a capture show in the
// amplification section, and fail the scenario when undeclared.
func checkNginxFixtureRetries(t *testing.T, s report.ScenarioReport, c nginxFixtureCase) {
	t.Helper()
	// The section appears when nginx retried a request (proxy_next_upstream).
	a := s.Amplification
	switch {
	case c.retries == 0 && a != nil:
		t.Errorf("amplification without retries: %+v", a)
	case c.retries > 0 && (a == nil || a.Passed != c.passed || a.Attempts != c.attempts || a.ProxyRetries != c.retries || a.ClientResends != 0):
		t.Errorf("amplification %+v", a)
	}
	// No check fails, but the retry storm nobody declared
	// (expect.amplification absent) fails "backend amplification".
	for _, ch := range s.Checks {
		storm := c.retries > 0 && ch.Name == "backend amplification" && strings.Contains(ch.Got, "declare expect.amplification")
		if (ch.Status == report.CheckFail) != storm {
			t.Errorf("check %+v", ch)
		}
	}
	if c.retries > 0 && s.Status != evidence.Fail {
		t.Errorf("retries without expect.amplification: %s", s.Status)
	}
}

const envoyLocal = "local_limiter"

// TestNginxLogFindings: a REJECTED request with a receipt is leaked, a
// request logged twice is several, one missing from the log is missing, a
// status the client did not get disagrees, receipts beyond the logged tries
// are client re-sends, and expect.limit_req_status is checked.
func TestNginxLogFindings(t *testing.T) {
	e := newEv(t)
	e.scenario.IntendedLimit = nil
	e.scenario.Expect = evidence.Expectation{LimitReqStatus: map[string]evidence.Range{"PASSED": {Min: 2, Max: 2}, "REJECTED": {Min: 1, Max: 1}}}
	add := func(id string, code int, recs int) {
		e.requests = append(e.requests, evidence.Request{ID: id, Target: "nginx-a", SentNs: t0 + int64(len(e.requests))*ms, LatencyNs: ms, Code: code, BytesIn: 5})
		for k := range recs {
			e.receipts = append(e.receipts, evidence.Receipt{ID: sp(id), RecvNs: t0 + int64(len(e.requests))*ms + int64(k)})
		}
	}
	add("ok", 200, 1)
	add("leaked", 503, 1)
	add("twice", 200, 1)
	add("missing", 200, 1)
	add("resent", 500, 3) // logged with 2 server tries, received 3 times
	e.attack["sent"] = len(e.requests)
	dir := e.write()
	up := func(n int, status int) []nginxrec.UpstreamTry {
		var out []nginxrec.UpstreamTry
		for i := range n {
			out = append(out, nginxrec.UpstreamTry{Addr: fmt.Sprintf("127.0.0.1:%d", 9000+i), Server: true, Status: status})
		}
		return out
	}
	recs := []nginxrec.AccessRecord{
		{Line: 1, ID: "ok", Status: 200, LimitReqStatus: nginxrec.LimitReqPassed, Upstreams: up(1, 200)},
		{Line: 2, ID: "leaked", Status: 503, LimitReqStatus: nginxrec.LimitReqRejected},
		{Line: 3, ID: "twice", Status: 200, LimitReqStatus: nginxrec.LimitReqPassed, Upstreams: up(1, 200)},
		{Line: 4, ID: "twice", Status: 429, LimitReqStatus: nginxrec.LimitReqDelayed, Upstreams: up(1, 429)},
		{Line: 5, ID: "resent", Status: 500, Upstreams: up(2, 500)},
		{Line: 6, ID: "stranger", Status: 200},
	}
	writeLines(t, filepath.Join(dir, evidence.NginxPath("nginx-a", evidence.NginxAccessFile)), recs)
	s := run(t, dir).Scenarios[0]
	if s.Totals.N[evidence.ClassLocal429] != 1 || s.Receipts.RejectedWithReceipt != 1 || strings.Join(s.Receipts.LeakedIDs, ",") != "leaked" {
		t.Errorf("leak: totals %+v receipts %+v", s.Totals, s.Receipts)
	}
	if s.Receipts.Resent != 1 || s.Receipts.ProxyRetries != 1 || strings.Join(s.Receipts.ResentIDs, ",") != "resent" {
		t.Errorf("resent %+v", s.Receipts)
	}
	n := s.Nginx
	if n.MissingCount != 1 || n.Missing[0] != "missing" || n.SeveralCount != 1 || n.Several[0] != "twice" || n.Unjoined != 1 || n.DisagreementCount != 1 ||
		!strings.Contains(n.Disagreements[0], "twice nginx/nginx-a:4: client code 200, logged 429") {
		t.Errorf("nginx %+v", n)
	}
	want := map[string]string{
		"requests without nginx log entry":        "fail",
		"nginx log agrees with client":            "fail",
		"requests with several nginx log entries": "fail",
		"limit_req_status PASSED":                 "pass",
		"limit_req_status REJECTED":               "pass",
		"rejected with receipt (leaked)":          "fail",
	}
	for name, st := range want {
		if c := mustCheck(t, s, name); c.Status != st {
			t.Errorf("%s: %+v, want %s", name, c, st)
		}
	}
	if c := mustCheck(t, s, "limit_req_status PASSED"); c.Got != "2" {
		t.Errorf("%+v", c)
	}
	// A status range covering every record nginx logged cannot fail (issue 21).
	e.scenario.Expect.LimitReqStatus["DELAYED"] = evidence.Range{Min: 0, Max: 6}
	e.write()
	if c := mustCheck(t, run(t, dir).Scenarios[0], "limit_req_status DELAYED"); c.Status != report.CheckNotChecked ||
		c.Got != "1 (not checked: 0..6 cannot fail: nginx logged 6 records, so it is 0..6)" {
		t.Errorf("%+v", c)
	}
}

// TestReceiptsEqualAdmittedSaysWhatItCounted (issue 21): with proxy
// retries, "receipts = admitted" printed "want 5, got 5" while 15 receipts
// were on file, and the storm PASSed. It now says it counted IDs and what
// their receipts are, and a retry storm without expect.amplification FAILs
// "backend amplification", naming the expectation that would judge it.
func TestReceiptsEqualAdmittedSaysWhatItCounted(t *testing.T) {
	storm := map[string][]int{}
	for i := range 5 {
		storm[fmt.Sprintf("s-%02d", i)] = []int{1, 2, 3}
	}
	e := attemptEv(t, storm)
	e.scenario.Expect = evidence.Expectation{ReceiptsEqualAdmitted: true}
	dir := e.write()
	s := run(t, dir).Scenarios[0]
	if c := mustCheck(t, s, "receipts = admitted"); c.Status != report.CheckPass || c.Want != "5" || c.Got != "5 IDs with receipts (15 receipts: 10 proxy retries)" {
		t.Errorf("%+v", c)
	}
	c := mustCheck(t, s, "backend amplification")
	if s.Status != evidence.Fail || c.Status != report.CheckFail ||
		c.Got != "3.00×: 10 proxy retries (15 attempts for 5 requests that passed the limiter); declare expect.amplification to judge it" {
		t.Fatalf("status %s, %+v, reasons %s", s.Status, c, reasons(s))
	}
	// Declared, the amplification is judged by the expectation alone.
	three := 3.0
	e.scenario.Expect.Amplification = &evidence.FactorRange{Min: &three, Max: &three}
	e.write()
	s = run(t, dir).Scenarios[0]
	if s.Status != evidence.Pass || slices.ContainsFunc(s.Checks, func(c report.Check) bool { return c.Name == "backend amplification" }) {
		t.Fatalf("amplification 3..3: status %s, checks %+v", s.Status, s.Checks)
	}
	// A client re-send beside the retries is named as one (and fails its own check).
	e.receipts = append(e.receipts, e.receipts[0])
	e.write()
	s = run(t, dir).Scenarios[0]
	if c := mustCheck(t, s, "receipts = admitted"); c.Got != "5 IDs with receipts (16 receipts: 10 proxy retries, 1 client re-send)" {
		t.Errorf("%+v", c)
	}
	// One receipt each: the count alone, as before.
	if c := mustCheck(t, run(t, newEv(t).demo().write()).Scenarios[0], "receipts = admitted"); c.Got != "10" {
		t.Errorf("demo: %+v", c)
	}
}

// TestMergeSorted: two sorted runs merged in order (a limiter's simulated
// forwards of several targets), equal values kept, an empty side
// returning the other.
func TestMergeSorted(t *testing.T) {
	for _, c := range []struct{ a, b, want []int64 }{
		{nil, nil, nil},
		{[]int64{1, 3}, nil, []int64{1, 3}},
		{nil, []int64{2}, []int64{2}},
		{[]int64{1, 3, 5, 5}, []int64{0, 3, 4, 9}, []int64{0, 1, 3, 3, 4, 5, 5, 9}},
	} {
		if got := mergeSorted(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("mergeSorted(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
