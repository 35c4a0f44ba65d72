package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestPlanSameAsOnePass: buildPlan (two passes, columns allocated once)
// and fillMid build the same plan as the one-pass builder they replaced
// (kept below as buildPlanOnePass) on generated events of several kinds, with unknown
// keys, every outcome, Envoy descriptor chains and a coarse (ms) clock.
func TestPlanSameAsOnePass(t *testing.T) {
	one := uint32(1)
	envoy := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 100, FillInterval: Duration(time.Second),
		Descriptors: []EnvoyDescriptor{
			{Entries: []Entry{{"a", "1"}}, MaxTokens: 3, TokensPerFill: &one, FillInterval: Duration(time.Second)},
			{Entries: []Entry{{"b", "1"}}, MaxTokens: 2, TokensPerFill: &one, FillInterval: Duration(time.Second)},
		}}
	specs := []Spec{
		{Kind: KindTokenBucket, Capacity: 10, RatePerSec: 100},
		{Kind: KindNginxLimitReq, Rate: "60r/s", Burst: 5},
		{Kind: KindFixedWindow, Limit: 20, Unit: "second"},
		{Kind: KindSlidingLog, Limit: 20, Window: Duration(time.Second), Count: CountAdmitted},
		envoy,
	}
	descs := [][]Descriptor{nil, {{{"a", "1"}}}, {{{"a", "1"}}, {{"b", "1"}}}, {{{"b", "1"}}}}
	for _, spec := range specs {
		m := MustNew(spec)
		rng := rand.New(rand.NewPCG(3, 4))
		events := make([]tEvent, 3000)
		for i := range events {
			lo := t0 + int64(i)*int64(time.Millisecond)/2 + rng.Int64N(int64(time.Millisecond))
			events[i] = tEvent{ID: fmt.Sprintf("e%d", i), Lo: lo, Hi: lo + rng.Int64N(int64(5*time.Millisecond)),
				Key: fmt.Sprintf("k%d", rng.IntN(3)), Outcome: Outcome(rng.IntN(4)), KeyUnknown: rng.IntN(50) == 0}
			if spec.Kind == KindEnvoyLocal {
				events[i].Attrs = &Attrs{Descriptors: descs[rng.IntN(len(descs))]}
			}
		}
		for _, widen := range []int64{0, int64(time.Millisecond)} {
			for _, au := range []bool{false, true} {
				cm := m.checker(events[0].Lo)
				evs := mk(events)
				got, err1 := buildPlan(cm, evs, widen, au)
				want, err2 := buildPlanOnePass(cm, evs, widen, au)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v, %v", spec.Kind, err1, err2)
				}
				if got.perBucket {
					// a bucket's columns are filled while it is judged: fill
					// them all to compare (mid too, as fillMid)
					for b := range got.buckets {
						got.fill(evs, int32(b), true)
					}
					got.perBucket, got.charges = false, nil
					want.rB, want.rL = nil, nil // a bucket's sweep needs neither
				} else {
					got.fillMid(evs) // only the timing report's sweep fills them
				}
				want.widen = widen
				if len(got.buckets) < 2 {
					t.Fatalf("%s: %d buckets: the test's premise changed", spec.Kind, len(got.buckets))
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s widen %d admitUncertain %v: the plans differ", spec.Kind, widen, au)
				}
			}
		}
	}
}

// buildPlanOnePass is buildPlan as it was before the two passes.
func buildPlanOnePass(cm checkModel, evs *Events, widen int64, admitUncertain bool) (*plan, error) {
	events := make([]Event, evs.Len()) // the events as the plan was built from before the columns
	for j := range events {
		events[j] = evs.At(j)
	}
	pl := &plan{chain: cm.chain(), rStart: make([]int32, len(events)+1)}
	idx := map[string]int32{}
	var refs []bucketRef
	// every bucket the known events use, for the events whose key is unknown
	var all []bucketRef
	unknown := 0
	for i := range events {
		if events[i].KeyUnknown {
			unknown++
		}
	}
	if unknown > 0 {
		seen := map[string]bool{}
		for j := range events {
			if events[j].KeyUnknown {
				continue
			}
			ri := evs.routeOf(&events[j])
			refs = cm.route(&ri, refs[:0])
			for _, ref := range refs {
				if !seen[ref.id] {
					seen[ref.id] = true
					all = append(all, bucketRef{id: ref.id, params: ref.params})
				}
			}
		}
		if unknown*len(all) > maxUnknownKeyCharges {
			return nil, fmt.Errorf("model check: %d events with an unknown key over %d buckets: more than %d possible charges to judge",
				unknown, len(all), maxUnknownKeyCharges)
		}
	}
	for i := range events {
		e := &events[i]
		if e.KeyUnknown {
			refs = append(refs[:0], all...)
		} else {
			ri := evs.routeOf(e)
			refs = cm.route(&ri, refs[:0])
		}
		for k, ref := range refs {
			b, ok := idx[ref.id]
			if !ok {
				b = int32(len(pl.buckets))
				idx[ref.id] = b
				pl.buckets = append(pl.buckets, &bucket{id: ref.id, params: ref.params, single: true})
			}
			bk := pl.buckets[b]
			u := ref.params.timeUnit()
			lo, hi := e.Lo-widen, e.Hi+widen
			bk.ev = append(bk.ev, int32(i))
			bk.lo = append(bk.lo, floorDiv(lo, u))
			if u > 1 {
				// a coarse clock of its own (nginx's cached monotonic ms):
				// its ticks are offset from the clients' clock by up to one
				// unit, so floor(hi)+1 bounds its reading
				bk.hi = append(bk.hi, floorDiv(hi, u)+1)
			} else {
				bk.hi = append(bk.hi, hi)
			}
			bk.mid = append(bk.mid, floorDiv(lo+(hi-lo)/2, u))
			sure, poss := charge(e.Outcome, ref.params.countsAll(), pl.chain, k, refs, admitUncertain)
			if e.KeyUnknown {
				sure, poss = false, true
			}
			bk.sure = append(bk.sure, sure)
			bk.poss = append(bk.poss, poss)
			if len(refs) > 1 || e.KeyUnknown {
				bk.single = false
			}
			pl.rB = append(pl.rB, b)
			pl.rL = append(pl.rL, int32(len(bk.ev)-1))
		}
		pl.rStart[i+1] = int32(len(pl.rB))
	}
	sib := map[primParams]int{}
	for _, b := range pl.buckets {
		sib[b.params]++
	}
	for _, b := range pl.buckets {
		b.siblings = sib[b.params]
	}
	return pl, nil
}

// TestSweepByBucketSameAsAll: in a plan whose events charge one bucket
// each, sweeping the buckets one at a time (what sweep does) gives the
// same verdicts and deciding buckets as sweeping all at once, for the
// interval, midpoint and offered sweeps, on several kinds with a coarse
// (ms) clock, ties and every outcome.
func TestSweepByBucketSameAsAll(t *testing.T) {
	specs := []Spec{
		{Kind: KindTokenBucket, Capacity: 10, RatePerSec: 100},
		{Kind: KindNginxLimitReq, Rate: "60r/s", Burst: 5},
		{Kind: KindFixedWindow, Limit: 20, Unit: "second"},
		{Kind: KindSlidingLog, Limit: 20, Window: Duration(time.Second), Count: CountAdmitted},
		{Kind: KindSlidingCounter, Limit: 20, Window: Duration(time.Second), Count: CountAll},
		{Kind: KindGCRA, RatePerPeriod: 50, Period: Duration(time.Second), Burst: 5},
	}
	for _, spec := range specs {
		m := MustNew(spec)
		rng := rand.New(rand.NewPCG(5, 6))
		events := make([]tEvent, 4000)
		for i := range events {
			lo := t0 + int64(i)*int64(time.Millisecond)/4 + rng.Int64N(int64(time.Millisecond))
			if rng.IntN(10) == 0 && i > 0 {
				lo = events[i-1].Lo // a tie
			}
			events[i] = tEvent{ID: fmt.Sprintf("e%d", i), Lo: lo, Hi: lo + rng.Int64N(int64(20*time.Millisecond)),
				Key: fmt.Sprintf("k%d", rng.IntN(4)), Outcome: Outcome(rng.IntN(4))}
		}
		evs := mk(events)
		for _, au := range []bool{false, true} {
			pl, err := buildPlan(m.checker(evs.At(0).Lo), evs, int64(time.Millisecond), au)
			if err != nil {
				t.Fatal(err)
			}
			if !pl.oneRef || len(pl.buckets) < 2 {
				t.Fatalf("%s: oneRef %v, %d buckets: the test's premise changed", spec.Kind, pl.oneRef, len(pl.buckets))
			}
			if !pl.perBucket {
				t.Fatalf("%s: not judged a bucket at a time: the test's premise changed", spec.Kind)
			}
			for b := range pl.buckets {
				pl.fill(evs, int32(b), true)
			}
			checkAllAtOnce = true
			all, err := buildPlan(m.checker(evs.At(0).Lo), evs, int64(time.Millisecond), au)
			checkAllAtOnce = false
			if err != nil {
				t.Fatal(err)
			}
			all.fillMid(evs)
			for _, c := range []struct{ mid, offered bool }{{false, false}, {true, false}, {false, true}} {
				got := pl.sweep(evs, pl.prims(evs, c.mid, false, au), c.mid, c.offered, au)
				sw := all.sweeper(evs, all.prims(evs, c.mid, false, au), c.mid)
				sw.sweepAll(c.offered, au)
				if !reflect.DeepEqual(got, sw.so) {
					t.Errorf("%s admitUncertain %v mid %v offered %v: the sweeps differ", spec.Kind, au, c.mid, c.offered)
				}
				decided := 0
				for j := range got.mustR {
					if got.mustR[j] || got.mustA[j] {
						decided++
					}
				}
				if decided == 0 {
					t.Errorf("%s: nothing decided: the comparison proves little", spec.Kind)
				}
			}
		}
	}
}

// TestPointsSameAsSortedArray: points yields the sorted, deduplicated
// array of every lo-1, lo and hi that the bounds' DPs walked before it,
// with ties between and within the three kinds.
func TestPointsSameAsSortedArray(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 60 {
		lo, hi := make([]int64, n), make([]int64, n)
		for i := range lo {
			lo[i] = rng.Int64N(20)
			hi[i] = lo[i] + rng.Int64N(4)
		}
		var want []int64
		for i := range lo {
			want = append(want, lo[i]-1, lo[i], hi[i])
		}
		slices.Sort(want)
		want = slices.Compact(want)
		loS, hiS := slices.Clone(lo), slices.Clone(hi)
		slices.Sort(loS)
		slices.Sort(hiS)
		if got := slices.Collect(points(loS, hiS)); !slices.Equal(got, want) {
			t.Fatalf("n %d: points %v, want %v", n, got, want)
		}
	}
}

// TestCheckByBucketSameAsAll: Check of events that charge one bucket
// each, judged a bucket at a time (plan.perBucket), gives the same result
// as judged all at once, on several kinds, with and without widening, an
// unknown initial state, shadow rejections and violations.
func TestCheckByBucketSameAsAll(t *testing.T) {
	specs := []Spec{
		{Kind: KindTokenBucket, Capacity: 10, RatePerSec: 100},
		{Kind: KindNginxLimitReq, Rate: "60r/s", Burst: 5},
		{Kind: KindNginxLimitReq, Rate: "60r/s", Burst: 5, DryRun: true},
		{Kind: KindFixedWindow, Limit: 20, Unit: "second"},
		{Kind: KindSlidingLog, Limit: 20, Window: Duration(time.Second), Count: CountAdmitted},
		{Kind: KindSlidingCounter, Limit: 20, Window: Duration(time.Second), Count: CountAll},
		{Kind: KindGCRA, RatePerPeriod: 50, Period: Duration(time.Second), Burst: 5},
	}
	for _, spec := range specs {
		m := MustNew(spec)
		rng := rand.New(rand.NewPCG(9, 10))
		events := make([]tEvent, 3000)
		for i := range events {
			lo := t0 + int64(i)*int64(time.Millisecond)/3 + rng.Int64N(int64(time.Millisecond))
			events[i] = tEvent{ID: fmt.Sprintf("e%d", i), Lo: lo, Hi: lo + rng.Int64N(int64(10*time.Millisecond)),
				Key: fmt.Sprintf("k%d", rng.IntN(3)), Outcome: Outcome(rng.IntN(4))}
		}
		found, timing := 0, 0
		for _, opts := range []Options{{}, {Widen: time.Millisecond, UnknownInitialState: true}, {ShadowVisible: true}} {
			got, err := Check(m, mk(events), opts)
			if err != nil {
				t.Fatal(err)
			}
			checkAllAtOnce = true
			want, err := Check(m, mk(events), opts)
			checkAllAtOnce = false
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %+v: the results differ:\n%+v\n%+v", spec.Kind, opts, got, want)
			}
			found += len(got.Over) + len(got.Under) + len(got.Shadow) + len(got.Windows)
			timing += got.Uncertainty.EitherFromTiming
		}
		if found == 0 || timing == 0 {
			t.Errorf("%s: %d violations, %d timing eithers: the comparison proves little", spec.Kind, found, timing)
		}
	}
}
