package model

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// benchEvents builds n requests at about 2x the rate of a 1000/s bucket
// over 16 keys, simulated exactly, with send-to-response intervals of
// 0.2-2 ms around the true decision time.
func benchEvents(m Model, n, keys int) []tEvent {
	rng := rand.New(rand.NewPCG(1, 2))
	sim := m.NewSimulator(1)
	events := make([]tEvent, n)
	at := t0
	for i := range events {
		at += int64(rng.ExpFloat64() * float64(time.Second) / 2000 / float64(1))
		key := fmt.Sprintf("k%d", rng.IntN(keys))
		d := sim.Offer(Request{At: at, Key: key})
		o := Rejected
		if d.Admit {
			o = Admitted
		}
		lo := at - rng.Int64N(int64(time.Millisecond))
		hi := at + rng.Int64N(int64(time.Millisecond))
		events[i] = tEvent{ID: fmt.Sprintf("id-%d", i), Lo: lo, Hi: hi, Key: key, Outcome: o}
	}
	return events
}

func benchCheck(b *testing.B, spec Spec, n int) { benchCheckOpts(b, spec, n, Options{}) }

func benchCheckOpts(b *testing.B, spec Spec, n int, opts Options) {
	m := MustNew(spec)
	events := mk(benchEvents(m, n, 16))
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if _, err := Check(m, events, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// the machine may be shared: events per CPU second is the stable figure
	b.ReportMetric(float64(n)*float64(b.N)/cpu, "events/cpu-s")
}

func BenchmarkCheckTokenBucket1M(b *testing.B) {
	benchCheck(b, Spec{Kind: KindTokenBucket, Capacity: 100, RatePerSec: 1000 / 16}, 1_000_000)
}

func BenchmarkCheckNginx1M(b *testing.B) {
	benchCheck(b, Spec{Kind: KindNginxLimitReq, Rate: "60r/s", Burst: 20, NoDelay: true}, 1_000_000)
}

func BenchmarkCheckFixedWindow1M(b *testing.B) {
	benchCheck(b, Spec{Kind: KindFixedWindow, Limit: 60, Unit: "second"}, 1_000_000)
}

func BenchmarkCheckSlidingLog1M(b *testing.B) {
	benchCheck(b, Spec{Kind: KindSlidingLog, Limit: 60, Window: Duration(time.Second), Count: CountAdmitted}, 1_000_000)
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckTokenBucket1MNoTiming skips the second pass that attributes
// "either" verdicts to timing.
func BenchmarkCheckTokenBucket1MNoTiming(b *testing.B) {
	benchCheckOpts(b, Spec{Kind: KindTokenBucket, Capacity: 100, RatePerSec: 1000 / 16}, 1_000_000, Options{NoTimingReport: true})
}

// BenchmarkSimulateNginx1M: the exact simulator alone.
func BenchmarkSimulateNginx1M(b *testing.B) {
	m := MustNew(Spec{Kind: KindNginxLimitReq, Rate: "60r/s", Burst: 20})
	reqs := make([]Request, 1_000_000)
	for i := range reqs {
		reqs[i] = Request{At: t0 + int64(i)*int64(time.Millisecond)/2, Key: fmt.Sprintf("k%d", i%16)}
	}
	b.ResetTimer()
	for range b.N {
		Simulate(m, reqs, 1)
	}
	b.ReportMetric(float64(len(reqs))*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// labTightEvents is n requests shaped like bench/evgen -model -tight's
// (internal/labshape: one every µs, alternating between two keys, every
// one admitted, each decided within a 2 ms interval), Events as analyze
// builds them.
func labTightEvents(n int) *Events {
	evs := &Events{}
	evs.Grow(n)
	keys := [2]int32{evs.AddKey("proxy-a"), evs.AddKey("proxy-b")}
	for i := range n {
		lo := t0 + int64(i)*int64(time.Microsecond)
		evs.Add(Event{Lo: lo, Hi: lo + 2*int64(time.Millisecond), Key: keys[i%2], Req: int32(i), Outcome: Admitted})
	}
	evs.Name = func(req int32) string { return fmt.Sprintf("id-%d", req) }
	return evs
}

// BenchmarkCheckTokenBucketTight1M is bench/analyze-scale.sh's tight
// model check: 1,000,000 lab-shaped admissions into a bucket per key of 100
// tokens at 400,000/s, 80 % of what each key is offered, so that about a
// fifth are over-admitted and no sweep can skip a range far from the limit.
func BenchmarkCheckTokenBucketTight1M(b *testing.B) { benchTight(b, 1_000_000) }

// BenchmarkCheckTokenBucketTight100k is BenchmarkCheckTokenBucketTight1M
// on 100,000 events: short enough to repeat (-count) and compare the
// fastest runs on a shared machine.
func BenchmarkCheckTokenBucketTight100k(b *testing.B) { benchTight(b, 100_000) }

func benchTight(b *testing.B, n int) {
	m := MustNew(Spec{Kind: KindTokenBucket, Capacity: 100, RatePerSec: 400_000})
	evs := labTightEvents(n)
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		res, err := Check(m, evs, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Over) == 0 || res.Uncertainty.EitherFromTiming == 0 {
			b.Fatalf("not tight: %d over-admitted, %d either from timing", len(res.Over), res.Uncertainty.EitherFromTiming)
		}
	}
	b.StopTimer()
	cpu := (cpuTime() - cpu0).Seconds()
	b.ReportMetric(float64(evs.Len())*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(evs.Len())*float64(b.N)/cpu, "events/cpu-s")
}
