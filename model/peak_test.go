package model

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// bruteMax counts, for every start t at an element, the elements in [t, t+w).
func bruteMax(times []int64, w int64) (int, int64) {
	best, at := 0, int64(0)
	for i := range times {
		n := 0
		for j := range times {
			if times[j] >= times[i] && times[j]-times[i] < w {
				n++
			}
		}
		if n > best {
			best, at = n, times[i]
		}
	}
	return best, at
}

func TestPeakAtExact(t *testing.T) {
	ms := int64(time.Millisecond)
	times := []int64{0, ms / 2, ms, 9 * ms, 10 * ms, 10*ms + 1, 19 * ms, 25 * ms, 25 * ms, 25 * ms}
	for _, c := range []struct {
		w      time.Duration
		n      int
		atIdx  int
		reason string
	}{
		{time.Millisecond, 3, 7, "three at 25 ms; [0, 1ms) holds 0 and 0.5 ms only (half-open)"},
		{10 * time.Millisecond, 5, 1, "[0.5ms, 10.5ms) holds 0.5, 1, 9, 10 ms and 10 ms + 1 ns; [0, 10ms) only 4 (10 ms is outside)"},
		{10*time.Millisecond + 1, 5, 0, "10 ms falls in [0, 10ms+1ns)"},
		{100 * time.Millisecond, 10, 0, "all"},
	} {
		n, at := PeakAt(times, c.w)
		if n != c.n || at != times[c.atIdx] {
			t.Errorf("window %v: got %d at %d, want %d at %d (%s)", c.w, n, at, c.n, times[c.atIdx], c.reason)
		}
		if PeakCount(times, c.w) != n {
			t.Errorf("PeakCount disagrees with PeakAt")
		}
	}
	if n, at := PeakAt(nil, time.Second); n != 0 || at != 0 {
		t.Errorf("empty: %d at %d", n, at)
	}
}

func TestPeakAtMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		times := rapid.SliceOfN(rapid.Int64Range(0, 50_000_000), 0, 60).Draw(t, "times")
		sortInt64(times)
		w := rapid.Int64Range(1, 20_000_000).Draw(t, "window")
		n, at := PeakAt(times, time.Duration(w))
		bn, bat := bruteMax(times, w)
		if n != bn || at != bat {
			t.Fatalf("PeakAt %d at %d, brute force %d at %d", n, at, bn, bat)
		}
	})
}

// TestPeakBoundNginx: the bound's figures for the shapes of issue 12, and
// the simulator's forwards for a burst at one instant reach them.
func TestPeakBoundNginx(t *testing.T) {
	ms := 10 * time.Millisecond
	for _, c := range []struct {
		spec   Spec
		window time.Duration
		want   int
	}{
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200, NoDelay: true}, ms, 202},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200}, ms, 2},                   // rate × 10 ms + 1
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200}, 9 * time.Millisecond, 1}, // 9 ms span leaks 0.9
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200, Delay: 50}, ms, 52},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 20, Delay: 50}, ms, 22}, // delay beyond burst: all undelayed
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200}, time.Second, 101},
		{Spec{Kind: KindNginxLimitReq, Rate: "30r/m", Burst: 5}, time.Second, 1},
	} {
		m := MustNew(c.spec)
		got, ok := PeakBound(m, c.window)
		if !ok || got != c.want {
			t.Errorf("%+v over %v: %d %v, want %d", c.spec, c.window, got, ok, c.want)
		}
	}
	// A burst of 300 at one instant: the simulator reaches the bound.
	reqs := make([]Request, 300)
	for i := range reqs {
		reqs[i] = Request{At: t0, Key: "k"}
	}
	for _, c := range []struct {
		spec Spec
		peak int
	}{
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200, NoDelay: true}, 201},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200}, 1},
		{Spec{Kind: KindNginxLimitReq, Rate: "100r/s", Burst: 200, Delay: 50}, 51},
	} {
		m := MustNew(c.spec)
		f := ForwardTimes(reqs, Simulate(m, reqs, 1))
		if len(f) != 201 {
			t.Errorf("%+v: %d forwarded, want 201", c.spec, len(f))
		}
		if p := PeakCount(f, 10*time.Millisecond); p != c.peak {
			t.Errorf("%+v: simulated peak per 10 ms %d, want %d", c.spec, p, c.peak)
		}
	}
	for _, s := range []Spec{
		{Kind: KindNginxLimitReq, Rate: "10r/s", Burst: 5, DryRun: true},
		{Kind: KindNginxLimitReq, Zones: []NginxZone{{Name: "a", Rate: "10r/s", Burst: 5}, {Name: "b", Rate: "1r/s", Burst: 2}}},
		{Kind: KindFixedWindow, Limit: 5, Unit: "second", ShadowMode: true},
		{Kind: KindSlidingCounter, Limit: 5, Window: Duration(time.Second), Count: CountAll},
	} {
		if n, ok := PeakBound(MustNew(s), ms); ok {
			t.Errorf("%+v: bound %d, want none", s, n)
		}
	}
	twoNoDelay := Spec{Kind: KindNginxLimitReq, Zones: []NginxZone{{Name: "a", Rate: "10r/s", Burst: 5, NoDelay: true}, {Name: "b", Rate: "1r/s", Burst: 2, NoDelay: true}}}
	if n, ok := PeakBound(MustNew(twoNoDelay), ms); !ok || n != 3 {
		t.Errorf("two nodelay zones: %d %v, want 3 (the smaller zone: burst 2 + 1)", n, ok)
	}
}

func TestPeakBoundOthers(t *testing.T) {
	tpf := uint32(5)
	for _, c := range []struct {
		spec   Spec
		window time.Duration
		want   int
	}{
		{Spec{Kind: KindTokenBucket, Capacity: 200, RatePerSec: 100}, 10 * time.Millisecond, 201},
		{Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 200, TokensPerFill: &tpf, FillInterval: Duration(50 * time.Millisecond)}, 10 * time.Millisecond, 201},
		{Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.30", MaxTokens: 200, TokensPerFill: &tpf, FillInterval: Duration(50 * time.Millisecond)}, 10 * time.Millisecond, 205},
		{Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.30", MaxTokens: 200, TokensPerFill: &tpf, FillInterval: Duration(50 * time.Millisecond)}, 100 * time.Millisecond, 210},
		{Spec{Kind: KindFixedWindow, Limit: 5, Unit: "hour"}, time.Second, 10},
		{Spec{Kind: KindSlidingLog, Limit: 5, Window: Duration(time.Second), Count: CountAdmitted}, 10 * time.Millisecond, 5},
		// T = 100ms: a burst of 20, then one per T; [t, t+1s) holds 9 more (at 100ms ... 900ms), not 10
		{Spec{Kind: KindGCRA, RatePerPeriod: 10, Period: Duration(time.Second), Burst: 20}, time.Second, 29},
		{Spec{Kind: KindGCRA, RatePerPeriod: 10, Period: Duration(time.Second), Burst: 20}, time.Second + 1, 30},
		{Spec{Kind: KindGCRA, RatePerPeriod: 3, Period: Duration(time.Second), Burst: 1}, time.Millisecond, 1},
	} {
		got, ok := PeakBound(MustNew(c.spec), c.window)
		if !ok || got != c.want {
			t.Errorf("%s %+v over %v: %d %v, want %d", c.spec.Kind, c.spec, c.window, got, ok, c.want)
		}
	}
}

// TestPeakBoundHoldsForSimulatedRuns: whatever the arrivals, one key's
// simulated forwards never exceed PeakBound in any window.
func TestPeakBoundHoldsForSimulatedRuns(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kind := rapid.SampledFrom([]string{KindNginxLimitReq, KindTokenBucket, KindEnvoyLocal, KindFixedWindow, KindSlidingLog, KindGCRA}).Draw(t, "kind")
		var spec Spec
		if kind == KindNginxLimitReq {
			spec = Spec{Kind: kind, Rate: rapid.SampledFrom([]string{"1r/s", "10r/s", "100r/s", "1000r/s", "30r/m"}).Draw(t, "rate"),
				Burst: rapid.IntRange(0, 30).Draw(t, "burst")}
			switch rapid.IntRange(0, 2).Draw(t, "mode") {
			case 1:
				spec.NoDelay = true
			case 2:
				spec.Delay = rapid.IntRange(1, 30).Draw(t, "delay")
			}
		} else {
			spec = genSpec(t, kind)
			spec.Descriptors = nil
			spec.Scope, spec.TimerStart = "", ""
			spec.FilterEnabledPercent, spec.FilterEnforcedPercent = nil, nil
			spec.ShadowMode, spec.Unlimited = false, false
		}
		m, err := New(spec)
		if err != nil {
			t.Skip(err)
		}
		arr := genArrivals(t, kind)
		reqs := make([]Request, len(arr))
		for i, a := range arr {
			reqs[i] = Request{At: a.At, Key: "one"}
		}
		f := ForwardTimes(reqs, Simulate(m, reqs, 7))
		for _, w := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
			bound, ok := PeakBound(m, w)
			if !ok {
				t.Fatalf("%+v: no bound", spec)
			}
			if p, at := PeakAt(f, w); p > bound {
				t.Fatalf("%+v: %d forwards in [%d, +%v), bound %d", spec, p, at-t0, w, bound)
			}
		}
	})
}
