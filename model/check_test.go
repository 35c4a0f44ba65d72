package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// ev builds an event on key "k" with its interval in ms offsets from t0.
func ev(id string, loMs, hiMs float64, o Outcome) tEvent {
	return tEvent{ID: id, Key: "k", Lo: t0 + int64(loMs*1e6), Hi: t0 + int64(hiMs*1e6), Outcome: o}
}

func check(t *testing.T, spec Spec, events []tEvent, opts Options) *Result {
	t.Helper()
	res, err := Check(MustNew(spec), mk(events), opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func ids(v []Violation) []string {
	var out []string
	for _, x := range v {
		out = append(out, x.ID)
	}
	return out
}

// A limiter that rejects everything FAILs: the first requests of a fresh
// bucket must be admitted, and the run's lower bound is not met.
func TestRejectEverythingFails(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 5, RatePerSec: 1}
	var events []tEvent
	for i := range 10 {
		events = append(events, ev(fmt.Sprintf("r%d", i), 0, 2, Rejected))
	}
	res := check(t, spec, events, Options{})
	if v, _ := res.Validity(); v != Invalid {
		t.Fatalf("validity %s, want invalid", v)
	}
	if len(res.Under) != 10 {
		t.Errorf("under-admitted %v, want all 10 (each had room given the others' outcomes)", ids(res.Under))
	}
	if res.Total.Min != 5 {
		t.Errorf("lower bound %d, want min(N, C) = 5", res.Total.Min)
	}
	found := false
	for _, w := range res.Windows {
		if !w.TooMany && w.Limit == 5 && len(w.IDs) == 5 {
			found = true
		}
	}
	if !found {
		t.Errorf("no too-few finding naming 5 rejections: %+v", res.Windows)
	}
}

// 3 admitted inside one 2-per-minute window and 1 in the next is a breach,
// not "2 windows x 2 = 4".
func TestFixedWindowBoundaryBreach(t *testing.T) {
	spec := Spec{Kind: KindFixedWindow, Limit: 2, Unit: "minute"}
	start := float64(floorDiv(t0, 60e9)*60e9+60e9-t0) / 1e6 // ms offset of a minute start
	events := []tEvent{
		ev("a", start+50_000, start+50_002, Admitted),
		ev("b", start+55_000, start+55_002, Admitted),
		ev("c", start+59_000, start+59_002, Admitted),
		ev("d", start+61_000, start+61_002, Admitted),
	}
	res := check(t, spec, events, Options{})
	if !slices.Equal(ids(res.Over), []string{"c"}) {
		t.Errorf("over-admitted %v, want [c]", ids(res.Over))
	}
	var tooMany []WindowFinding
	for _, w := range res.Windows {
		if w.TooMany && w.From != 0 {
			tooMany = append(tooMany, w)
		}
	}
	if len(tooMany) != 1 || !slices.Equal(tooMany[0].IDs, []string{"c"}) || tooMany[0].Admitted != 3 {
		t.Errorf("window findings %+v, want one naming c", res.Windows)
	}
	// a boundary-straddling interval: window membership unknown, no FAIL
	events[2] = ev("c", start+59_999, start+60_001, Admitted)
	res = check(t, spec, events, Options{})
	if v, why := res.Validity(); v != Valid {
		t.Errorf("straddling request judged %s: %v", v, why)
	}
	if res.Verdicts[2] != Either {
		t.Errorf("straddling request: %s, want either", res.Verdicts[2])
	}
}

// Simultaneous bursts leave every request "either"; the count check names
// the excess.
func TestSimultaneousBurstCount(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 5, RatePerSec: 1}
	var events []tEvent
	for i := range 10 {
		events = append(events, ev(fmt.Sprintf("r%d", i), 0, 2+float64(i)*0.1, Admitted))
	}
	res := check(t, spec, events, Options{})
	if len(res.Over) != 0 {
		t.Errorf("per-request over-admission %v on overlapping intervals", ids(res.Over))
	}
	var f *WindowFinding
	for i := range res.Windows {
		if res.Windows[i].TooMany && res.Windows[i].From != 0 {
			f = &res.Windows[i]
		}
	}
	if f == nil || len(f.IDs) != 5 || f.Limit != 5 {
		t.Fatalf("window finding %+v, want 5 excess of at most 5", res.Windows)
	}
	// the excess are those with the latest possible arrivals
	if !slices.Equal(f.IDs, []string{"r9", "r8", "r7", "r6", "r5"}) {
		t.Errorf("excess %v", f.IDs)
	}
}

// Timing uncertainty gives "either", never a false FAIL; with narrow
// intervals the same run is decided.
func TestUncertaintyGivesEither(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 1}
	// a may be at 0 and b at 1500 ms (both fit), or a at 600 ms after b at
	// 500 ms (a has 0.1 token): a consistent schedule exists
	wide := []tEvent{ev("a", 0, 600, Admitted), ev("b", 500, 1500, Admitted)}
	res := check(t, spec, wide, Options{})
	if v, why := res.Validity(); v != Valid {
		t.Fatalf("wide intervals: %s %v", v, why)
	}
	if res.Verdicts[0] != Either || res.Verdicts[1] != Either {
		t.Errorf("verdicts %v, want either", res.Verdicts)
	}
	if res.Uncertainty.MaxWidth != time.Second || res.Uncertainty.Either != 2 || res.Uncertainty.EitherFromTiming == 0 {
		t.Errorf("uncertainty %+v", res.Uncertainty)
	}
	narrow := []tEvent{ev("a", 0, 1, Admitted), ev("b", 500, 501, Admitted)}
	res = check(t, spec, narrow, Options{})
	if !slices.Equal(ids(res.Over), []string{"b"}) {
		t.Errorf("narrow intervals: over %v, want [b]", ids(res.Over))
	}
	if !strings.Contains(res.Over[0].Why, "at most 0.501 tokens") {
		t.Errorf("why: %q", res.Over[0].Why)
	}
}

// A request with no response is possibly, never surely, charged.
func TestUnknownOutcome(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 0}
	res := check(t, spec, []tEvent{ev("lost", 0, 1, Unknown), ev("b", 5, 6, Admitted)}, Options{})
	if len(res.Over)+len(res.Windows) != 0 || res.Verdicts[1] != Either {
		t.Errorf("an unknown outcome made b over-admitted: %+v", res)
	}
	res = check(t, spec, []tEvent{ev("lost", 0, 1, Unknown), ev("b", 5, 6, Rejected)}, Options{})
	if len(res.Under) != 0 {
		t.Errorf("b under-admitted although the lost request may have taken the token: %v", ids(res.Under))
	}
}

// One over-admission is reported once, not as a cascade.
func TestNoCascade(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 1}
	events := []tEvent{ev("a1", 0, 1, Admitted), ev("a2", 100, 101, Admitted), ev("a3", 1150, 1151, Admitted)}
	res := check(t, spec, events, Options{})
	if !slices.Equal(ids(res.Over), []string{"a2"}) {
		t.Errorf("over %v, want only a2 (a3 had a token once a2 is not counted)", ids(res.Over))
	}
	// the same for under-admission: b1 wrongly rejected; b2 (surely after,
	// one token per second) is then judged as if b1 had taken its token
	events = []tEvent{ev("b1", 0, 1, Rejected), ev("b2", 500, 501, Rejected)}
	res = check(t, spec, events, Options{})
	if !slices.Equal(ids(res.Under), []string{"b1"}) {
		t.Errorf("under %v, want only b1", ids(res.Under))
	}
}

// Envoy: a rejected request may have charged the buckets before the one
// that refused it, so those charges are possible, not sure.
func TestEnvoyRejectedChargesArePossible(t *testing.T) {
	one := uint32(1)
	spec := Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 100, FillInterval: Duration(time.Hour),
		Descriptors: []EnvoyDescriptor{
			{Entries: []Entry{{"a", "1"}}, MaxTokens: 1, TokensPerFill: &one, FillInterval: Duration(2 * time.Hour)},
			{Entries: []Entry{{"b", "1"}}, MaxTokens: 1, TokensPerFill: &one, FillInterval: Duration(time.Hour)},
		}}
	both := []Descriptor{{{"a", "1"}}, {{"b", "1"}}}
	onlyA := []Descriptor{{{"a", "1"}}}
	e := func(id string, lo float64, d []Descriptor, o Outcome) tEvent {
		x := ev(id, lo, lo+1, o)
		x.Attrs = &Attrs{Descriptors: d}
		return x
	}
	// r1 (a, b) rejected: a (slower) first; if it was rejected by b, a is
	// spent and r2 (a only) must be rejected; if by a... a was full, so r1
	// can only have been rejected by b. The checker cannot know which
	// bucket refused r1, so r2 is "either".
	res := check(t, spec, []tEvent{e("r1", 0, both, Rejected), e("r2", 10, onlyA, Admitted)}, Options{})
	if len(res.Over) != 0 || res.Verdicts[1] != Either {
		t.Errorf("r2: %s, over %v", res.Verdicts[1], ids(res.Over))
	}
	// admitted r1 surely charged a
	res = check(t, spec, []tEvent{e("r1", 0, both, Admitted), e("r2", 10, onlyA, Admitted)}, Options{})
	if !slices.Equal(ids(res.Over), []string{"r2"}) || res.Over[0].Bucket != "k|descriptor a=1" {
		t.Errorf("over %+v, want r2 by descriptor a=1", res.Over)
	}
}

// Shadow: a limiter in shadow mode answers OK over its limit; a must-reject
// admission is would-have-rejected, not a violation, unless the outcomes
// show the limiter's own decision (ShadowVisible).
func TestShadowLimiter(t *testing.T) {
	spec := Spec{Kind: KindFixedWindow, Limit: 1, Unit: "hour", ShadowMode: true}
	events := []tEvent{ev("a", 0, 1, Admitted), ev("b", 10, 11, Admitted)}
	res := check(t, spec, events, Options{})
	if len(res.Over) != 0 || !slices.Equal(ids(res.Shadow), []string{"b"}) {
		t.Errorf("over %v shadow %v, want b as shadow", ids(res.Over), ids(res.Shadow))
	}
	// nginx dry run: an Admitted request may be REJECTED_DRY_RUN, so it is no
	// sure charge; with the statuses visible it is
	dry := Spec{Kind: KindNginxLimitReq, Rate: "1r/s", DryRun: true}
	if res = check(t, dry, events, Options{}); len(res.Over)+len(res.Shadow) != 0 || res.Verdicts[1] != Either {
		t.Errorf("dry run, statuses unseen: %s over %v shadow %v", res.Verdicts[1], ids(res.Over), ids(res.Shadow))
	}
	if res = check(t, dry, events, Options{ShadowVisible: true}); !slices.Equal(ids(res.Over), []string{"b"}) {
		t.Errorf("dry run, statuses visible: over %v, want b (its state admitted it)", ids(res.Over))
	}
	events[1].Outcome = Rejected
	if res = check(t, dry, events, Options{}); !slices.Equal(ids(res.Under), []string{"b"}) {
		t.Errorf("a dry run rejected b: under %v", ids(res.Under))
	}
}

func TestValidityAndErrors(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 1}
	res := check(t, spec, nil, Options{})
	if v, _ := res.Validity(); v != UnknownValidity {
		t.Errorf("no events: %s, want unknown", v)
	}
	res = check(t, spec, []tEvent{ev("x", 0, 1, Unknown)}, Options{})
	if v, _ := res.Validity(); v != UnknownValidity {
		t.Errorf("only unknown outcomes: %s, want unknown", v)
	}
	if _, err := Check(MustNew(spec), mk([]tEvent{ev("x", 5, 1, Admitted)}), Options{}); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("lo after hi: %v", err)
	}
}

// Unlimited rules and unmatched nginx keys: must admit.
func TestNotLimited(t *testing.T) {
	res := check(t, Spec{Kind: KindFixedWindow, Unit: "second", Unlimited: true}, []tEvent{ev("a", 0, 1, Rejected)}, Options{})
	if !slices.Equal(ids(res.Under), []string{"a"}) {
		t.Errorf("unlimited rule rejected a: under %v", ids(res.Under))
	}
}

// Widen covers a clock offset between the clients and the limiter.
func TestWiden(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 1, RatePerSec: 1}
	events := []tEvent{ev("a", 0, 1, Admitted), ev("b", 10, 11, Admitted)}
	if res := check(t, spec, events, Options{}); len(res.Over) != 1 {
		t.Fatalf("over %v", ids(res.Over))
	}
	if res := check(t, spec, events, Options{Widen: 5 * time.Millisecond}); len(res.Over) != 0 {
		t.Errorf("widened: over %v, want none (the intervals now overlap)", ids(res.Over))
	}
}

// UnknownInitialState drops the full-bucket assumption from lower bounds.
func TestUnknownInitialState(t *testing.T) {
	spec := Spec{Kind: KindTokenBucket, Capacity: 3, RatePerSec: 1}
	events := []tEvent{ev("a", 0, 1, Rejected)}
	if res := check(t, spec, events, Options{}); len(res.Under) != 1 {
		t.Fatalf("fresh bucket: under %v", ids(res.Under))
	}
	if res := check(t, spec, events, Options{UnknownInitialState: true}); len(res.Under)+len(res.Windows) != 0 {
		t.Errorf("unknown initial state: under %v windows %+v", ids(res.Under), res.Windows)
	}
}

// nginx frees a key idle for 60 s when another key's node is created
// (ngx_http_limit_req_expire): the key comes back full, so with several keys
// a long-idle key's state is unknown.
func TestNginxIdleKeyMayBeFreed(t *testing.T) {
	spec := Spec{Kind: KindNginxLimitReq, Rate: "1r/m"}
	k := func(id, key string, atMs float64, o Outcome) tEvent {
		e := ev(id, atMs, atMs+1, o)
		e.Key = key
		return e
	}
	// one key: 61 s after an admission there is 0.976 request of room
	one := []tEvent{k("a", "k1", 0, Admitted), k("b", "k1", 61_000, Admitted)}
	if res := check(t, spec, one, Options{}); !slices.Equal(ids(res.Over), []string{"b"}) {
		t.Fatalf("one key: over %v, want b", ids(res.Over))
	}
	// another key created after 60 s idle may have freed k1
	two := []tEvent{k("a", "k1", 0, Admitted), k("x", "k2", 60_500, Admitted), k("b", "k1", 61_000, Admitted)}
	res := check(t, spec, two, Options{})
	if v, why := res.Validity(); v != Valid || res.Verdicts[2] != Either {
		t.Errorf("k1 after 61 s idle with another key: %s %v (verdict %s)", v, why, res.Verdicts[2])
	}
	// within 60 s nothing can be freed: 30 s after an admission, no room
	early := []tEvent{k("a", "k1", 0, Admitted), k("x", "k2", 20_000, Admitted), k("b", "k1", 30_000, Admitted)}
	if res := check(t, spec, early, Options{}); !slices.Equal(ids(res.Over), []string{"b"}) {
		t.Errorf("30 s: over %v, want b", ids(res.Over))
	}
}

// An event whose key is unknown may have taken the room of any bucket: a
// rejection that had room without it is "either" with it, and the event
// itself is never judged, whatever its outcome; an admission over the
// limit among the known events is still found.
func TestKeyUnknown(t *testing.T) {
	spec := Spec{Kind: KindFixedWindow, Limit: 2, Unit: "second", Align: "epoch"}
	known := []tEvent{ev("a", 1, 2, Admitted), ev("b", 20, 21, Rejected)}
	res := check(t, spec, known, Options{})
	if res.Verdicts[1] != MustAdmit || len(res.Under) != 1 {
		t.Fatalf("without the unknown event: %v under %v", res.Verdicts, ids(res.Under))
	}
	u := tEvent{ID: "u", Lo: t0 + 10e6, Hi: t0 + 11e6, Outcome: Admitted, KeyUnknown: true}
	res = check(t, spec, append(slices.Clone(known), u), Options{})
	if res.Verdicts[1] != Either || res.Verdicts[2] != Either || len(res.Under)+len(res.Over)+len(res.Windows) != 0 {
		t.Fatalf("with it: %v under %v over %v windows %v", res.Verdicts, ids(res.Under), ids(res.Over), res.Windows)
	}
	if res.Total.Admitted != 2 || res.Total.Max < 2 {
		t.Fatalf("total %+v", res.Total)
	}
	// Three admissions of k surely in one window of limit 2: found.
	over := []tEvent{ev("a", 1, 2, Admitted), ev("b", 3, 4, Admitted), ev("c", 5, 6, Admitted), u}
	if res := check(t, spec, over, Options{}); len(res.Over) != 1 || res.Over[0].ID != "c" {
		t.Fatalf("over %v verdicts %v", ids(res.Over), res.Verdicts)
	}
	// Too many unknown-key charges to judge: an error, not a verdict.
	defer func(n int) { maxUnknownKeyCharges = n }(maxUnknownKeyCharges)
	maxUnknownKeyCharges = 1
	u2 := u
	u2.ID = "u2"
	if _, err := Check(MustNew(spec), mk(append(slices.Clone(known), u, u2)), Options{}); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("error %v", err)
	}
}
