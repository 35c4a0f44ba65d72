//go:build integration

package model_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// redisRateEpoch is the origin of redis_rate's clock: its script (lua.go allowN) computes now as
// (TIME seconds - 1483228800) + TIME microseconds / 1e6, seconds since 2017-01-01 UTC.
const redisRateEpoch = 1483228800

// TestGCRAMatchesRedisRate holds model.KindGCRA against go-redis/redis_rate's AllowN on a real redis-server, on
// seeded random schedules over two keys (bursts at once, gaps up to twice the emission interval, idle gaps).
//
// redis_rate takes now from Redis' TIME inside the script, so the test recovers the time Redis saw for each call
// from the script's own answer: an admission stores new_tat (read back with GET) and answers reset_after = new_tat
// - now; a refusal leaves the stored TAT and answers reset_after = TAT - now. now, on Redis' microsecond grid, is
// that difference rounded to the µs; it must lie within TIME read just before and just after the call. The model
// replays each key at those times and must decide every request as redis_rate did, except where the script's
// double arithmetic (about 1e-7 s at 3e8 s since 2017) puts now within 1 µs of the boundary (now - allow_at,
// which the script answers as -retry_after or, on an admission, as τ - reset_after): those are counted, and must be
// few.
func TestGCRAMatchesRedisRate(t *testing.T) {
	ctx := context.Background()
	rdb := startRedisClient(t, ctx)
	lim := redis_rate.NewLimiter(rdb)
	rng := rand.New(rand.NewPCG(26, 23))
	total, boundary, admitted := 0, 0, 0
	for _, limit := range []redis_rate.Limit{
		{Rate: 100, Burst: 5, Period: time.Second},
		{Rate: 7, Burst: 2, Period: 100 * time.Millisecond},
	} {
		spec, err := decl.GCRALimit{Rate: limit.Rate, Burst: limit.Burst, Period: limit.Period}.Spec()
		if err != nil {
			t.Fatal(err)
		}
		sim := model.MustNew(spec).NewSimulator(0)
		T := limit.Period / time.Duration(limit.Rate)
		tau := float64(limit.Burst) * limit.Period.Seconds() / float64(limit.Rate)
		tat := map[string]float64{} // the stored TAT of each key, as last read
		var events []model.TEvent   // redis_rate's answers within TIME before and after, for the checker
		for i := 0; i < 150; i++ {
			switch rng.IntN(8) {
			case 0, 1, 2, 3, 4: // back to back
			case 5:
				time.Sleep(time.Duration(rng.Int64N(int64(2 * T)))) // pacing the traffic, not synchronisation
			case 6:
				time.Sleep(T)
			case 7:
				if rng.IntN(6) == 0 {
					time.Sleep(time.Duration(limit.Burst) * T)
				}
			}
			key := fmt.Sprintf("gcra:%s:%d", limit, rng.IntN(2))
			before := redisMicros(t, ctx, rdb)
			res, err := lim.AllowN(ctx, key, limit, 1)
			if err != nil {
				t.Fatal(err)
			}
			after := redisMicros(t, ctx, rdb)
			reset := res.ResetAfter.Seconds()
			var now, diff float64
			if res.Allowed == 1 {
				s, err := rdb.Get(ctx, "rate:"+key).Result()
				if err != nil {
					t.Fatal(err)
				}
				newTat, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Fatal(err)
				}
				now, diff = newTat-reset, tau-reset
				tat[key] = newTat
			} else {
				prev, ok := tat[key]
				if !ok {
					t.Fatalf("request %d: refused on a key never admitted", i)
				}
				now, diff = prev-reset, -res.RetryAfter.Seconds()
			}
			us := int64(math.Round(now*1e6)) + redisRateEpoch*1e6
			if us < before || us > after {
				t.Fatalf("request %d: recovered Redis time %d µs outside TIME %d..%d", i, us, before, after)
			}
			got := sim.Offer(model.Request{At: us * 1000, Key: key}).Admit
			want := res.Allowed == 1
			o := model.Rejected
			if want {
				o = model.Admitted
			}
			events = append(events, model.TEvent{ID: fmt.Sprint(i), Key: key, Lo: before * 1000, Hi: after * 1000, Outcome: o})
			total++
			if want {
				admitted++
			}
			if math.Abs(diff) < 1e-6 {
				boundary++
				if got != want {
					// the two states part here; start both afresh
					t.Logf("%v request %d at the boundary (now - allow_at = %g s): model %v, redis_rate %v; keys reset", limit, i, diff, got, want)
					tat, events = map[string]float64{}, nil
					sim = model.MustNew(spec).NewSimulator(0)
					for k := 0; k < 2; k++ {
						if err := lim.Reset(ctx, fmt.Sprintf("gcra:%s:%d", limit, k)); err != nil {
							t.Fatal(err)
						}
					}
				}
				continue
			}
			if got != want {
				t.Fatalf("%v request %d (%s at %d µs): model %v, redis_rate %v (now - allow_at = %g s)", limit, i, key, us, got, want, diff)
			}
		}
		judgeRedisRate(t, spec, events)
	}
	t.Logf("%d requests, %d admitted, %d within 1 µs of the boundary, all others decided alike", total, admitted, boundary)
	if admitted == 0 || admitted == total {
		t.Errorf("admitted %d of %d: the schedules did not exercise both answers", admitted, total)
	}
	if boundary*10 > total {
		t.Errorf("%d of %d requests at the boundary: the comparison decided too little", boundary, total)
	}
}

// redisMicros is Redis' TIME in unix microseconds.
func redisMicros(t *testing.T, ctx context.Context, rdb *redis.Client) int64 {
	t.Helper()
	tm, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMicro()
}

// judgeRedisRate checks redis_rate's answers with the model checker, each request in the interval of Redis' TIME
// before and after its call: no violation (the checker's µs tolerance covers the script's clock and arithmetic),
// and turning a decided answer around is found.
func judgeRedisRate(t *testing.T, spec model.Spec, events []model.TEvent) {
	t.Helper()
	m := model.MustNew(spec)
	res, err := model.Check(m, model.MkEvents(events), model.Options{NoTimingReport: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Over)+len(res.Under)+len(res.Windows) > 0 {
		t.Fatalf("%s: redis_rate's answers judged violations: over %+v under %+v windows %+v", spec.Kind, res.Over, res.Under, res.Windows)
	}
	// turn around the first must-reject and the last must-admit request
	flips := map[model.Verdict]int{}
	decided := 0
	for j, v := range res.Verdicts {
		if v == model.Either {
			continue
		}
		decided++
		if _, ok := flips[v]; !ok || v == model.MustAdmit {
			flips[v] = j
		}
	}
	if len(flips) < 2 {
		t.Fatalf("decided %d of %d, not both ways (%v): the schedule judges too little", decided, len(events), flips)
	}
	for v, j := range flips {
		flipped := append([]model.TEvent(nil), events...)
		if v == model.MustReject {
			flipped[j].Outcome = model.Admitted
		} else {
			flipped[j].Outcome = model.Rejected
		}
		r2, err := model.Check(m, model.MkEvents(flipped), model.Options{NoTimingReport: true})
		if err != nil {
			t.Fatal(err)
		}
		found := append(r2.Over, r2.Under...)
		if len(found) == 0 || found[0].ID != events[j].ID {
			t.Fatalf("turning request %s (%s) around was not found: %+v", events[j].ID, v, found)
		}
		t.Logf("%d requests judged, %d decided; %s (%s) turned around: %s", len(events), decided, events[j].ID, v, found[0].Why)
	}
}
