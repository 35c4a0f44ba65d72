package analyze

import (
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

func TestBoundFixedWindowStraddlingBoundary(t *testing.T) {
	hour := int64(time.Hour)
	boundary := (t0 / hour) * hour
	fw := []evidence.LimitSpec{{Kind: "fixed_window", Limit: 5, Unit: "HOUR"}}
	// Inside one window: 5.
	if b := configuredBound(fw, boundary+int64(time.Minute), boundary+2*int64(time.Minute)); b.Allowed != 5 {
		t.Fatalf("one window: %+v", b)
	}
	// A 2 s run across the boundary touches two windows: 10 is explained, not mislabelled.
	b := configuredBound(fw, boundary-int64(time.Second), boundary+int64(time.Second))
	if b.Allowed != 10 || b.DurationNs != 2*int64(time.Second) {
		t.Fatalf("straddling: %+v", b)
	}
	// first-hit windows count from the first request instead.
	fh := []evidence.LimitSpec{{Kind: "fixed_window", Limit: 5, Unit: "HOUR", WindowStart: "first-hit"}}
	if b := configuredBound(fh, boundary-int64(time.Second), boundary+int64(time.Second)); b.Allowed != 5 {
		t.Fatalf("first-hit: %+v", b)
	}
}

func TestBoundTokenBucket(t *testing.T) {
	s := t0
	sec := int64(time.Second)
	tb := evidence.LimitSpec{Kind: "token_bucket", Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: s}
	// 10 ms attack right after start: no refill, 2 × 5.
	if b := configuredBound([]evidence.LimitSpec{tb}, s+sec, s+sec+10_000_000); b.Allowed != 10 {
		t.Fatalf("no refill: %+v", b)
	}
	// fill every second; attack from 0.5 s to 2.5 s after start sees ticks at 1 s and 2 s.
	tb.FillInterval, tb.TokensPerFill = sec, 1
	if b := configuredBound([]evidence.LimitSpec{tb}, s+sec/2, s+5*sec/2); b.Allowed != 2*(5+2) {
		t.Fatalf("two refills: %+v", b)
	}
	// unknown start: worst phase, floor(2s/1s)+1 = 3 ticks.
	tb.StartNs = 0
	if b := configuredBound([]evidence.LimitSpec{tb}, s+sec/2, s+5*sec/2); b.Allowed != 2*(5+3) {
		t.Fatalf("unknown phase: %+v", b)
	}
	// local in front of global: the smaller bound holds.
	both := []evidence.LimitSpec{{Kind: "token_bucket", Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Hour), StartNs: s},
		{Kind: "fixed_window", Limit: 5, Unit: "HOUR"}}
	if b := configuredBound(both, s+sec, s+2*sec); b.Allowed != 5 || len(b.Explain) != 2 {
		t.Fatalf("series: %+v", b)
	}
}

func TestFaultWindows(t *testing.T) {
	ms := int64(time.Millisecond)
	e := newEv(t)
	e.attack["sent"] = 3
	for i, r := range []struct {
		sent, lat int64
		code      int
	}{{0, 1, 200}, {20, 1, 500}, {39, 5, 500}} {
		e.requests = append(e.requests, evidence.Request{ID: string(rune('a' + i)), Target: "proxy-a", SentNs: t0 + r.sent*ms, LatencyNs: r.lat * ms, Code: r.code})
	}
	e.receipts = []evidence.Receipt{{ID: sp("a"), RecvNs: t0}}
	e.scenario.Expect = evidence.Expectation{}
	dir := e.write()
	writeLines(t, dir+"/"+evidence.FaultsFile, []evidence.Fault{
		{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0 + 10*ms, EndNs: t0 + 11*ms, OK: true},
		{Name: "start rls", Action: evidence.ActionStart, Target: "rls", BeginNs: t0 + 40*ms, EndNs: t0 + 41*ms, OK: true},
	})
	s := run(t, dir).Scenarios[0]
	if len(s.FaultWindows) != 1 {
		t.Fatalf("windows %+v", s.FaultWindows)
	}
	w := s.FaultWindows[0]
	if w.BeginNs != t0+10*ms || w.EndNs != t0+41*ms || w.Open {
		t.Fatalf("window %+v", w)
	}
	if w.Inside.Sent != 1 || w.Inside.N[evidence.ClassRLSError] != 1 || w.Straddling.Sent != 1 || w.Receipts != 0 {
		t.Fatalf("tally inside %+v straddling %+v receipts %d", w.Inside, w.Straddling, w.Receipts)
	}
}

// Continuous refill (Envoy >= 1.31): max_tokens plus the fractional
// accrual over the duration, whole tokens, whatever the timer phase.
func TestConfiguredBoundContinuousRefill(t *testing.T) {
	sec := int64(time.Second)
	tb := evidence.LimitSpec{Kind: "token_bucket", Buckets: 2, MaxTokens: 5, TokensPerFill: 10, FillInterval: sec, StartNs: sec, Refill: evidence.RefillContinuous}
	// 1.5 s: 5 + 15 per bucket (a timer bucket could count only one tick: 15).
	if b := configuredBound([]evidence.LimitSpec{tb}, 10*sec, 10*sec+3*sec/2); b.Allowed != 2*20 {
		t.Fatalf("continuous bound %+v", b)
	}
	tb.Refill = ""
	if b := configuredBound([]evidence.LimitSpec{tb}, 10*sec+sec/4, 10*sec+sec/4+3*sec/2); b.Allowed != 2*(5+10) {
		t.Fatalf("timer bound (the default of older evidence) %+v", b)
	}
}

// A set of backend faults opens a window on its target that the clear of
// the same target closes.
func TestFaultWindowsBackendSetClear(t *testing.T) {
	ms := int64(time.Millisecond)
	e := newEv(t)
	e.attack["sent"] = 1
	e.requests = append(e.requests, evidence.Request{ID: "a", Target: "proxy-a", SentNs: t0 + 20*ms, LatencyNs: ms, Code: 503})
	e.scenario.Expect = evidence.Expectation{}
	dir := e.write()
	writeLines(t, dir+"/"+evidence.FaultsFile, []evidence.Fault{
		{Name: "fail backend-1", Action: evidence.ActionSet, Target: "backend-1", BeginNs: t0 + 10*ms, EndNs: t0 + 10*ms, OK: true, Detail: `{"error_status":503}`},
		{Name: "fail backend-1", Action: evidence.ActionClear, Target: "backend-1", BeginNs: t0 + 30*ms, EndNs: t0 + 30*ms, OK: true},
	})
	s := run(t, dir).Scenarios[0]
	if len(s.FaultWindows) != 1 || s.FaultWindows[0].BeginNs != t0+10*ms || s.FaultWindows[0].EndNs != t0+30*ms || s.FaultWindows[0].Inside.Sent != 1 {
		t.Fatalf("windows %+v", s.FaultWindows)
	}
}
