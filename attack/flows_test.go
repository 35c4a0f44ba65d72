package attack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"pgregory.net/rapid"

	"github.com/rlbench/rlbench/evidence"
)

// TestRunFlows: two flows of one attack, one all at once and one paced,
// each with its own IDs, path, method, headers and body: every request
// arrives once with its flow's shape, every line names its flow, the
// per-flow counts are exact, and both flows start at the one OnStart.
func TestRunFlows(t *testing.T) {
	rec := newRecorder()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		if r.URL.Path == "/report" {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	var starts atomic.Int32
	var startAt atomic.Int64
	flows := []Flow{
		{Name: "A", IDs: IDs(30, "a"), Path: "/ping", Header: http.Header{"X-User": {"A"}, "X-Plan": {"free"}}},
		{Name: "B", IDs: IDs(20, "b"), Path: "/report", Method: "POST", Body: []byte("rep"), Header: http.Header{"X-User": {"B"}},
			Rate: vegeta.Rate{Freq: 200, Per: time.Second}},
	}
	sum, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "p", URL: srv.URL}}, Flows: flows, Name: "mix",
		OnStart: func(at time.Time) { starts.Add(1); startAt.Store(at.UnixNano()) }})
	if err != nil || !sum.Complete || len(lines) != 50 || sum.Sent != 50 {
		t.Fatalf("err %v summary %+v lines %d", err, sum, len(lines))
	}
	if starts.Load() != 1 || startAt.Load() != sum.StartNs {
		t.Fatalf("OnStart called %d times at %d; start %d", starts.Load(), startAt.Load(), sum.StartNs)
	}
	seen := rec.snapshot()
	byFlow := map[string]int{}
	for _, l := range lines {
		byFlow[l.Flow]++
		if l.Phase != "mix" || l.Proto != "HTTP/1.1" {
			t.Errorf("%s: phase %q proto %q", l.ID, l.Phase, l.Proto)
		}
		s := seen[l.ID]
		if len(s) != 1 {
			t.Fatalf("%s received %d times", l.ID, len(s))
		}
		switch l.Flow {
		case "A":
			if s[0].Path != "/ping" || s[0].Method != "GET" || s[0].Header.Get("X-User") != "A" || s[0].Header.Get("X-Plan") != "free" ||
				l.Code != 200 || l.IntendedNs != 0 || l.SentNs < sum.StartNs {
				t.Errorf("flow A line %+v seen %+v", l, s[0])
			}
		case "B":
			if s[0].Path != "/report" || s[0].Method != "POST" || s[0].Body != "rep" || s[0].Header.Get("X-User") != "B" ||
				s[0].Header.Get("X-Plan") != "" || l.Code != 429 || l.IntendedNs <= sum.StartNs {
				t.Errorf("flow B line %+v seen %+v", l, s[0])
			}
		default:
			t.Errorf("%s: flow %q", l.ID, l.Flow)
		}
	}
	if byFlow["A"] != 30 || byFlow["B"] != 20 {
		t.Fatalf("lines per flow %v", byFlow)
	}
	if len(sum.Flows) != 2 {
		t.Fatalf("flows %+v", sum.Flows)
	}
	a, b := sum.Flows[0], sum.Flows[1]
	if a.Config.Flow != "A" || a.Sent != 30 || a.CodesByTarget["p"]["200"] != 30 || a.Burst == nil || a.Pacing != nil ||
		a.Config.Path != "/ping" || !slices.Equal(a.Config.HeaderNames, []string{"X-Plan", "X-User"}) || a.Burst.Requests != 30 ||
		a.Burst.ReleaseNs != sum.StartNs || a.Burst.WarmConnections != 30 {
		t.Errorf("flow A summary %+v burst %+v", a, a.Burst)
	}
	if b.Config.Flow != "B" || b.Sent != 20 || b.CodesByTarget["p"]["429"] != 20 || b.Pacing == nil || b.Burst != nil ||
		b.Config.Rate != "200/1s" || b.Config.Method != "POST" || b.Config.BodyBytes != 3 || b.Pacing.ErrorNs.N != 20 {
		t.Errorf("flow B summary %+v pacing %+v", b, b.Pacing)
	}
	// B's schedule runs from the common start: hit k at (k+1)*5ms.
	var bl []evidence.Request
	for _, l := range lines {
		if l.Flow == "B" {
			bl = append(bl, l)
		}
	}
	slices.SortFunc(bl, func(x, y evidence.Request) int { return int(x.IntendedNs - y.IntendedNs) })
	for k, l := range bl {
		if want := sum.StartNs + int64(k+1)*int64(5*time.Millisecond); l.IntendedNs != want {
			t.Fatalf("flow B hit %d intended %d, want %d (start %d)", k, l.IntendedNs, want, sum.StartNs)
		}
	}
	if sum.CodesByTarget["p"]["200"] != 30 || sum.CodesByTarget["p"]["429"] != 20 || sum.Config.IDs != 50 ||
		sum.Config.Split != "flows" || sum.Burst == nil || sum.Pacing == nil || sum.Config.Targets[0].IDs != 50 {
		t.Errorf("attack summary %+v", sum)
	}
}

// TestRunFlowRates: two paced flows of one attack keep their own rates:
// each flow's intended sends are on its own schedule (300/s and 60/s from
// the common start), no ID leaves before its intended time, and each
// flow's achieved rate is computed from its own sends. (The achieved
// rates' ratio is not asserted: on a loaded host a flow's first send is
// late by as much as the host makes it, and its achieved rate with it.)
func TestRunFlowRates(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	flows := []Flow{
		{Name: "fast", IDs: IDs(300, "f"), Rate: vegeta.Rate{Freq: 300, Per: time.Second}},
		{Name: "slow", IDs: IDs(60, "s"), Rate: vegeta.Rate{Freq: 60, Per: time.Second}},
	}
	sum, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{URL: srv.URL}}, Flows: flows})
	if err != nil || !sum.Complete || len(lines) != 360 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	for i, f := range flows {
		var fl []evidence.Request
		for _, l := range lines {
			if l.Flow == f.Name {
				fl = append(fl, l)
			}
		}
		slices.SortFunc(fl, func(x, y evidence.Request) int { return cmp.Compare(x.IntendedNs, y.IntendedNs) })
		interval := int64(f.Rate.Per) / int64(f.Rate.Freq) // vegeta's ConstantPacer, whole ns
		for k, l := range fl {
			if want := sum.StartNs + int64(k+1)*interval; l.IntendedNs != want {
				t.Fatalf("flow %s hit %d intended %d, want %d (start %d)", f.Name, k, l.IntendedNs, want, sum.StartNs)
			}
			if l.SentNs < l.IntendedNs {
				t.Errorf("flow %s: %s sent %s early", f.Name, l.ID, time.Duration(l.IntendedNs-l.SentNs))
			}
		}
		if got, want := sum.Flows[i].Pacing.AchievedPerSec, achievedPerSec(fl); len(fl) != len(f.IDs) || !sameRate(got, want) {
			t.Fatalf("flow %s: %d lines, achieved %v/s, its sends give %v/s", f.Name, len(fl), got, want)
		}
	}
	// Both schedules span the same second from the same start: the last
	// intended sends coincide.
	var lastFast, lastSlow int64
	for _, l := range lines {
		if l.Flow == "fast" {
			lastFast = max(lastFast, l.IntendedNs)
		} else {
			lastSlow = max(lastSlow, l.IntendedNs)
		}
	}
	// (vegeta's interval is Per/Freq in whole ns: 300 x 3333333 ns and 60 x
	// 16666666 ns.)
	if d := lastFast - lastSlow; d < -1000 || d > 1000 || sum.StartNs+int64(time.Second)-lastSlow > 1000 {
		t.Fatalf("last intended: fast %d slow %d start %d", lastFast, lastSlow, sum.StartNs)
	}
}

// TestRunFlowsNeverResend: the no-re-send guarantee holds for every flow of
// an attack against the killing backend.
func TestRunFlowsNeverResend(t *testing.T) {
	kb := newKillingBackend(t, evidence.IDHeader)
	flows := []Flow{
		{Name: "get", IDs: IDs(15, "g"), Concurrency: 1},
		{Name: "head", IDs: IDs(15, "h"), Method: "HEAD", Concurrency: 1, Rate: vegeta.Rate{Freq: 500, Per: time.Second}},
	}
	sum, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "k", URL: kb.srv.URL}}, Flows: flows})
	if err != nil || len(lines) != 30 || sum.Resent != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	seen, killed := kb.counts()
	for _, l := range lines {
		if seen[l.ID] != 1 {
			t.Errorf("%s (flow %s) received %d times", l.ID, l.Flow, seen[l.ID])
		}
	}
	perFlow := map[string]int{}
	for _, l := range lines {
		if _, k := killed[l.ID]; k {
			perFlow[l.Flow]++
		}
	}
	if perFlow["get"] == 0 || perFlow["head"] == 0 {
		t.Fatalf("killed connections per flow %v: the test did not exercise reuse in both flows", perFlow)
	}
}

func TestRunFlowsValidation(t *testing.T) {
	tg := []Target{{Name: "a", URL: "http://127.0.0.1:9"}}
	cases := map[string]Options{
		"no name":        {Targets: tg, Flows: []Flow{{IDs: IDs(2, "x")}}},
		"dup names":      {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x")}, {Name: "a", IDs: IDs(2, "y")}}},
		"dup across":     {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x")}, {Name: "b", IDs: IDs(3, "x")}}},
		"attack ids":     {Targets: tg, IDs: IDs(1, "z"), Flows: []Flow{{Name: "a", IDs: IDs(2, "x")}}},
		"attack rate":    {Targets: tg, Rate: vegeta.Rate{Freq: 1, Per: time.Second}, Flows: []Flow{{Name: "a", IDs: IDs(2, "x")}}},
		"no ids":         {Targets: tg, Flows: []Flow{{Name: "a"}}},
		"bad path":       {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x"), Path: "p"}}},
		"bad header":     {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x"), Header: http.Header{"X": {"a\nb"}}}}},
		"bad split":      {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x"), Split: Split{Mode: SplitCounts, Values: []int{1}}}}},
		"ctl name":       {Targets: tg, Flows: []Flow{{Name: "a\n", IDs: IDs(2, "x")}}},
		"unknown target": {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x"), Requests: []RequestTemplate{{Target: "zz"}}}}},
		"tmpl and path":  {Targets: tg, Flows: []Flow{{Name: "a", IDs: IDs(2, "x"), Path: "/x", Requests: []RequestTemplate{{}}}}},
		"bad shard":      {Targets: tg, IDs: IDs(2, "x"), Shard: Shard{Index: 2, Count: 2}},
		"h2 on http":     {Targets: tg, IDs: IDs(2, "x"), Protocol: ProtoH2},
		"h2c on https":   {Targets: []Target{{URL: "https://127.0.0.1:9"}}, IDs: IDs(2, "x"), Protocol: ProtoH2C},
		"bad protocol":   {Targets: tg, IDs: IDs(2, "x"), Protocol: "spdy"},
	}
	for name, o := range cases {
		if err := Check(o); err == nil || !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err %v, want ErrInvalidOptions", name, err)
		}
	}
	err := Check(cases["dup across"])
	if want := `id 1 of flow "b" ("x-1") duplicates id 1 of flow "a"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("duplicate across flows: %v, want it to name both (%s)", err, want)
	}
}

// TestRunRequestTemplates: ID k goes to template k mod len (vegeta's
// round-robin order over its targets), each to its own target and path.
func TestRunRequestTemplates(t *testing.T) {
	recA, recB := newRecorder(), newRecorder()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { recA.add(r) }))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { recB.add(r) }))
	defer b.Close()
	tmpls := []RequestTemplate{
		{Target: "a", Path: "/one"},
		{Target: "b", Method: "PUT", Path: "/two?x=1", Body: []byte("b2"), Header: http.Header{"X-T": {"2"}}},
		{Target: "a", Method: "DELETE", Path: "/three"},
	}
	sum, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{Name: "a", URL: a.URL}, {Name: "b", URL: b.URL}},
		Flows: []Flow{{Name: "file", IDs: IDs(9, "t"), Requests: tmpls}}})
	if err != nil || !sum.Complete || len(lines) != 9 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	ids := IDs(9, "t")
	sa, sb := recA.snapshot(), recB.snapshot()
	for k, id := range ids {
		switch k % 3 {
		case 0:
			if s := sa[id]; len(s) != 1 || s[0].Path != "/one" || s[0].Method != "GET" {
				t.Errorf("%s: %+v", id, s)
			}
		case 1:
			if s := sb[id]; len(s) != 1 || s[0].Path != "/two" || s[0].RawQuery != "x=1" || s[0].Method != "PUT" || s[0].Body != "b2" || s[0].Header.Get("X-T") != "2" {
				t.Errorf("%s: %+v", id, s)
			}
		case 2:
			if s := sa[id]; len(s) != 1 || s[0].Path != "/three" || s[0].Method != "DELETE" {
				t.Errorf("%s: %+v", id, s)
			}
		}
	}
	c := sum.Flows[0].Config
	if c.Split != SplitRequests || len(c.Requests) != 3 || c.Requests[1].Target != "b" || c.Requests[1].Method != "PUT" ||
		c.Requests[1].BodyBytes != 2 || c.Targets[0].IDs != 6 || c.Targets[1].IDs != 3 {
		t.Errorf("flow config %+v", c)
	}
}

// shardedRequest is what a prepared attack sends for one ID.
type shardedRequest struct {
	flow, id string
	tmpl     int32
	hit      int64
}

func preparedRequests(t *rapid.T, o Options) []shardedRequest {
	p, err := prepare(o)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	var out []shardedRequest
	for _, f := range p.flows {
		for k, id := range f.ids {
			hit := int64(k)
			if f.sched != nil {
				hit = f.sched[k]
			}
			out = append(out, shardedRequest{flow: f.name, id: id, tmpl: f.assign[k], hit: hit})
		}
	}
	return out
}

// TestShardsCoverExactly (property): for random flows (sizes, splits,
// seeds, rates) and a random shard count N, the N shards together send
// exactly the unsharded requests — each ID once, to the same target, at
// the same schedule position — and agree on the digests a merge checks.
func TestShardsCoverExactly(t *testing.T) {
	targets := []Target{{Name: "a", URL: "http://127.0.0.1:9"}, {Name: "b", URL: "http://127.0.0.1:10"}, {Name: "c", URL: "http://127.0.0.1:11"}}
	rapid.Check(t, func(t *rapid.T) {
		nf := rapid.IntRange(1, 3).Draw(t, "flows")
		var flows []Flow
		for f := range nf {
			n := rapid.IntRange(1, 60).Draw(t, fmt.Sprintf("ids%d", f))
			fl := Flow{Name: fmt.Sprintf("f%d", f), IDs: IDs(n, fmt.Sprintf("f%d", f))}
			switch rapid.IntRange(0, 2).Draw(t, "split") {
			case 1:
				fl.Split = Split{Mode: SplitWeights, Values: []int{rapid.IntRange(1, 5).Draw(t, "w0"), 0, rapid.IntRange(1, 5).Draw(t, "w2")}}
				fl.Seed = rapid.Int64().Draw(t, "seed")
			case 2:
				fl.Split = Split{Mode: SplitSticky}
			}
			if rapid.Bool().Draw(t, "paced") {
				fl.Rate = vegeta.Rate{Freq: rapid.IntRange(1, 1000).Draw(t, "rate"), Per: time.Second}
			}
			flows = append(flows, fl)
		}
		o := Options{Targets: targets, Flows: flows}
		if nf == 1 && rapid.Bool().Draw(t, "single") {
			f := flows[0]
			o = Options{Targets: targets, IDs: f.IDs, Split: f.Split, Seed: f.Seed, Rate: f.Rate}
		}
		want := preparedRequests(t, o)
		n := rapid.IntRange(1, 9).Draw(t, "shards")
		var got []shardedRequest
		var digest string
		for k := range n {
			so := o
			so.Shard = Shard{Index: k, Count: n}
			p, err := prepare(so)
			if err != nil {
				t.Fatal(err)
			}
			if p.shard.Index != k || p.shard.Count != n || p.shard.TotalIDs != len(want) {
				t.Fatalf("shard info %+v", p.shard)
			}
			if k == 0 {
				digest = p.shard.Digest
			} else if p.shard.Digest != digest {
				t.Fatalf("shard %d digest %s, shard 0 %s", k, p.shard.Digest, digest)
			}
			got = append(got, preparedRequests(t, so)...)
		}
		key := func(a, b shardedRequest) int {
			if a.flow != b.flow {
				return strings.Compare(a.flow, b.flow)
			}
			return int(a.hit - b.hit)
		}
		slices.SortFunc(got, key)
		slices.SortFunc(want, key)
		if !slices.Equal(got, want) {
			t.Fatalf("%d shards send %d requests, unsharded %d (or they differ)\n got %v\nwant %v", n, len(got), len(want), got, want)
		}
	})
}

// TestRunShards runs 3 shards of a two-flow attack against one backend:
// every ID arrives exactly once, and each summary names its shard.
func TestRunShards(t *testing.T) {
	rec := newRecorder()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	defer srv.Close()
	flows := []Flow{{Name: "A", IDs: IDs(20, "a")}, {Name: "B", IDs: IDs(10, "b"), Rate: vegeta.Rate{Freq: 500, Per: time.Second}}}
	total := 0
	for k := range 3 {
		sum, err, lines := runToLines(t, context.Background(), Options{Targets: []Target{{URL: srv.URL}}, Flows: flows, Shard: Shard{Index: k, Count: 3}})
		if err != nil || !sum.Complete {
			t.Fatalf("shard %d: err %v summary %+v", k, err, sum)
		}
		total += len(lines)
		sh := sum.Shard
		if sh == nil || sh.Index != k || sh.Count != 3 || sh.IDs != len(lines) || sh.TotalIDs != 30 || len(sh.Flows) != 2 ||
			sh.Flows[0].IDSetDigest != idSetDigest(IDs(20, "a")) || sum.Host == "" || sum.Clock == nil || sum.Clock.WallNs == 0 {
			t.Errorf("shard %d: %+v host %q clock %+v", k, sh, sum.Host, sum.Clock)
		}
	}
	seen := rec.snapshot()
	if total != 30 || len(seen) != 30 {
		t.Fatalf("%d lines, %d distinct IDs received", total, len(seen))
	}
	for id, s := range seen {
		if len(s) != 1 {
			t.Errorf("%s received %d times", id, len(s))
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("2/5"); err != nil || s != (Shard{Index: 2, Count: 5}) || s.String() != "2/5" {
		t.Fatalf("2/5: %+v %v", s, err)
	}
	for _, bad := range []string{"", "5/5", "-1/3", "a/b", "1", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestRunStartAt: connections are warm before the instant, the first
// request leaves after it, and the lateness is recorded.
func TestRunStartAt(t *testing.T) {
	srv := newCountingServer(false, func(w http.ResponseWriter, r *http.Request) {})
	defer srv.Close()
	at := time.Now().Add(400 * time.Millisecond)
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(5, "s"), Targets: []Target{{URL: srv.URL}}, StartAt: at,
		WarmAhead: 200 * time.Millisecond})
	if err != nil || !sum.Complete {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	sa := sum.StartAt
	if sa == nil || sa.AtNs != at.UnixNano() || sum.StartNs < at.UnixNano() || sa.LateNs != sum.StartNs-at.UnixNano() ||
		sa.WarmAheadNs != int64(200*time.Millisecond) {
		t.Fatalf("start_at %+v start %d", sa, sum.StartNs)
	}
	for _, l := range lines {
		if l.SentNs < at.UnixNano() {
			t.Errorf("%s sent %s before the start instant", l.ID, time.Duration(at.UnixNano()-l.SentNs))
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.atFirst != 5 || sum.Burst.WarmConnections != 5 {
		t.Fatalf("%d connections open at the first request, %d warm", srv.atFirst, sum.Burst.WarmConnections)
	}
}

// TestRunStartAtInterrupted: cancelled while holding for the instant,
// nothing is sent.
func TestRunStartAtInterrupted(t *testing.T) {
	rec := newRecorder()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	ctx, cancel := context.WithCancel(context.Background())
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew && conns.Add(1) == 3 {
			cancel() // every connection is warm: the attack is holding for the instant
		}
	}
	srv.Start()
	defer srv.Close()
	started := false
	o := Options{IDs: IDs(3, "i"), Targets: []Target{{URL: srv.URL}}, StartAt: time.Now().Add(time.Hour), WarmAhead: time.Hour + time.Minute,
		OnStart: func(time.Time) { started = true }}
	sum, err, lines := runToLines(t, ctx, o)
	if err != nil || !sum.Interrupted || sum.Complete || len(lines) != 0 || started || len(rec.snapshot()) != 0 {
		t.Fatalf("err %v summary %+v lines %d started %v", err, sum, len(lines), started)
	}
}

// TestProgress: the counters follow the attack and end exact.
func TestProgress(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > 6 {
			<-release
			w.WriteHeader(http.StatusTooManyRequests)
		}
		io.WriteString(w, "x")
	}))
	defer srv.Close()
	prog := new(Progress)
	if s := prog.Snapshot(); s.Started || s.Recorded != 0 {
		t.Fatalf("fresh snapshot %+v", s)
	}
	done := make(chan *evidence.AttackSummary)
	go func() {
		sum, _, _ := runToLines(t, context.Background(), Options{IDs: IDs(10, "p"), Targets: []Target{{URL: srv.URL}}, Concurrency: 6, Progress: prog})
		done <- sum
	}()
	// Wait until the first six are recorded; the others are held.
	for prog.Snapshot().Recorded < 6 {
		time.Sleep(time.Millisecond)
	}
	mid := prog.Snapshot()
	if !mid.Started || mid.Done || mid.Total != 10 || mid.Recorded != 6 || mid.Answered != 6 || len(mid.Codes) != 1 || mid.Codes[0] != (CodeCount{200, 6}) || mid.PerSec <= 0 {
		t.Errorf("mid snapshot %+v", mid)
	}
	once.Do(func() { close(release) })
	sum := <-done
	end := prog.Snapshot()
	if !end.Done || end.Recorded != 10 || end.Sent != 10 || end.Answered != 10 || end.Left != 0 ||
		!slices.Equal(end.Codes, []CodeCount{{200, 6}, {429, 4}}) || sum.Sent != 10 {
		t.Fatalf("end snapshot %+v", end)
	}
}
