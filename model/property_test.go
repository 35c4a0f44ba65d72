package model

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestMain pins rapid's seed (deterministic runs; -rapid.seed=N overrides),
// runs 300 cases per property unless -rapid.checks says otherwise, and keeps
// rapid from writing fail files into testdata.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("rapid.seed"); f != nil && f.Value.String() == "0" {
		_ = flag.Set("rapid.seed", "20261201")
	}
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		_ = flag.Set("rapid.checks", "300")
	}
	_ = flag.Set("rapid.nofailfile", "true")
	os.Exit(m.Run())
}

const t0 = int64(1_796_115_529_000_000_000) // 2026-12-01-ish, unix ns

// genSpec draws a spec of the given kind.
func genSpec(t *rapid.T, kind string) Spec {
	switch kind {
	case KindTokenBucket:
		return Spec{Kind: kind, Capacity: float64(rapid.IntRange(1, 12).Draw(t, "capacity")),
			RatePerSec: rapid.SampledFrom([]float64{0, 0.5, 2, 10, 40, 250}).Draw(t, "rate")}
	case KindEnvoyLocal:
		ver := rapid.SampledFrom([]string{"1.27", "1.30", "1.31", "1.34"}).Draw(t, "version")
		v, _ := parseEnvoyVersion(ver)
		iv := rapid.SampledFrom([]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, time.Second}).Draw(t, "fill_interval")
		tpf := uint32(rapid.IntRange(1, 4).Draw(t, "tpf"))
		s := Spec{Kind: kind, EnvoyVersion: ver, MaxTokens: uint32(rapid.IntRange(1, 8).Draw(t, "max_tokens")),
			TokensPerFill: &tpf, FillInterval: Duration(iv)}
		if !v.atLeast(1, 31) && rapid.Bool().Draw(t, "known phase") {
			s.TimerStart = time.Unix(0, t0-rapid.Int64Range(0, int64(time.Second)).Draw(t, "phase")).UTC().Format(time.RFC3339Nano)
		}
		if v.atLeast(1, 31) && rapid.Bool().Draw(t, "exact level") {
			s.ExactLevel = true // the simulator keeps a token count: exact
		}
		nd := rapid.IntRange(0, 3).Draw(t, "descriptors")
		values := []string{"a", "b"}
		if v.atLeast(1, 34) {
			values = append(values, "")
		}
		used := map[string]bool{}
		for i := 0; i < nd; i++ {
			key := rapid.SampledFrom([]string{"user", "path"}).Draw(t, "desc key")
			val := rapid.SampledFrom(values).Draw(t, "desc value")
			if used[key+val] {
				continue
			}
			used[key+val] = true
			mult := rapid.IntRange(1, 3).Draw(t, "mult")
			dt := uint32(rapid.IntRange(1, 3).Draw(t, "desc tpf"))
			s.Descriptors = append(s.Descriptors, EnvoyDescriptor{Entries: []Entry{{key, val}},
				MaxTokens: uint32(rapid.IntRange(1, 5).Draw(t, "desc max")), TokensPerFill: &dt,
				FillInterval: Duration(iv * time.Duration(mult))})
		}
		if v.atLeast(1, 28) && rapid.Bool().Draw(t, "set always consume") {
			b := rapid.Bool().Draw(t, "always consume")
			s.AlwaysConsumeDefault = &b
		}
		if v.atLeast(1, 34) {
			n := rapid.IntRange(1, 3).Draw(t, "max_dynamic")
			s.MaxDynamicDescriptors = &n
		}
		if rapid.IntRange(0, 5).Draw(t, "enforce?") == 0 {
			p := rapid.SampledFrom([]float64{0, 50}).Draw(t, "enforced")
			s.FilterEnforcedPercent = &p
		}
		if rapid.Bool().Draw(t, "per connection") {
			s.Scope = ScopeConnection
			s.TimerStart = ""
			var ds []EnvoyDescriptor
			for _, d := range s.Descriptors {
				if d.Entries[0].Value != "" {
					ds = append(ds, d)
				}
			}
			s.Descriptors = ds
		}
		return s
	case KindFixedWindow:
		s := Spec{Kind: kind, Limit: uint64(rapid.IntRange(0, 6).Draw(t, "limit")),
			Unit:  rapid.SampledFrom([]string{"second", "minute"}).Draw(t, "unit"),
			Align: rapid.SampledFrom([]string{AlignEpoch, AlignFirstHit}).Draw(t, "align")}
		s.ShadowMode = rapid.IntRange(0, 5).Draw(t, "shadow") == 0
		return s
	case KindNginxLimitReq:
		zone := func(name, key string) NginxZone {
			z := NginxZone{Name: name, Key: key,
				Rate:  rapid.SampledFrom([]string{"1r/s", "2r/s", "10r/s", "30r/m", "1r/m", "7r/s"}).Draw(t, "rate"),
				Burst: rapid.IntRange(0, 6).Draw(t, "burst")}
			switch rapid.IntRange(0, 2).Draw(t, "delay mode") {
			case 1:
				z.NoDelay = true
			case 2:
				z.Delay = rapid.IntRange(1, 4).Draw(t, "delay")
			}
			return z
		}
		s := Spec{Kind: kind, Zones: []NginxZone{zone("rl", "")}}
		if rapid.Bool().Draw(t, "two zones") {
			s.Zones = append(s.Zones, zone("global", "$host"))
		}
		s.DryRun = rapid.IntRange(0, 5).Draw(t, "dry run") == 0
		return s
	case KindGCRA:
		return Spec{Kind: kind, RatePerPeriod: rapid.SampledFrom([]int{1, 2, 3, 10, 40, 250}).Draw(t, "rate"),
			Period: Duration(rapid.SampledFrom([]time.Duration{100 * time.Millisecond, time.Second, 7 * time.Second}).Draw(t, "period")),
			Burst:  rapid.IntRange(1, 12).Draw(t, "burst")}
	case KindSlidingLog, KindSlidingCounter:
		return Spec{Kind: kind, Limit: uint64(rapid.IntRange(1, 6).Draw(t, "limit")),
			Window: Duration(rapid.SampledFrom([]time.Duration{100 * time.Millisecond, time.Second}).Draw(t, "window")),
			Count:  rapid.SampledFrom([]string{CountAdmitted, CountAll}).Draw(t, "count")}
	}
	panic(kind)
}

type genReq struct {
	Request
	id string
}

// genArrivals draws arrivals over a few keys: bursts, fixed rates and
// Poisson streams, sorted by time.
func genArrivals(t *rapid.T, kind string) []genReq {
	var out []genReq
	keys := rapid.IntRange(1, 3).Draw(t, "keys")
	descSets := [][]Descriptor{nil, {{{"user", "a"}}}, {{{"user", "b"}}}, {{{"user", "a"}}, {{"path", "b"}}},
		{{{"path", "a"}}}, {{{"user", "c"}}}, {{{"user", "d"}}, {{"path", "a"}}}}
	streams := rapid.IntRange(1, 4).Draw(t, "streams")
	for s := 0; s < streams; s++ {
		key := fmt.Sprintf("k%d", rapid.IntRange(1, keys).Draw(t, "key"))
		start := t0 + rapid.Int64Range(0, int64(3*time.Second)).Draw(t, "start")
		n := rapid.IntRange(1, 25).Draw(t, "n")
		at := start
		pattern := rapid.IntRange(0, 3).Draw(t, "pattern")
		period := rapid.SampledFrom([]int64{int64(time.Millisecond), int64(10 * time.Millisecond), int64(45 * time.Millisecond),
			int64(100 * time.Millisecond), int64(330 * time.Millisecond)}).Draw(t, "period")
		for i := 0; i < n; i++ {
			r := Request{At: at, Key: key}
			if kind == KindEnvoyLocal {
				r.Descriptors = rapid.SampledFrom(descSets).Draw(t, "descs")
			}
			if kind == KindNginxLimitReq {
				r.Vars = map[string]string{"$host": rapid.SampledFrom([]string{"h1", "h1", "h2"}).Draw(t, "host")}
			}
			out = append(out, genReq{Request: r})
			switch pattern {
			case 0: // burst within 2 ms
				at += rapid.Int64Range(0, int64(200*time.Microsecond)).Draw(t, "gap")
			case 1: // fixed rate
				at += period
			case 2: // Poisson-ish: exponential gaps by inverse transform on a grid
				u := rapid.Float64Range(0.001, 1).Draw(t, "u")
				at += int64(float64(period) * -logf(u))
			case 3: // sparse: long idle gaps (nginx frees keys idle for 60 s)
				at += rapid.SampledFrom([]int64{int64(20 * time.Second), int64(59 * time.Second), int64(61 * time.Second)}).Draw(t, "idle")
				if i > 4 {
					i = n
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	for i := range out {
		out[i].id = fmt.Sprintf("r%03d", i)
	}
	return out
}

func logf(u float64) float64 { return math.Log(u) }

// runProperty simulates, builds events with random intervals around the
// true times, and checks soundness and flip detection.
func runProperty(t *rapid.T, kind string) {
	spec, m, events, trueAdmitted, opts := genHistory(t, kind)
	res, err := Check(m, mk(events), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Over)+len(res.Under)+len(res.Windows) > 0 {
		t.Fatalf("false violation on a true history (spec %+v):\nover %+v\nunder %+v\nwindows %+v", spec, res.Over, res.Under, res.Windows)
	}
	if trueAdmitted < res.Total.Min || trueAdmitted > res.Total.Max {
		t.Fatalf("true admitted %d outside the model's bounds %d..%d", trueAdmitted, res.Total.Min, res.Total.Max)
	}
	if v, why := res.Validity(); v != Valid && res.Observed > 0 {
		t.Fatalf("validity %s %v", v, why)
	}
	flipProperty(t, kind, spec, m, events, res, opts)
}

// runUnknownKeyProperty: on a true history with some events' keys made
// unknown (Event.KeyUnknown), the check stays sound (no violation, the
// true admitted count within the run's bounds) and never decides those
// events.
func runUnknownKeyProperty(t *rapid.T, kind string) {
	spec, m, events, trueAdmitted, opts := genHistory(t, kind)
	unknown := 0
	for j := range events {
		if rapid.IntRange(0, 4).Draw(t, "key unknown") == 0 {
			events[j].KeyUnknown = true
			events[j].Key, events[j].Attrs = "", nil // what the checker cannot know
			unknown++
		}
	}
	res, err := Check(m, mk(events), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Over)+len(res.Under)+len(res.Windows) > 0 {
		t.Fatalf("false violation with %d unknown keys (spec %+v):\nover %+v\nunder %+v\nwindows %+v", unknown, spec, res.Over, res.Under, res.Windows)
	}
	if trueAdmitted < res.Total.Min || trueAdmitted > res.Total.Max {
		t.Fatalf("true admitted %d outside the model's bounds %d..%d (%d unknown keys)", trueAdmitted, res.Total.Min, res.Total.Max, unknown)
	}
	for j, v := range res.Verdicts {
		if events[j].KeyUnknown && v != Either {
			t.Fatalf("event %s with an unknown key judged %s", events[j].ID, v)
		}
	}
}

// genHistory draws a spec and a true history of it: events with random
// intervals around the true decision times, some outcomes lost, and
// requests that never reached the limiter.
func genHistory(t *rapid.T, kind string) (Spec, Model, []tEvent, int, Options) {
	spec := genSpec(t, kind)
	m, err := New(spec)
	if err != nil {
		t.Skip("invalid spec:", err)
	}
	reqs := genArrivals(t, kind)
	sim := m.NewSimulator(rapid.Int64().Draw(t, "seed"))
	maxW := rapid.SampledFrom([]int64{0, int64(100 * time.Microsecond), int64(time.Millisecond), int64(5 * time.Millisecond), int64(60 * time.Millisecond)}).Draw(t, "max width")
	shadowVisible := rapid.Bool().Draw(t, "shadow visible")
	var events []tEvent
	trueAdmitted := 0
	for _, r := range reqs {
		d := sim.Offer(r.Request)
		e := tEvent{ID: r.id, Key: r.Key, Attrs: &Attrs{Descriptors: r.Descriptors, Vars: r.Vars}}
		e.Lo = r.At - rapid.Int64Range(0, maxW).Draw(t, "before")
		e.Hi = r.At + rapid.Int64Range(0, maxW).Draw(t, "after")
		switch {
		case d.Admit && d.Shadow:
			e.Outcome = Admitted
			if shadowVisible {
				e.Outcome = ShadowRejected
			}
		case d.Admit:
			e.Outcome = Admitted
			trueAdmitted++
		default:
			e.Outcome = Rejected
		}
		if rapid.IntRange(0, 19).Draw(t, "lost") == 0 {
			e.Outcome = Unknown
		}
		events = append(events, e)
	}
	// requests that never reached the limiter
	for g := rapid.IntRange(0, 2).Draw(t, "ghosts"); g > 0; g-- {
		at := t0 + rapid.Int64Range(0, int64(4*time.Second)).Draw(t, "ghost at")
		events = append(events, tEvent{ID: fmt.Sprintf("ghost%d", g), Key: "k1", Lo: at, Hi: at + maxW})
	}
	opts := Options{ShadowVisible: shadowVisible, NoTimingReport: true}
	return spec, m, events, trueAdmitted, opts
}

// flipProperty flips decided requests of a true history: each flip must be
// reported, and no verdict may depend on the request's own outcome.
func flipProperty(t *rapid.T, kind string, spec Spec, m Model, events []tEvent, res *Result, opts Options) {
	shadowVisible := opts.ShadowVisible
	// flip decided requests
	var decided []int
	for j, v := range res.Verdicts {
		if v != Either && events[j].Outcome != Unknown {
			decided = append(decided, j)
		}
	}
	propStats[kind][0]++
	propStats[kind][1] += len(events)
	propStats[kind][2] += len(decided)
	for k := 0; k < 3 && len(decided) > 0; k++ {
		propStats[kind][3]++
		j := decided[rapid.IntRange(0, len(decided)-1).Draw(t, "flip")]
		flipped := slices.Clone(events)
		wantOver := res.Verdicts[j] == MustReject
		if wantOver {
			flipped[j].Outcome = Admitted
		} else if spec.DryRun || spec.ShadowMode || (spec.FilterEnforcedPercent != nil && *spec.FilterEnforcedPercent < 100 && shadowVisible) {
			flipped[j].Outcome = ShadowRejected
		} else {
			flipped[j].Outcome = Rejected
		}
		if flipped[j].Outcome == events[j].Outcome {
			continue
		}
		r2, err := Check(m, mk(flipped), opts)
		if err != nil {
			t.Fatal(err)
		}
		list := r2.Under
		if wantOver {
			list = r2.Over
			if !shadowVisible && (spec.DryRun || spec.ShadowMode || (spec.FilterEnforcedPercent != nil && *spec.FilterEnforcedPercent < 100)) {
				list = r2.Shadow
			}
		}
		found := false
		for _, v := range list {
			if v.Index == j && v.ID == events[j].ID {
				found = true
			}
		}
		if !found {
			for i, e := range events {
				t.Logf("ev %d %s lo=%d hi=%d key=%s %v %s -> %s", i, e.ID, e.Lo-t0, e.Hi-t0, e.Key, e.descriptors(), e.Outcome, res.Verdicts[i])
			}
			t.Logf("spec %+v", spec)
			t.Fatalf("flipping %s (%s, was %s) not reported: over %v under %v shadow %v", events[j].ID, res.Verdicts[j], events[j].Outcome, r2.Over, r2.Under, r2.Shadow)
		}
		if r2.Verdicts[j] != res.Verdicts[j] {
			t.Fatalf("the verdict of %s changed with its own outcome", events[j].ID)
		}
	}
}

var propStats = map[string]*[4]int{}

func init() {
	for _, k := range Kinds() {
		propStats[k] = &[4]int{}
	}
}

func TestPropertyTokenBucket(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindTokenBucket) })
}
func TestPropertyEnvoyLocal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindEnvoyLocal) })
}
func TestPropertyFixedWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindFixedWindow) })
}
func TestPropertyNginx(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindNginxLimitReq) })
}
func TestPropertyGCRA(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindGCRA) })
}
func TestPropertySlidingLog(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindSlidingLog) })
}
func TestPropertySlidingCounter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runProperty(t, KindSlidingCounter) })
}

// TestPropertyUnknownKey: events whose key is unknown, under every kind.
func TestPropertyUnknownKey(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { runUnknownKeyProperty(t, kind) })
		})
	}
}

// TestPropertyZStats runs after the property tests (file order) and checks
// that they judged something: decided verdicts and flips in every model.
func TestPropertyZStats(t *testing.T) {
	for _, k := range Kinds() {
		s := propStats[k]
		if s[0] == 0 {
			t.Skipf("%s: the property tests did not run (-run filter)", k)
		}
		t.Logf("%s: cases %d, events %d, decided %d, flips %d", k, s[0], s[1], s[2], s[3])
		if s[2] == 0 || s[3] == 0 {
			t.Errorf("%s: no decided verdict or no flip: the property test checks nothing", k)
		}
	}
}
