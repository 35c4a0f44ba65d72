//go:build integration

package model_test

// The production Redis + Lua token bucket (examples/gateway/token-bucket-gateway.lua, called as its gateway did:
// EVALSHA sha 1 <key> <capacity> <rate> <now>, 429 on 0) run on a real redis-server with an explicit now, held
// against model.KindTokenBucket(capacity, rate) and against luaBucket, a Go replica of the script that it must
// match on every request.
//
// Findings: where the script is not "a standard token bucket" (each a subtest of TestLuaBucketDeviations, asserting
// the script's decisions and the model's explanation of the violation):
//
//   - refill truncation: the refill is math.floor((now - last_time) * rate) and last_time becomes now on every
//     admission, so the fraction of a token earned since the last admission is thrown away at each one. A request
//     with 1.25 tokens of room is refused ("at least 1.250 tokens when it arrived"); under a sustained
//     Poisson offer of twice the rate the script admits a quarter less than the bucket it claims to be (762
//     against 1019 in 10 s at capacity 20, rate 100/s)
//     (TestLuaBucketUnderAdmitsSustained). Never an over-admission.
//   - now in whole seconds (os.time(), time.Now().Unix()): the refill comes as rate tokens at each second
//     boundary, so capacity + rate pass within milliseconds across one ("at most 0.004 tokens", and a window
//     finding: more admissions inside a span than capacity plus refill).
//   - now in milliseconds while rate is per second: 1000 times the refill; a bucket emptied 10ms earlier is full
//     again.
//   - a now behind last_time (gateways whose clocks differ): floor of a negative refill takes tokens away (Lua's
//     math.floor rounds towards -inf, so even a few ms behind costs one token, a second behind at rate r costs r),
//     refusing requests with room ("at least 3.250 tokens").
//   - a fractional capacity: the test is tokens > 0, not >= 1, so a bucket of 1.5 admits 2 at once.
//   - no expiry: the script never sets a TTL (TTL = -1), so every key's hash stays in Redis for ever (one per
//     client key: memory grows with the keys seen), and when it is removed anyway (DEL, eviction under a
//     maxmemory-policy allkeys-*, a restart without persistence) the next request finds a full bucket.
//   - not a deviation: the first request of a key finds a full bucket (HGET of a missing field is false in Redis
//     Lua, so tokens default to capacity and last_time to 0, whose refill is capped at capacity), as the model's
//     bucket starts full; the stored numbers round-trip exactly (Redis converts a Lua number with %.17g).

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
)

// startRedisClient starts a private redis-server (realparts, port 0, no persistence) and returns a client of it,
// both stopped in t.Cleanup. A missing redis-server skips the test, or fails it under RLBENCH_REQUIRE_REAL_PARTS=1
// (the convention of internal/realparts' integration tests).
func startRedisClient(t *testing.T, ctx context.Context) *redis.Client {
	t.Helper()
	bin, err := realparts.FindRedis()
	if err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	r, err := realparts.StartRedis(ctx, realparts.Options{Bin: bin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), Protocol: 2})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb
}

// gatewayScript is the script as its gateway called it: loaded once, then EVALSHA per request.
type gatewayScript struct {
	rdb *redis.Client
	sha string
}

func loadGatewayScript(t *testing.T, ctx context.Context, rdb *redis.Client) *gatewayScript {
	t.Helper()
	src, err := os.ReadFile("../examples/gateway/token-bucket-gateway.lua")
	if err != nil {
		t.Fatal(err)
	}
	sha, err := rdb.ScriptLoad(ctx, string(src)).Result()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(src)
	if sha != hex.EncodeToString(sum[:]) {
		t.Fatalf("SCRIPT LOAD answered %s, not the script's SHA-1", sha)
	}
	return &gatewayScript{rdb: rdb, sha: sha}
}

// allow runs EVALSHA sha 1 key capacity rate now; true iff the script answered 1.
func (g *gatewayScript) allow(t *testing.T, ctx context.Context, key string, capacity, rate, now float64) bool {
	t.Helper()
	v, err := g.rdb.EvalSha(ctx, g.sha, []string{key}, capacity, rate, now).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if v != 0 && v != 1 {
		t.Fatalf("script answered %d", v)
	}
	return v == 1
}

// luaBucket replicates the script in Lua's numbers (float64): per key, last_time (0 when absent) and tokens
// (capacity when absent); delta = floor((now - last_time) * rate); tokens = min(capacity, tokens + delta); admit iff
// tokens > 0, then tokens - 1 and last_time = now are stored; a refusal stores nothing.
type luaBucket struct {
	capacity, rate float64
	keys           map[string]*[2]float64 // last_time, tokens
}

func (b *luaBucket) allow(key string, now float64) bool {
	st := b.keys[key]
	if st == nil {
		st = &[2]float64{0, b.capacity}
	}
	tokens := math.Min(b.capacity, st[1]+math.Floor((now-st[0])*b.rate))
	if !(tokens > 0) {
		return false
	}
	st[0], st[1] = now, tokens-1
	b.keys[key] = st
	return true
}

// baseSec is the gateways' clock at the start of each schedule: unix seconds (2026), exact in float64 together
// with the binary fractions the schedules add.
const baseSec = 1_796_000_000

// luaReq is one call: the true time (seconds after baseSec, the model's clock) and the now the gateway passed.
type luaReq struct {
	key  string
	at   float64
	now  float64
	want bool // the script's expected answer, where a subtest states it
}

// runScript calls the script for each request in order and returns its answers.
func runScript(t *testing.T, ctx context.Context, g *gatewayScript, capacity, rate float64, reqs []luaReq) []bool {
	t.Helper()
	out := make([]bool, len(reqs))
	for i, r := range reqs {
		out[i] = g.allow(t, ctx, r.key, capacity, rate, r.now)
	}
	return out
}

// modelOf returns the token-bucket model the script claims to be and its decisions on reqs at their true times.
func modelOf(t *testing.T, capacity, rate float64, reqs []luaReq) (model.Model, []bool) {
	t.Helper()
	m, err := model.New(model.Spec{Kind: model.KindTokenBucket, Capacity: capacity, RatePerSec: rate})
	if err != nil {
		t.Fatal(err)
	}
	mreqs := make([]model.Request, len(reqs))
	for i, r := range reqs {
		mreqs[i] = model.Request{At: nsOf(r.at), Key: r.key}
	}
	ds := model.Simulate(m, mreqs, 0)
	out := make([]bool, len(ds))
	for i, d := range ds {
		out[i] = d.Admit
	}
	return m, out
}

func nsOf(at float64) int64 { return baseSec*int64(time.Second) + int64(math.Round(at*1e9)) }

// judge checks the script's answers against the model at the requests' true times (exact intervals: the test
// knows when each call was made).
func judge(t *testing.T, m model.Model, reqs []luaReq, got []bool) *model.Result {
	t.Helper()
	evs := make([]model.TEvent, len(reqs))
	for i, r := range reqs {
		o := model.Rejected
		if got[i] {
			o = model.Admitted
		}
		evs[i] = model.TEvent{ID: fmt.Sprintf("r%d", i), Key: r.key, Lo: nsOf(r.at), Hi: nsOf(r.at), Outcome: o}
	}
	res, err := model.Check(m, model.MkEvents(evs), model.Options{NoTimingReport: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func fmtBools(bs []bool) string {
	var b strings.Builder
	for _, v := range bs {
		if v {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

// TestLuaBucketReplicaExact: on seeded random schedules (several keys, same-instant bursts, gaps around 1/rate,
// idle gaps, now going back), the real script answers exactly as luaBucket on every request. The deviations below
// are stated against that replica.
func TestLuaBucketReplicaExact(t *testing.T) {
	ctx := context.Background()
	rdb := startRedisClient(t, ctx)
	g := loadGatewayScript(t, ctx, rdb)
	rng := rand.New(rand.NewPCG(23, 1))
	total, differ := 0, 0
	for c := 0; c < 40; c++ {
		capacity := float64(1 + rng.IntN(20))
		if c%10 == 9 {
			capacity += 0.5
		}
		rate := []float64{0, 0.5, 1, 8, 100, 1000, 2000}[rng.IntN(7)]
		rep := &luaBucket{capacity: capacity, rate: rate, keys: map[string]*[2]float64{}}
		step := 1.0
		if rate > 0 {
			step = 1 / rate
		}
		now := float64(baseSec) + rng.Float64()
		var reqs []luaReq
		for i := 0; i < 150; i++ {
			switch rng.IntN(6) {
			case 0:
			case 1:
				now += step
			case 2:
				now += step * rng.Float64() * 2
			case 3:
				now += math.Round(rng.Float64()*1e6) / 1e6 // µs
			case 4:
				now += step * capacity
			case 5:
				now -= step * rng.Float64()
			}
			key := fmt.Sprintf("rl:%d:%d", c, rng.IntN(2))
			reqs = append(reqs, luaReq{key: key, at: now - baseSec, now: now})
		}
		got := runScript(t, ctx, g, capacity, rate, reqs)
		for i, r := range reqs {
			if want := rep.allow(r.key, r.now); got[i] != want {
				t.Fatalf("case %d (capacity %g, rate %g) request %d (%s, now %.9f): script %v, replica %v", c, capacity, rate, i, r.key, r.now, got[i], want)
			}
		}
		_, mod := modelOf(t, capacity, rate, reqs)
		for i := range got {
			if got[i] != mod[i] {
				differ++
			}
		}
		total += len(reqs)
	}
	t.Logf("%d requests answered as the replica; %d decided otherwise than the token-bucket model", total, differ)
	if differ == 0 {
		t.Error("no request decided otherwise than the model: the schedules do not reach the script's deviations")
	}
}

// TestLuaBucketDeviations runs one schedule per class of deviation from the token bucket (see the file comment),
// asserting the script's answers, the model's, and the checker's explanation of the violation.
func TestLuaBucketDeviations(t *testing.T) {
	ctx := context.Background()
	rdb := startRedisClient(t, ctx)
	g := loadGatewayScript(t, ctx, rdb)
	sec := func(at float64) float64 { return baseSec + at }
	for _, tc := range []struct {
		name           string
		capacity, rate float64
		reqs           []luaReq
		between        func(t *testing.T) // run before the last request
		script, model  string             // answers, 1 = admitted
		viol           string             // "over" or "under": the violation the checker must find
		window         bool               // and a window finding: too many admissions inside a span
		id, why        string             // the violation's request and a part of its explanation
	}{
		{name: "first request finds a full bucket", capacity: 3, rate: 2,
			reqs:   []luaReq{{at: 0}, {at: 0}, {at: 0}, {at: 0}, {at: 0.5}, {at: 0.75}},
			script: "111010", model: "111010"},
		{name: "refill truncated at each admission", capacity: 2, rate: 8,
			reqs:   []luaReq{{at: 0}, {at: 0}, {at: 0.1875}, {at: 0.28125}},
			script: "1110", model: "1111",
			viol: "under", id: "r3", why: "at least 1.250 tokens when it arrived, 1.000 tokens needed"},
		{name: "now in whole seconds", capacity: 4, rate: 2,
			reqs: []luaReq{{at: 0.5, now: baseSec}, {at: 0.5, now: baseSec}, {at: 0.5, now: baseSec}, {at: 0.5, now: baseSec},
				{at: 0.999, now: baseSec}, {at: 1.001, now: baseSec + 1}, {at: 1.002, now: baseSec + 1}, {at: 1.003, now: baseSec + 1}},
			script: "11110110", model: "11110100",
			viol: "over", id: "r6", why: "at most 0.004 tokens when it arrived, 1.000 tokens needed", window: true},
		{name: "now in milliseconds", capacity: 2, rate: 1,
			reqs:   []luaReq{{at: 0, now: baseSec * 1000}, {at: 0, now: baseSec * 1000}, {at: 0.01, now: baseSec*1000 + 10}},
			script: "111", model: "110",
			viol: "over", id: "r2", why: "at most 0.010 tokens when it arrived, 1.000 tokens needed"},
		{name: "now behind last_time", capacity: 4, rate: 1,
			reqs:   []luaReq{{at: 10}, {at: 10.25, now: sec(7.25)}, {at: 10.5}},
			script: "101", model: "111",
			viol: "under", id: "r1", why: "at least 3.250 tokens when it arrived, 1.000 tokens needed"},
		{name: "fractional capacity", capacity: 1.5, rate: 0,
			reqs:   []luaReq{{at: 0}, {at: 0.001}, {at: 0.002}},
			script: "110", model: "100",
			viol: "over", id: "r1", why: "at most 0.500 tokens when it arrived, 1.000 tokens needed"},
		{name: "no expiry: a removed key is a full bucket", capacity: 2, rate: 1,
			reqs: []luaReq{{at: 0}, {at: 0}, {at: 0.5}},
			between: func(t *testing.T) {
				ttl, err := rdb.TTL(ctx, "rl:no expiry: a removed key is a full bucket").Result()
				if err != nil || ttl != -1 {
					t.Fatalf("TTL %v %v, want -1 (no expiry)", ttl, err)
				}
				if err := rdb.Del(ctx, "rl:no expiry: a removed key is a full bucket").Err(); err != nil {
					t.Fatal(err)
				}
			},
			script: "111", model: "110",
			viol: "over", id: "r2", why: "at most 0.500 tokens when it arrived, 1.000 tokens needed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := tc.reqs
			for i := range reqs {
				reqs[i].key = "rl:" + tc.name
				if reqs[i].now == 0 {
					reqs[i].now = sec(reqs[i].at)
				}
			}
			var got []bool
			if tc.between != nil {
				got = runScript(t, ctx, g, tc.capacity, tc.rate, reqs[:len(reqs)-1])
				tc.between(t)
				got = append(got, runScript(t, ctx, g, tc.capacity, tc.rate, reqs[len(reqs)-1:])...)
			} else {
				got = runScript(t, ctx, g, tc.capacity, tc.rate, reqs)
			}
			if fmtBools(got) != tc.script {
				t.Fatalf("script answered %s, want %s", fmtBools(got), tc.script)
			}
			if tc.between == nil { // the replica has no DEL
				rep := &luaBucket{capacity: tc.capacity, rate: tc.rate, keys: map[string]*[2]float64{}}
				var r []bool
				for _, q := range reqs {
					r = append(r, rep.allow(q.key, q.now))
				}
				if fmtBools(r) != tc.script {
					t.Fatalf("replica answered %s, script %s", fmtBools(r), tc.script)
				}
			}
			m, mod := modelOf(t, tc.capacity, tc.rate, reqs)
			if fmtBools(mod) != tc.model {
				t.Fatalf("model answered %s, want %s", fmtBools(mod), tc.model)
			}
			res := judge(t, m, reqs, got)
			if tc.window && (len(res.Windows) == 0 || !res.Windows[0].TooMany || !strings.Contains(res.Windows[0].Why, "capacity plus refill")) {
				t.Fatalf("no window finding of too many admissions: %+v", res.Windows)
			}
			var list []model.Violation
			switch tc.viol {
			case "over":
				list = res.Over
			case "under":
				list = res.Under
			case "":
				if len(res.Over)+len(res.Under)+len(res.Windows) > 0 {
					t.Fatalf("violations on a standard answer: over %+v under %+v windows %+v", res.Over, res.Under, res.Windows)
				}
				return
			}
			for _, v := range list {
				if v.ID == tc.id {
					if !strings.Contains(v.Why, tc.why) {
						t.Fatalf("%s %s explained %q, want it to say %q", tc.viol, v.ID, v.Why, tc.why)
					}
					t.Logf("%s %s: %s", tc.viol, v.ID, v.Why)
					return
				}
			}
			t.Fatalf("no %s violation on %s: over %+v under %+v windows %+v", tc.viol, tc.id, res.Over, res.Under, res.Windows)
		})
	}
}

// TestLuaBucketUnderAdmitsSustained: a Poisson offer at twice the rate for 10 s (µs times, one key). The script
// answers as its replica and admits at most 85 % of what the token bucket admits, below the least the model admits
// for that offer; the checker names the refused requests that had a token, each explained by the level it had.
func TestLuaBucketUnderAdmitsSustained(t *testing.T) {
	ctx := context.Background()
	rdb := startRedisClient(t, ctx)
	g := loadGatewayScript(t, ctx, rdb)
	const capacity, rate = 20, 100
	rng := rand.New(rand.NewPCG(7, 7))
	var reqs []luaReq
	for at := 0.0; at < 10; at += math.Round(rng.ExpFloat64()/(2*rate)*1e6) / 1e6 {
		reqs = append(reqs, luaReq{key: "rl:sustained", at: at, now: baseSec + at})
	}
	// the answers are deterministic: the seed fixes the schedule and the script uses no clock of its own
	got := runScript(t, ctx, g, capacity, rate, reqs)
	rep := &luaBucket{capacity: capacity, rate: rate, keys: map[string]*[2]float64{}}
	scriptN, modelN := 0, 0
	m, mod := modelOf(t, capacity, rate, reqs)
	for i, r := range reqs {
		if rep.allow(r.key, r.now) != got[i] {
			t.Fatalf("request %d: script %v, replica otherwise", i, got[i])
		}
		if got[i] {
			scriptN++
		}
		if mod[i] {
			modelN++
		}
	}
	t.Logf("offered %d in 10 s; script admitted %d, token bucket %g at %g/s %d", len(reqs), scriptN, float64(capacity), float64(rate), modelN)
	if scriptN*100 > modelN*85 {
		t.Fatalf("script admitted %d, the model %d: not the under-admission the truncated refill gives", scriptN, modelN)
	}
	res := judge(t, m, reqs, got)
	if len(res.Over) > 0 || len(res.Under) == 0 {
		t.Fatalf("over %d, under %d: want under-admissions only", len(res.Over), len(res.Under))
	}
	if !strings.Contains(res.Under[0].Why, "tokens when it arrived, 1.000 tokens needed") {
		t.Fatalf("under explained %q", res.Under[0].Why)
	}
	if res.Total.Min <= scriptN {
		t.Fatalf("admitted %d within the run's bounds %d..%d: want below the least a token bucket admits", scriptN, res.Total.Min, res.Total.Max)
	}
}
