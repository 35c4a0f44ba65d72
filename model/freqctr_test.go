package model

import (
	"fmt"
	"testing"
	"time"
)

func freqCtrSpec(limit uint64, period time.Duration) Spec {
	return Spec{Kind: KindSlidingCounter, Limit: limit, Window: Duration(period), Count: CountAll, Align: AlignFreqCtr}
}

// TestFreqCtrArithmetic replays HAProxy's freq_ctr (src/freq_ctr.c update_freq_ctr_period_slow,
// freq_ctr_total; include/haproxy/freq_ctr.h read_freq_ctr_period) by hand, limit 2 per 1000 ms:
//
//	t=0     first event: period starts at 0, curr 1              rate 1   admit
//	t=1     curr 2                                               rate 2   admit
//	t=2     curr 3 (denied requests count)                       rate 3   deny
//	t=1000  rotate: prev 3, curr 1, remain 1000: 3 + 1           rate 4   deny
//	t=1999  curr 2, remain 1: (3*1 + 2*1000)/1000 = 2.003 -> 2   rate 2   admit (the epoch model rejects: 2.003 > 2)
//	t=3999  two periods on: period restarts at 3998 (even ms)    rate 1   admit
//	t=4998  4998-3998 = 1000: rotate, prev 1, curr 1, remain 1000 rate 2  admit
func TestFreqCtrArithmetic(t *testing.T) {
	m := MustNew(freqCtrSpec(2, time.Second))
	ms := int64(time.Millisecond)
	times := []int64{0, 1, 2, 1000, 1999, 3999, 4998}
	wantRate := []int64{1, 2, 3, 4, 2, 1, 2}
	wantAdmit := []bool{true, true, false, false, true, true, true}
	var reqs []Request
	for _, at := range times {
		reqs = append(reqs, Request{At: 1_700_000_000_000*ms + at*ms + 999_999, Key: "k"}) // late in the ms: whole ms count
	}
	rates, ok := FreqCtrRates(m, reqs)
	if !ok {
		t.Fatal("FreqCtrRates: not a freq_ctr model")
	}
	ds := Simulate(m, reqs, 0)
	for i := range times {
		if rates[i] != wantRate[i] || ds[i].Admit != wantAdmit[i] {
			t.Errorf("t=%d ms: rate %d admit %v, want %d %v", times[i], rates[i], ds[i].Admit, wantRate[i], wantAdmit[i])
		}
	}
	epoch := Simulate(MustNew(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(time.Second), Count: CountAll}), reqs, 0)
	if epoch[4].Admit {
		t.Error("the epoch-aligned sliding counter admits t=1999 too: the test no longer shows the rounding difference")
	}
	if _, ok := FreqCtrRates(MustNew(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(time.Second), Count: CountAll}), reqs); ok {
		t.Error("FreqCtrRates accepted an epoch sliding counter")
	}
	// keys are independent
	ds = Simulate(m, []Request{{At: 0, Key: "a"}, {At: 0, Key: "a"}, {At: 0, Key: "a"}, {At: 0, Key: "b"}}, 0)
	if !ds[0].Admit || !ds[1].Admit || ds[2].Admit || !ds[3].Admit {
		t.Errorf("per key: %+v", ds)
	}
}

func TestFreqCtrSpecValidated(t *testing.T) {
	if _, err := New(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(time.Second), Count: CountAdmitted, Align: AlignFreqCtr}); err == nil {
		t.Error("freq_ctr counting only admitted requests: no error")
	}
	if _, err := New(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(1500 * time.Microsecond), Count: CountAll, Align: AlignFreqCtr}); err == nil {
		t.Error("freq_ctr with a sub-ms window: no error")
	}
	if _, err := New(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(time.Second), Count: CountAll, Align: AlignFirstHit}); err == nil {
		t.Error("sliding_counter align first_hit: no error")
	}
	m, err := New(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(time.Second), Count: CountAll, Align: AlignEpoch})
	if err != nil || m.Spec().Align != "" {
		t.Errorf("align epoch: %v, %q", err, m.Spec().Align)
	}
}

// TestFreqCtrCheck: with every event known to its ms the checker decides by the replay (a ms whose requests split
// between pass and deny leaves them undecided, the count exact) and finds an admission freq_ctr denies; with an
// event wider than a ms nothing is decided.
func TestFreqCtrCheck(t *testing.T) {
	m := MustNew(freqCtrSpec(2, time.Second))
	ms := int64(time.Millisecond)
	base := 1_700_000_000_000 * ms
	ev := func(id string, at int64, o Outcome) tEvent {
		return tEvent{ID: id, Lo: base + at*ms, Hi: base + at*ms + ms - 1, Key: "k", Outcome: o}
	}
	events := []tEvent{ev("a", 0, Admitted), ev("b", 1, Admitted), ev("c", 1, Rejected), ev("d", 1000, Admitted), ev("e", 1999, Admitted)}
	res, err := Check(m, mk(events), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{MustAdmit, Either, Either, MustReject, MustAdmit} // b, c: the 2nd and 3rd of t=1 in some order
	for i, v := range res.Verdicts {
		if v != want[i] {
			t.Errorf("%s: %v, want %v", events[i].ID, v, want[i])
		}
	}
	if len(res.Over) != 1 || res.Over[0].ID != "d" || len(res.Under) != 0 {
		t.Errorf("over %+v under %+v, want d over-admitted", res.Over, res.Under)
	}
	if len(res.Buckets) != 1 || res.Buckets[0].Min != 3 || res.Buckets[0].Max != 3 {
		t.Errorf("bounds %+v, want 3..3", res.Buckets)
	}
	events[4].Hi += 5 * ms
	res, err = Check(m, mk(events), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range res.Verdicts {
		if v != Either {
			t.Errorf("wide interval: %s %v, want either", events[i].ID, v)
		}
	}
	// not exact: at most 2 x limit per period-long tile; 12 requests within 3 ms admit at most 4
	var burst []tEvent
	for i := range 12 {
		burst = append(burst, tEvent{ID: fmt.Sprint(i), Lo: base, Hi: base + 3*ms, Key: "k", Outcome: Admitted})
	}
	res, err = Check(m, mk(burst), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Buckets) != 1 || res.Buckets[0].Max != 4 || res.Buckets[0].Min != 0 {
		t.Errorf("burst bound %+v, want 0..4", res.Buckets)
	}
}

// TestFreqCtrPeakBound: the bound holds for schedules that fill two adjacent periods (the end of one, then as much
// of the next as the weighted rate lets through), and is limit x the periods a window touches.
func TestFreqCtrPeakBound(t *testing.T) {
	m := MustNew(freqCtrSpec(10, time.Second))
	for _, c := range []struct {
		w    time.Duration
		want int
	}{{time.Millisecond, 20}, {time.Second, 20}, {1500 * time.Millisecond, 30}, {3 * time.Second, 40}} {
		if b, ok := PeakBound(m, c.w); !ok || b != c.want {
			t.Errorf("PeakBound(%v) = %d %v, want %d", c.w, b, ok, c.want)
		}
	}
	if _, ok := PeakBound(MustNew(Spec{Kind: KindSlidingCounter, Limit: 2, Window: Duration(time.Second), Count: CountAll}), time.Second); ok {
		t.Error("the epoch sliding counter got a bound")
	}
	// every ms a request, for 5 s: the admissions in any 1 s window stay within the bound
	ms := int64(time.Millisecond)
	var reqs []Request
	for i := range int64(5000) {
		reqs = append(reqs, Request{At: i * ms, Key: "k"})
		reqs = append(reqs, Request{At: i*ms + 1, Key: "k"})
	}
	ds := Simulate(m, reqs, 0)
	var admitted []int64
	for i, d := range ds {
		if d.Admit {
			admitted = append(admitted, reqs[i].At)
		}
	}
	b, _ := PeakBound(m, time.Second)
	if p := PeakCount(admitted, time.Second); p > b || p < 10 {
		t.Errorf("peak per 1 s %d, bound %d", p, b)
	}
}
