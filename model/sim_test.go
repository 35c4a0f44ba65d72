package model

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// run offers (key, at-offset) pairs to a fresh simulator of spec.
func run(t *testing.T, spec Spec, reqs ...Request) []Decision {
	t.Helper()
	m, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		reqs[i].At += t0
	}
	return Simulate(m, reqs, 1)
}

func at(offset int64) Request { return Request{At: offset, Key: "k"} }

func burst(n int, offset int64) []Request {
	out := make([]Request, n)
	for i := range out {
		out[i] = at(offset)
	}
	return out
}

func admits(ds []Decision) (n int) {
	for _, d := range ds {
		if d.Admit && !d.Shadow {
			n++
		}
	}
	return n
}

func wantAdmits(t *testing.T, ds []Decision, want ...bool) {
	t.Helper()
	if len(ds) != len(want) {
		t.Fatalf("%d decisions, want %d", len(ds), len(want))
	}
	for i := range ds {
		if got := ds[i].Admit && !ds[i].Shadow; got != want[i] {
			t.Errorf("request %d: admit %v, want %v (%+v)", i, got, want[i], ds[i])
		}
	}
}

func TestNginxRatePerMinuteTruncates(t *testing.T) {
	if r, _ := parseNginxRate("1r/m"); r != 16 {
		t.Fatalf("1r/m stored as %d milli-requests/s, want 16", r)
	}
	if r, _ := parseNginxRate("30r/m"); r != 500 {
		t.Fatalf("30r/m stored as %d, want 500", r)
	}
	spec := Spec{Kind: KindNginxLimitReq, Rate: "1r/m"}
	// the capture m: 0 s admitted, 61 s rejected (excess 1000-976 = 24),
	// 63 s admitted; 1/60 r/s exactly would admit at 61 s
	wantAdmits(t, run(t, spec, at(0), at(61000*ms), at(63000*ms)), true, false, true)
	// the first admit needs 62.5 s: 16*62499/1000 = 999 < 1000
	wantAdmits(t, run(t, spec, at(0), at(62499*ms)), true, false)
	wantAdmits(t, run(t, spec, at(0), at(62500*ms)), true, true)
}

func TestNginxBurstPlusOneAndDelays(t *testing.T) {
	ds := run(t, Spec{Kind: KindNginxLimitReq, Rate: "10r/s", Burst: 5}, burst(20, 0)...)
	if n := admits(ds); n != 6 {
		t.Fatalf("burst=5: %d admitted at one instant, want burst+1 = 6", n)
	}
	for i, want := range []time.Duration{0, 100, 200, 300, 400, 500} {
		if ds[i].Delay != want*time.Millisecond {
			t.Errorf("request %d delayed %v, want %v", i, ds[i].Delay, want*time.Millisecond)
		}
	}
	ds = run(t, Spec{Kind: KindNginxLimitReq, Rate: "10r/s", Burst: 5, NoDelay: true}, burst(20, 0)...)
	for i, d := range ds[:6] {
		if !d.Admit || d.Delay != 0 {
			t.Errorf("nodelay request %d: %+v", i, d)
		}
	}
	// delay=4: the first request plus 4 excess undelayed (N+1), then 6
	// delayed 100..600 ms, 9 rejected (capture d)
	ds = run(t, Spec{Kind: KindNginxLimitReq, Rate: "10r/s", Burst: 10, Delay: 4}, burst(20, 0)...)
	undelayed, delayed := 0, 0
	for _, d := range ds {
		switch {
		case d.Admit && d.Delay == 0:
			undelayed++
		case d.Admit:
			delayed++
			if want := time.Duration(delayed) * 100 * time.Millisecond; d.Delay != want {
				t.Errorf("delayed #%d: %v, want %v", delayed, d.Delay, want)
			}
		}
	}
	if undelayed != 5 || delayed != 6 {
		t.Fatalf("delay=4: %d undelayed, %d delayed; want 5 and 6", undelayed, delayed)
	}
	if got := PeakCount(ForwardTimes(burst(20, 0), ds), 50*time.Millisecond); got != 5 {
		t.Errorf("peak per 50ms behind delay=4: %d, want 5", got)
	}
}

func TestNginxRejectedChangesNothing(t *testing.T) {
	// a rejection at 50 ms must not move last: at 100 ms a full request's
	// worth has leaked since the admission at 0
	wantAdmits(t, run(t, Spec{Kind: KindNginxLimitReq, Rate: "10r/s"}, at(0), at(50*ms), at(100*ms)), true, false, true)
	// the millisecond clock: 0.9 ms and 99.2 ms are 99 ms apart
	wantAdmits(t, run(t, Spec{Kind: KindNginxLimitReq, Rate: "10r/s"}, at(900_000), at(99_200_000)), true, false)
}

func TestNginxTwoZones(t *testing.T) {
	spec := Spec{Kind: KindNginxLimitReq, Zones: []NginxZone{
		{Name: "rl", Rate: "10r/s", Burst: 5, NoDelay: true},
		{Name: "global", Rate: "2r/s", Burst: 2, NoDelay: true, Key: "$host"}}}
	reqs := burst(20, 0)
	for i := range reqs {
		reqs[i].Vars = map[string]string{"$host": "h1"}
	}
	// a request of another host at the same instant: the 17 rejections by
	// zone global charged nothing in zone rl, which still has room
	reqs = append(reqs, Request{At: 0, Key: "k", Vars: map[string]string{"$host": "h2"}})
	ds := run(t, spec, reqs...)
	if n := admits(ds[:20]); n != 3 {
		t.Fatalf("two zones: %d admitted, want 3 (capture k)", n)
	}
	for _, d := range ds[:20] {
		if !d.Admit && d.By != "global" {
			t.Errorf("rejected by %q, want global", d.By)
		}
	}
	if !ds[20].Admit {
		t.Errorf("rejections charged zone rl: %+v", ds[20])
	}
	// an empty zone key: the zone does not limit the request
	ds = run(t, spec, Request{At: 0, Key: "k", Vars: map[string]string{}})
	if !ds[0].Admit {
		t.Errorf("empty $host: %+v", ds[0])
	}
}

func TestNginxDryRun(t *testing.T) {
	ds := run(t, Spec{Kind: KindNginxLimitReq, Rate: "10r/s", Burst: 5, DryRun: true}, burst(20, 0)...)
	shadow := 0
	for _, d := range ds {
		if !d.Admit || d.Delay != 0 {
			t.Fatalf("dry run rejected or delayed: %+v", d)
		}
		if d.Shadow {
			shadow++
		}
	}
	if shadow != 14 {
		t.Errorf("dry run: %d would-be rejections, want 14 (capture h)", shadow)
	}
}

func TestTokenBucketLikeXTimeRate(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 2, RatePerSec: 1}
	wantAdmits(t, run(t, spec, at(0), at(0), at(0), at(500*ms), at(1000*ms), at(1500*ms), at(3000*ms), at(3000*ms), at(3000*ms)),
		true, true, false, false, true, false, true, true, false)
	// a refused request changes nothing: 0.6 s after the admission, a
	// refusal at 0.5 s does not restart the refill
	wantAdmits(t, run(t, Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 2}, at(0), at(400*ms), at(500*ms)), true, false, true)
}

func TestEnvoyContinuousRefill(t *testing.T) {
	tpf := uint32(5)
	spec := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 5, TokensPerFill: &tpf, FillInterval: Duration(time.Second)}
	// 5 tokens per second, fractional: 0.995 at 199 ms, 1.005 at 201 ms,
	// then 0.005+0.99 at 399 ms and 0.005+1.005 at 402 ms
	reqs := append(burst(6, 0), at(199*ms), at(201*ms), at(399*ms), at(402*ms))
	wantAdmits(t, run(t, spec, reqs...), true, true, true, true, true, false, false, true, false, true)
}

func TestEnvoyTimerRefill(t *testing.T) {
	tpf := uint32(2)
	start := time.Unix(0, t0).UTC().Format(time.RFC3339Nano)
	spec := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.30", MaxTokens: 2, TokensPerFill: &tpf, FillInterval: Duration(time.Second), TimerStart: start}
	wantAdmits(t, run(t, spec, at(500*ms), at(500*ms), at(500*ms), at(999*ms), at(1000*ms), at(1000*ms), at(1000*ms)),
		true, true, false, false, true, true, false)
}

func TestEnvoyConsumptionOrder(t *testing.T) {
	one, five := uint32(1), uint32(5)
	slow := EnvoyDescriptor{Entries: []Entry{{"path", "b"}}, MaxTokens: 5, TokensPerFill: &one, FillInterval: Duration(time.Hour)}
	fast := EnvoyDescriptor{Entries: []Entry{{"user", "a"}}, MaxTokens: 1, TokensPerFill: &five, FillInterval: Duration(time.Hour)}
	spec := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 100, FillInterval: Duration(time.Hour),
		Descriptors: []EnvoyDescriptor{fast, slow}}
	both := Request{Key: "k", Descriptors: []Descriptor{{{"user", "a"}}, {{"path", "b"}}}}
	onlySlow := Request{Key: "k", Descriptors: []Descriptor{{{"path", "b"}}}}
	// slow (1 token per hour) is consumed before fast (5 per hour): the
	// second request takes slow's token and is then rejected by the empty
	// fast bucket, and slow stays charged: 3 tokens left, not 4
	ds := run(t, spec, both, both, onlySlow, onlySlow, onlySlow, onlySlow)
	wantAdmits(t, ds, true, false, true, true, true, false)
	if ds[1].By != "descriptor user=a" {
		t.Errorf("rejected by %q, want the fast descriptor", ds[1].By)
	}
	// with user=a now the slowest (1 per day) it is consumed first: the
	// second request is rejected by it and slow is not charged (4 left)
	spec.Descriptors[0].TokensPerFill = &one
	spec.Descriptors[0].FillInterval = Duration(24 * time.Hour)
	ds = run(t, spec, both, both, onlySlow, onlySlow, onlySlow, onlySlow, onlySlow)
	wantAdmits(t, ds, true, false, true, true, true, true, false)
}

func TestEnvoySortKeyByVersion(t *testing.T) {
	ten, fifteen := uint32(10), uint32(15)
	x := EnvoyDescriptor{Entries: []Entry{{"k", "x"}}, MaxTokens: 10, TokensPerFill: &ten, FillInterval: Duration(500 * time.Millisecond)}
	y := EnvoyDescriptor{Entries: []Entry{{"k", "y"}}, MaxTokens: 10, TokensPerFill: &fifteen, FillInterval: Duration(time.Second)}
	ds := []Descriptor{{{"k", "y"}}, {{"k", "x"}}}
	for ver, first := range map[string]string{"1.30": "x", "1.31": "y"} {
		m := MustNew(Spec{Kind: KindEnvoyLocal, EnvoyVersion: ver, MaxTokens: 1, FillInterval: Duration(500 * time.Millisecond),
			Descriptors: []EnvoyDescriptor{x, y}}).(*envoyModel)
		got := m.matches(ds, nil)
		if v := m.descs[got[0].desc].entries[0].Value; v != first {
			// 1.30: integer tokens_per_fill / whole seconds (10/1 < 15/1);
			// 1.31: 20/s > 15/s
			t.Errorf("Envoy %s consumes %s first, want %s", ver, v, first)
		}
	}
}

func TestEnvoyDefaultBucketAndWildcards(t *testing.T) {
	one := uint32(1)
	d := EnvoyDescriptor{Entries: []Entry{{"user", ""}}, MaxTokens: 1, TokensPerFill: &one, FillInterval: Duration(time.Hour)}
	f := false
	n := 1
	spec := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.34", MaxTokens: 1, FillInterval: Duration(time.Hour),
		Descriptors: []EnvoyDescriptor{d}, AlwaysConsumeDefault: &f, MaxDynamicDescriptors: &n}
	user := func(v string) Request { return Request{Key: "k", Descriptors: []Descriptor{{{"user", v}}}} }
	// each value its own bucket; the LRU holds 1, so b evicts a, which comes
	// back full; the default bucket is not consumed by matched requests
	wantAdmits(t, run(t, spec, user("a"), user("a"), user("b"), user("a"), at(0), at(0)), true, false, true, true, true, false)
}

func TestEnvoyNotEnforced(t *testing.T) {
	zero := 0.0
	spec := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 2, FillInterval: Duration(time.Hour), FilterEnforcedPercent: &zero}
	ds := run(t, spec, burst(4, 0)...)
	for i, d := range ds {
		if !d.Admit || d.Shadow != (i >= 2) {
			t.Errorf("request %d: %+v", i, d)
		}
	}
}

func TestFixedWindowEpochCountsEveryHit(t *testing.T) {
	spec := Spec{Kind: KindFixedWindow, Limit: 2, Unit: "minute"}
	base := floorDiv(t0, 60e9)*60e9 + 120e9 - t0 // the start of a minute
	ds := run(t, spec, at(base), at(base+1e9), at(base+2e9), at(base+59e9), at(base+60e9))
	wantAdmits(t, ds, true, true, false, false, true)
	m := MustNew(spec)
	s := m.NewSimulator(0).(*fwSim)
	for range 5 {
		s.Offer(Request{At: t0, Key: "k"})
	}
	if c := s.keys["k"].count; c != 5 {
		t.Errorf("counter after 5 hits with limit 2: %d, want 5 (over-limit hits count)", c)
	}
}

func TestFixedWindowFirstHit(t *testing.T) {
	spec := Spec{Kind: KindFixedWindow, Limit: 2, Unit: "second", Align: AlignFirstHit}
	wantAdmits(t, run(t, spec, at(500*ms), at(600*ms), at(1200*ms), at(1499*ms), at(1500*ms)), true, true, false, false, true)
}

func TestFixedWindowShadowAndUnlimited(t *testing.T) {
	ds := run(t, Spec{Kind: KindFixedWindow, Limit: 1, Unit: "hour", ShadowMode: true}, at(0), at(0))
	if !ds[1].Admit || !ds[1].Shadow {
		t.Errorf("shadow_mode over limit: %+v", ds[1])
	}
	for _, d := range run(t, Spec{Kind: KindFixedWindow, Unit: "second", Unlimited: true}, burst(5, 0)...) {
		if !d.Admit {
			t.Errorf("unlimited: %+v", d)
		}
	}
}

func TestSlidingLog(t *testing.T) {
	admitted := Spec{Kind: KindSlidingLog, Limit: 2, Window: Duration(time.Second), Count: CountAdmitted}
	all := admitted
	all.Count = CountAll
	reqs := []Request{at(0), at(100 * ms), at(500 * ms), at(1050 * ms)}
	wantAdmits(t, run(t, admitted, reqs...), true, true, false, true)
	reqs = []Request{at(0), at(100 * ms), at(500 * ms), at(1050 * ms)}
	wantAdmits(t, run(t, all, reqs...), true, true, false, false)
	// (t-W, t]: the request at 0 no longer counts at exactly 1 s
	wantAdmits(t, run(t, Spec{Kind: KindSlidingLog, Limit: 1, Window: Duration(time.Second), Count: CountAll}, at(0), at(1000*ms)), true, true)
}

func TestSlidingCounter(t *testing.T) {
	spec := Spec{Kind: KindSlidingCounter, Limit: 10, Window: Duration(time.Second), Count: CountAll}
	start := floorDiv(t0, 1e9)*1e9 + 1e9 - t0
	reqs := burst(10, start+100*ms)
	// a quarter into the next window: 10*0.75 + cur + 1 <= 10 admits 2
	reqs = append(reqs, burst(3, start+1250*ms)...)
	ds := run(t, spec, reqs...)
	if n := admits(ds[:10]); n != 10 {
		t.Fatalf("first window: %d admitted", n)
	}
	wantAdmits(t, ds[10:], true, true, false)
}
