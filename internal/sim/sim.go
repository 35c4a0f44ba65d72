// Package sim runs rlbench plans on a virtual clock: each scenario's
// attack flows (their IDs, rates, splits over the targets and headers, as
// `rlbench run` would send them) go through the same limiter models that
// analyze checks the lab against (package model, exact simulators),
// with no socket, no goroutine and no sleep, deterministically for a seed.
// The result is an evidence bundle in memory (requests, receipts,
// scenario.json with the simulated limiters), so that analyze.Judge gives
// the same tables, bounds and findings as for a lab run.
//
// What a simulation needs beyond the lab (arrivals, limiters the lab cannot
// build, the summary grid) is the scenario's simulate section
// (runner.SimulatePlan).
package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// DefaultStart is the virtual clock's origin when Options.Start is zero:
// the first attack of every scenario starts there.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultLatency is a request's virtual response time when the plan gives
// none (SimulatePlan.Latency).
const DefaultLatency = time.Millisecond

// Options configure Run.
type Options struct {
	// Seed seeds the Poisson arrivals and the models' random choices (Envoy's
	// filter_enabled and filter_enforced percentages); repeat r of a
	// scenario uses Seed+r-1. Splits use the plan's own seeds, as the lab
	// does, so a lab run and its simulation send each ID to the same target.
	Seed int64
	// Start is the virtual clock's origin; DefaultStart when zero.
	Start time.Time
	// Name is the bundle's Dir (e.g. "simulate examples/dimensions/instances.yaml").
	Name string
}

// Run simulates every scenario (and repeat) of the plan and returns the
// evidence bundle. A scenario that cannot be simulated (fault steps, a
// limiter whose rejections it cannot answer with) is NOT_RUN with the
// reason, like a lab scenario that could not run. Run stops when ctx is
// done (the error is ctx's).
func Run(ctx context.Context, p *runner.Plan, opts Options) (*evidence.Bundle, error) {
	if opts.Start.IsZero() {
		opts.Start = DefaultStart
	}
	b := &evidence.Bundle{Dir: opts.Name, Root: opts.Name, Missing: []string{}}
	for si := range p.Scenarios {
		sc := &p.Scenarios[si]
		for rep := 1; rep <= max(sc.Repeat, 1); rep++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			b.Scenarios = append(b.Scenarios, scenario(sc, si, rep, opts))
		}
	}
	return b, nil
}

// scenario simulates one repeat of a scenario.
func scenario(sc *runner.ScenarioPlan, index, repeat int, opts Options) *evidence.ScenarioEvidence {
	dir := runner.ScenarioDir(index, sc, repeat)
	ev := &evidence.ScenarioEvidence{Dir: dir, Path: dir, InRun: true, HasScenario: true, RLSPendingLookups: -1}
	ev.Scenario = evidence.Scenario{Schema: evidence.ScenarioSchema, Name: sc.Name, Description: sc.Description, Repeat: repeat}
	if sc.Repeat <= 1 {
		ev.Scenario.Repeat = 0
	}
	notRun := func(why string) *evidence.ScenarioEvidence {
		ev.NotRun, ev.NotRunReason = true, "simulate: "+why
		return ev
	}
	for _, st := range sc.Steps {
		if st.Fault != nil {
			return notRun(fmt.Sprintf("step %q is a fault (%s %s): faults are not simulated", st.Name, st.Fault.Action, st.Fault.Target))
		}
	}
	var targets []string
	switch {
	case sc.Lab != nil:
		for i := 0; i < max(sc.Lab.Proxies, 1); i++ {
			targets = append(targets, lab.ProxyName(i))
		}
	case sc.External != nil:
		for _, px := range sc.External.Proxies {
			targets = append(targets, px.Name)
		}
	}
	decls, err := limiters(sc, opts.Start)
	if err != nil {
		return notRun(err.Error())
	}
	chain, err := newChain(decls, targets, opts.Seed+int64(repeat)-1)
	if err != nil {
		return notRun(err.Error())
	}
	latency := DefaultLatency
	arrivals := runner.ArrivalsUniform
	if s := sc.Simulate; s != nil {
		if s.Latency > 0 {
			latency = time.Duration(s.Latency)
		}
		if s.Arrivals != "" {
			arrivals = s.Arrivals
		}
	}
	perStep, perFlow := runner.RequestHeaders(decls, sc.Steps)
	ex := sc.Expect.Expectation
	ex.ReceiptsEqualAdmitted, ex.StatsAgree = true, nil // a simulation has receipts, no proxy stats
	if sc.Expect.ReceiptsEqualAdmitted != nil {
		ex.ReceiptsEqualAdmitted = *sc.Expect.ReceiptsEqualAdmitted
	}
	ev.Scenario.Expect, ev.Scenario.IntendedLimit, ev.Scenario.Limiters, ev.Scenario.Classify = ex, sc.IntendedLimit, decls, sc.Classify
	ev.Scenario.RequestHeaders, ev.Scenario.FlowRequestHeaders = perStep, perFlow

	cls, err := evidence.NewClassifier(sc.Classify)
	if err != nil {
		return notRun(err.Error())
	}
	ts := make([]attack.Target, len(targets))
	for i, t := range targets {
		ts[i] = attack.Target{Name: t, URL: "http://" + t}
	}
	start := opts.Start.UnixNano()
	attackRec := &evidence.Attack{Schema: evidence.AttackSchema, Complete: true, Phases: []evidence.AttackSummary{}, StartNs: start}
	ev.HasRequests = true
	conns := 0
	for j, st := range sc.Steps {
		if st.Attack == nil {
			continue
		}
		reqs, err := sends(st, j, sc, index, repeat, ts, start, arrivals, opts.Seed+int64(repeat)-1, &conns)
		if err != nil {
			return notRun(err.Error())
		}
		ev.Requests.Grow(reqs.total)
		ev.Receipts.Grow(reqs.total)
		last := start
		var s send
		for reqs.next(&s) {
			d := chain.offer(&s, s.sentNs+int64(latency)/10)
			q := evidence.Request{ID: s.id, Target: s.target, URL: s.url, Method: s.f.method, SentNs: s.sentNs,
				LatencyNs: int64(latency) + int64(d.delay), Phase: st.Name, IntendedNs: s.sentNs, Flow: s.f.flow, Proto: "HTTP/1.1", Conn: s.conn}
			switch d.rejectedBy {
			case "":
				q.Code, q.Body = http.StatusOK, `{"id":"`+s.id+`"}`
				q.BytesIn = uint64(len(q.Body))
			case evidence.ClassGlobal429.String():
				q.Code, q.Error, q.Headers = http.StatusTooManyRequests, "429 Too Many Requests", map[string]string{"x-envoy-ratelimited": "true"}
			default:
				q.Code, q.Error, q.Body = http.StatusTooManyRequests, "429 Too Many Requests", "local_rate_limited"
				q.BytesIn = uint64(len(q.Body))
			}
			if _, ok := ev.Requests.AddClassified(&q, cls); !ok {
				return notRun("duplicate request id " + s.id)
			}
			if d.rejectedBy == "" {
				id := s.id
				at := s.sentNs + int64(latency)/10 + int64(d.delay) + 1
				ev.Receipts.Add(&ev.Requests, &evidence.Receipt{ID: &id, RecvNs: at, RecvTime: time.Unix(0, at).UTC().Format(time.RFC3339Nano),
					Method: s.f.method, Path: s.f.path, Remote: "127.0.0.1:1", Endpoint: "backend-0", Status: http.StatusOK})
			}
			last = max(last, q.EndNs())
		}
		attackRec.Sent += reqs.total
		attackRec.Recorded += reqs.total
		attackRec.EndNs = last
		start = last + int64(time.Millisecond) // the next step starts after this one's last response
	}
	ev.Attack = attackRec
	return ev
}

// limiters are the limiters a scenario's simulation runs: its simulate
// section's, else its own (limiters:), else the lab's (runner.LabPlan.LabLimiters).
func limiters(sc *runner.ScenarioPlan, start time.Time) ([]evidence.Limiter, error) {
	switch {
	case sc.Simulate != nil && len(sc.Simulate.Limiters) > 0:
		return sc.Simulate.Limiters, nil
	case len(sc.Limiters) > 0:
		return sc.Limiters, nil
	case sc.Lab != nil:
		return sc.Lab.LabLimiters(start)
	}
	return nil, nil
}

// send is one request to simulate: the stream's current one. What its
// flow shares is behind f.
type send struct {
	id, target, conn string
	f                *sendFlow
	// url is "http://" + target + the flow's path.
	url    string
	sentNs int64
}

// sendFlow is what every send of one flow shares.
type sendFlow struct {
	flow, phase, method, path string
	header                    http.Header
}

// flowSends generates one flow's sends in ID order, which is send-time
// order: its uniform and Poisson arrivals never go back in time.
type flowSends struct {
	k   int // flow index in the step: ties between flows keep it
	f   *sendFlow
	ids attack.IDFormat
	to  []int32 // target index per ID (attack.AssignTargets)
	// urls and names are per target.
	urls, names []string
	i           int   // next ID, 0-based
	at          int64 // its send time
	start       int64
	gap         float64 // ns between IDs when paced
	paced       bool
	poisson     bool
	t           float64 // Poisson clock
	rng         *rand.Rand
	// Connections: one per target (conn, "" until the first send to it),
	// or one per request without keep-alive; made counts them, numbered
	// from base+1.
	conn        []string
	noKeepAlive bool
	base, made  int
}

// time sets at to the send time of ID i (after i-1's: the Poisson clock
// advances once per ID).
func (fs *flowSends) time() {
	fs.at = fs.start
	if !fs.paced {
		return
	}
	if fs.poisson {
		if fs.i > 0 {
			fs.t += fs.rng.ExpFloat64() * fs.gap
		}
		fs.at = int64(fs.t)
		return
	}
	fs.at = fs.start + int64(math.Round(float64(fs.i)*fs.gap))
}

// stream merges a step's flows into one sequence in send-time order, the
// order the limiters decide the requests in; at equal times the earlier
// flow, then the earlier ID, goes first. Only one send per flow is in
// memory at a time (10 M IDs: 40 MB of target indexes, not 1 GB of sends).
type stream struct {
	heap  []*flowSends // min-heap on (at, k)
	total int          // IDs of all flows
	prev  int64        // send time of the last send, for the 1 ns rule
	sent  int
	buf   []byte
}

func (s *stream) less(a, b int) bool {
	x, y := s.heap[a], s.heap[b]
	if x.at != y.at {
		return x.at < y.at
	}
	return x.k < y.k
}

func (s *stream) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s.heap) {
			return
		}
		m := l
		if r := l + 1; r < len(s.heap) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.heap[i], s.heap[m] = s.heap[m], s.heap[i]
		i = m
	}
}

// next fills out with the next send and reports whether there was one.
func (s *stream) next(out *send) bool {
	if len(s.heap) == 0 {
		return false
	}
	fs := s.heap[0]
	a := fs.to[fs.i]
	s.buf = fs.ids.Append(s.buf[:0], fs.i+1)
	c := fs.conn[a]
	if c == "" || fs.noKeepAlive {
		fs.made++
		n := fs.base + fs.made
		c = fmt.Sprintf("127.0.0.1:%d/%d", 10000+n%50000, n)
		fs.conn[a] = c
	}
	at := fs.at
	// Requests sent at the same instant keep their order one ns apart: the
	// limiters decide them one by one, and so does the model check.
	if s.sent > 0 {
		at = max(at, s.prev+1)
	}
	*out = send{id: string(s.buf), target: fs.names[a], conn: c, f: fs.f, url: fs.urls[a], sentNs: at}
	s.prev = at
	s.sent++
	if fs.i++; fs.i < len(fs.to) {
		fs.time()
	} else {
		last := len(s.heap) - 1
		s.heap[0], s.heap[last] = s.heap[last], nil // a finished flow's indexes are garbage
		s.heap = s.heap[:last]
	}
	s.down(0)
	return true
}

// sends lays out one attack step's requests on the virtual clock from
// start: per flow its IDs (named as the runner names them), their targets
// (attack.AssignTargets with the flow's split and seed), their send times
// (uniform at the flow's rate, Poisson, or all at start) and connections
// (one per flow and target, or one per request without keep-alive). The
// stream generates them in send-time order.
func sends(st runner.Step, j int, sc *runner.ScenarioPlan, index, repeat int, ts []attack.Target, start int64, arrivals string, seed int64,
	conns *int) (*stream, error) {
	ap := st.Attack
	type flow struct {
		name, split, method, path string
		ids                       int
		seed                      int64
		rate                      vegeta.Rate
		header                    http.Header
		noKeepAlive               bool
	}
	var flows []flow
	if len(ap.Flows) == 0 {
		flows = append(flows, flow{split: ap.Split, method: ap.Method, path: ap.Path, ids: ap.IDs, seed: ap.Seed, rate: vegeta.Rate(ap.Rate),
			header: header(ap.Headers), noKeepAlive: ap.NoKeepAlive})
	}
	for k := range ap.Flows {
		f := &ap.Flows[k]
		flows = append(flows, flow{name: f.Name, split: f.Split, method: f.Method, path: f.Path, ids: f.Count(), seed: f.Seed,
			rate: vegeta.Rate(f.Rate), header: header(ap.Headers, f.Headers), noKeepAlive: ap.NoKeepAlive || f.NoKeepAlive})
	}
	prefix := fmt.Sprintf("sim-s%dr%d-%s", index+1, repeat, runner.Slug(st.Name))
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	s := &stream{}
	for k, f := range flows {
		split := attack.Split{Mode: attack.SplitEven}
		if f.split != "" {
			var err error
			if split, err = attack.ParseSplit(f.split); err != nil {
				return nil, err
			}
		}
		p := prefix
		if f.name != "" {
			p += "-" + runner.Slug(f.name)
		}
		n := f.ids
		if n <= 0 || n > attack.MaxIDs {
			n = 0 // attack.IDs gives none
		}
		to, err := attack.AssignTargets(n, ts, split, f.seed)
		if err != nil {
			return nil, fmt.Errorf("step %q flow %q: %w", st.Name, f.name, err)
		}
		method := strings.ToUpper(f.method)
		if method == "" {
			method = attack.DefaultMethod
		}
		fs := &flowSends{k: k, f: &sendFlow{flow: f.name, phase: st.Name, method: method, path: f.path, header: f.header},
			ids: attack.NewIDFormat(n, p), to: to, names: names, urls: make([]string, len(ts)), start: start, t: float64(start),
			rng: rand.New(rand.NewPCG(uint64(seed), uint64(j)<<32|uint64(k))), conn: make([]string, len(ts)),
			noKeepAlive: f.noKeepAlive, base: *conns}
		for i, name := range names {
			fs.urls[i] = "http://" + name + f.path
		}
		if f.rate.Freq > 0 && f.rate.Per > 0 {
			fs.paced, fs.poisson, fs.gap = true, arrivals == runner.ArrivalsPoisson, float64(f.rate.Per)/float64(f.rate.Freq)
		}
		// The connections this flow opens, numbered after the earlier
		// flows' as the runner opens them flow by flow.
		if f.noKeepAlive {
			*conns += n
		} else {
			seen := make([]bool, len(ts))
			for _, a := range to {
				if !seen[a] {
					seen[a] = true
					*conns++
				}
			}
		}
		fs.time()
		s.heap = append(s.heap, fs)
		s.total += n
	}
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
	return s, nil
}

// header merges a plan's header maps, later ones winning (as the runner
// does).
func header(maps ...map[string]string) http.Header {
	h := http.Header{}
	for _, m := range maps {
		for k, v := range m {
			h.Set(k, v)
		}
	}
	return h
}

// chain is a scenario's limiters in the order a request meets them (local
// before global, as analyze orders them), each with its simulators.
type chain struct {
	stages []*stage
}

type stage struct {
	decl    evidence.Limiter
	applies map[string]bool
	entries []descriptor.CompiledRateLimit
	// sim is the model limiter's simulator (nil for an RLS).
	sim model.Simulator
	// rls: the configuration and one fixed-window simulator per rule.
	cfg   *rlsconfig.Config
	rules map[string]model.Simulator
	seed  int64
	// reject is the class its rejections are answered with.
	reject string
}

func newChain(decls []evidence.Limiter, targets []string, seed int64) (*chain, error) {
	sorted := slices.Clone(decls)
	sort.SliceStable(sorted, func(a, b int) bool {
		return sorted[a].Stage == evidence.StageLocal && sorted[b].Stage != evidence.StageLocal
	})
	c := &chain{}
	for _, d := range sorted {
		s := &stage{decl: d, applies: map[string]bool{}, rules: map[string]model.Simulator{}, seed: seed}
		for _, t := range targets {
			s.applies[t] = d.AppliesTo(t)
		}
		rejects := d.RejectionClasses()
		if len(rejects) == 0 {
			return nil, fmt.Errorf("limiter %q: no rejection class", d.Name)
		}
		switch rejects[0] {
		case evidence.ClassLocal429, evidence.ClassGlobal429:
			s.reject = rejects[0].String()
		default:
			return nil, fmt.Errorf("limiter %q: rejections %s cannot be simulated (only local_429 and global_429)", d.Name, rejects[0])
		}
		if len(d.RateLimits) > 0 {
			entries, err := descriptor.CompileRateLimits("rate_limits", d.RateLimits)
			if err != nil {
				return nil, fmt.Errorf("limiter %q: %w", d.Name, err)
			}
			s.entries = entries
		}
		switch {
		case d.Model != nil:
			m, err := model.New(*d.Model)
			if err != nil {
				return nil, fmt.Errorf("limiter %q: %w", d.Name, err)
			}
			s.sim = m.NewSimulator(seed)
		case d.RLS != nil:
			cfg, err := rlsconfig.Parse(fmt.Sprintf("limiter %q rls.config", d.Name), []byte(d.RLS.Config))
			if err != nil {
				return nil, err
			}
			s.cfg = cfg
		}
		c.stages = append(c.stages, s)
	}
	return c, nil
}

// decision is what the chain did with one request.
type decision struct {
	// rejectedBy is the rejecting limiter's class ("" admitted).
	rejectedBy string
	delay      time.Duration
}

// offer runs one request through the chain at virtual time at.
func (c *chain) offer(s *send, at int64) decision {
	var d decision
	for _, st := range c.stages {
		if !st.applies[s.target] {
			continue
		}
		var descs [][]descriptor.DescriptorEntry
		if st.entries != nil {
			descs = descriptor.Descriptors(st.entries, s.f.header, "127.0.0.1")
		}
		if st.cfg != nil {
			if !st.offerRLS(descs, at) {
				d.rejectedBy = st.reject
				return d
			}
			continue
		}
		key, ok := st.key(s, descs)
		if !ok {
			continue // no descriptor: not limited by it
		}
		r := model.Request{At: at + int64(d.delay), Key: key}
		if st.decl.Model.Kind == model.KindNginxLimitReq {
			r.Vars = vars(s, key)
		}
		if st.decl.Model.Kind == model.KindEnvoyLocal && len(descs) > 0 {
			r.Descriptors = make([]model.Descriptor, len(descs))
			for u, e := range descs {
				r.Descriptors[u] = toModel(e)
			}
		}
		md := st.sim.Offer(r)
		if !md.Admit {
			d.rejectedBy = st.reject
			return d
		}
		d.delay += md.Delay
	}
	return d
}

// key is the model Key of a request at a model limiter, as analyze keys
// its events: the target, the target's connection, every request ("all"),
// or the request's descriptors.
func (st *stage) key(s *send, descs [][]descriptor.DescriptorEntry) (string, bool) {
	switch st.decl.Key {
	case evidence.KeyTarget:
		return s.target, true
	case evidence.KeyConnection:
		return s.target + " " + s.f.phase + " " + s.conn, true
	case evidence.KeyDescriptor:
		if len(descs) == 0 {
			return "", false
		}
		parts := make([]string, len(descs))
		for u, e := range descs {
			parts[u] = toModel(e).String()
		}
		return strings.Join(parts, " "), true
	}
	return "all", true
}

// offerRLS decides a request's descriptors at an RLS as envoyproxy/ratelimit
// does: every descriptor with a rule counts a hit in its fixed window
// (over-limit hits too), and the call is OVER_LIMIT when one of them is
// over its limit and not in shadow_mode (src/service/ratelimit.go).
func (st *stage) offerRLS(descs [][]descriptor.DescriptorEntry, at int64) bool {
	ok := true
	for _, e := range descs {
		m, limited := st.cfg.Match(e)
		if m == nil || !limited {
			continue
		}
		sim := st.rules[m.FullKey]
		if sim == nil {
			spec, err := decl.RLSRule{RequestsPerUnit: m.Limit.RequestsPerUnit, Unit: m.Limit.Unit, Align: st.decl.RLS.Align, ShadowMode: m.ShadowMode}.Spec()
			if err != nil {
				continue
			}
			mm, err := model.New(spec)
			if err != nil {
				continue
			}
			sim = mm.NewSimulator(st.seed)
			st.rules[m.FullKey] = sim
		}
		if !sim.Offer(model.Request{At: at, Key: descriptor.CacheKeyPrefix(st.decl.RLS.Domain, e)}).Admit {
			ok = false
		}
	}
	return ok
}

// vars are the nginx zone variables of a simulated request, each prefixed
// with the limiter instance (key) as analyze gives them: the client address
// (the attack sends from 127.0.0.1), the host (the target), the path and
// the request headers ($http_<name>).
func vars(s *send, key string) map[string]string {
	uri := s.f.path
	if uri == "" {
		uri = "/"
	}
	path, _, _ := strings.Cut(uri, "?")
	v := map[string]string{"$binary_remote_addr": "127.0.0.1", "$remote_addr": "127.0.0.1", "$host": s.target, "$server_name": s.target,
		"$uri": path, "$request_uri": uri}
	for k, vs := range s.f.header {
		if len(vs) > 0 {
			v["$http_"+strings.ReplaceAll(strings.ToLower(k), "-", "_")] = vs[0]
		}
	}
	for k, x := range v {
		v[k] = key + " " + x
	}
	return v
}

func toModel(es []descriptor.DescriptorEntry) model.Descriptor {
	d := make(model.Descriptor, len(es))
	for i, e := range es {
		d[i] = model.Entry{Key: e.Key, Value: e.Value}
	}
	return d
}
