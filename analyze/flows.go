package analyze

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/model"
)

// keyUse records, per limiter, which requests used each bucket (from the
// events of its model check, model.Router) and with what outcome there.
type keyUse struct {
	limiters []map[string]*bucketUse
	// uses[k][i] counts the buckets request i used at limiter k (nil: none yet).
	uses [][]uint8
	n    int
}

type bucketUse struct {
	use      model.BucketUse
	reqs     []int32
	outcomes []model.Outcome
}

func newKeyUse(n, requests int) *keyUse {
	u := &keyUse{limiters: make([]map[string]*bucketUse, n), uses: make([][]uint8, n), n: requests}
	for k := range u.limiters {
		u.limiters[k] = map[string]*bucketUse{}
	}
	return u
}

// route records the buckets of limiter k's events under m; an event's Req
// is its request (negative: not a request, modelGroup).
func (u *keyUse) route(k int, m model.Model, evs *model.Events) {
	r := model.NewRouter(m)
	var buf []model.BucketUse
	for j := range evs.Len() {
		e := evs.At(j)
		if e.Req < 0 || e.KeyUnknown {
			continue // a late RLS decision, or a request whose bucket is not known
		}
		req := e.Req
		buf = r.Route(evs, j, buf[:0])
		for _, b := range buf {
			if b.Burst >= math.MaxUint32 {
				// the lab's stand-in for no default bucket (fill_interval 0,
				// runner localSpec): it never limits, so it is no key
				continue
			}
			if u.uses[k] == nil {
				u.uses[k] = make([]uint8, u.n)
			}
			if u.uses[k][req] < math.MaxUint8 {
				u.uses[k][req]++
			}
			bu := u.limiters[k][b.Name]
			if bu == nil {
				bu = &bucketUse{use: b}
				u.limiters[k][b.Name] = bu
			}
			bu.reqs = append(bu.reqs, req)
			bu.outcomes = append(bu.outcomes, e.Outcome)
		}
	}
}

// namedFlows reports whether the requests carry flow names.
func namedFlows(reqs *evidence.Requests) bool {
	for _, f := range reqs.Flows {
		if f != "" {
			return true
		}
	}
	return false
}

// spanRates returns the active time (first to last send, ns) of n sends and
// the rates (n-1)/active and admitted/active per second (0 when active is 0).
func spanRates(n, admitted int, first, last int64) (active int64, offered, adm float64) {
	active = last - first
	if active <= 0 || n == 0 {
		return 0, 0, 0
	}
	s := float64(active) / 1e9
	return active, float64(n-1) / s, float64(admitted) / s
}

func pct(a, n int) float64 {
	if n == 0 {
		return 0
	}
	return math.Round(1e4*float64(a)/float64(n)) / 100
}

// flowsSection fills the per-flow and per-key tables from the limiters'
// model checks (ScenarioReport.Flows, Keys, Starved).
var flowsSection = section{name: "flows", needs: []string{"receipts", "limiters"}, compute: flowTables}

// flowTables fills the per-flow and per-key tables and the starved
// findings of a scenario whose requests name flows.
func flowTables(in *Input) {
	ls, sr := in.limiters, in.Report
	if ls == nil || ls.keys == nil {
		return
	}
	reqs := &in.Evidence.Requests
	t := newFlowTab(in)
	t.lastOf, t.isLast = lastLimiters(ls, len(reqs.Targets))
	for k, r := range ls.runs {
		sr.Keys, sr.Starved = t.keyTables(k, r, sr.Keys, sr.Starved)
	}
	free, unbounded := t.reachedLast()
	for f := range t.flows {
		sr.Flows = append(sr.Flows, t.flowReport(f, free[f], unbounded[f]))
	}
	// by phase (in send order), then by name: a table that does not depend
	// on which flow's request happened to be answered first
	phaseRank := map[string]int{}
	for _, a := range t.flows {
		if _, ok := phaseRank[a.phase]; !ok {
			phaseRank[a.phase] = len(phaseRank)
		}
	}
	sort.SliceStable(sr.Flows, func(a, b int) bool {
		fa, fb := &sr.Flows[a], &sr.Flows[b]
		if pa, pb := phaseRank[fa.Phase], phaseRank[fb.Phase]; pa != pb {
			return pa < pb
		}
		return fa.Flow < fb.Flow
	})
}

// flowAcc is one flow, (phase, flow), while its requests are counted.
type flowAcc struct {
	phase, name  string
	sent, passed int
	first, last  int64
}

// flowBucket is one bucket (name) of limiter k.
type flowBucket struct {
	k    int
	name string
}

// flowTab is what the per-flow and per-key tables are built from.
type flowTab struct {
	in   *Input
	reqs *evidence.Requests
	// flows in first-send order; flowOf[i] is request i's; labels their
	// names in the tables.
	flows  []*flowAcc
	flowOf []int32
	labels []string
	// lastOf[t] is the last limiter on target t's path (-1: none);
	// isLast[k] that limiter k is checked and last for all of its targets
	// (then its buckets bound what passed).
	lastOf []int
	isLast []bool
	// usedBy lists the flows that used a bucket (sorted, distinct);
	// flowUses[f] counts flow f's uses per bucket; boundOf is each
	// bucket's model bound.
	usedBy   map[flowBucket][]int32
	flowUses []map[flowBucket]int
	boundOf  map[flowBucket]report.ModelBound
}

// newFlowTab counts the flows of in's requests: (phase, flow) in
// first-send order, with their sends and passes, labelled by flow name
// (prefixed by the phase when there are several phases; the phase when
// unnamed).
func newFlowTab(in *Input) *flowTab {
	reqs := &in.Evidence.Requests
	n := reqs.Len()
	t := &flowTab{in: in, reqs: reqs, flowOf: make([]int32, n), usedBy: map[flowBucket][]int32{}, boundOf: map[flowBucket]report.ModelBound{}}
	byPF := map[[2]uint16]int32{}
	phases := map[uint16]bool{}
	for i := 0; i < n; i++ {
		f, ok := reqs.FlowOf(i)
		if !ok {
			f = 0
		}
		pf := [2]uint16{reqs.PhaseAt(i), f}
		k, ok := byPF[pf]
		if !ok {
			k = int32(len(t.flows))
			byPF[pf] = k
			name := ""
			if int(f) < len(reqs.Flows) {
				name = reqs.Flows[f]
			}
			t.flows = append(t.flows, &flowAcc{phase: reqs.Phases[pf[0]], name: name, first: reqs.SentNs.At(i), last: reqs.SentNs.At(i)})
			phases[pf[0]] = true
		}
		t.flowOf[i] = k
		a := t.flows[k]
		a.sent++
		if c := reqs.Class[i]; c.Passed() || c == evidence.ClassNoResponse && in.received[i] {
			a.passed++
		}
		a.first, a.last = min(a.first, reqs.SentNs.At(i)), max(a.last, reqs.SentNs.At(i))
	}
	t.labels = make([]string, len(t.flows))
	for k, a := range t.flows {
		switch {
		case a.name == "":
			t.labels[k] = a.phase
		case len(phases) > 1:
			t.labels[k] = a.phase + "/" + a.name
		default:
			t.labels[k] = a.name
		}
	}
	t.flowUses = make([]map[flowBucket]int, len(t.flows))
	for k := range t.flowUses {
		t.flowUses[k] = map[flowBucket]int{}
	}
	return t
}

// lastLimiters returns the last limiter of each of the targets' paths
// (-1: none), and whether each limiter is checked and last for all of its
// targets.
func lastLimiters(ls *limiterSet, targets int) (lastOf []int, isLast []bool) {
	lastOf = make([]int, targets)
	for t := range lastOf {
		lastOf[t] = -1
		for k, r := range ls.runs {
			if r.applies[t] {
				lastOf[t] = k
			}
		}
	}
	isLast = make([]bool, len(ls.runs))
	for k, r := range ls.runs {
		isLast[k] = r.report.Status == report.LimiterChecked
		for t, ok := range r.applies {
			if ok && lastOf[t] != k {
				isLast[k] = false
			}
		}
	}
	return lastOf, isLast
}

// keyTables appends to keys a row per bucket of limiter k (r), by name,
// and to starved the flows starved at it; it records which flows used
// each bucket.
func (t *flowTab) keyTables(k int, r *limiterRun, keys []report.KeyReport, starved []report.StarvedFlow) ([]report.KeyReport, []report.StarvedFlow) {
	use := t.in.limiters.keys.limiters[k]
	bounds := map[string]report.ModelBound{}
	for _, b := range r.report.Buckets {
		bounds[b.Bucket] = b
	}
	names := make([]string, 0, len(use))
	for name := range use {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		bu := use[name]
		fb := flowBucket{k, name}
		t.boundOf[fb] = bounds[name]
		keys = append(keys, t.keyReport(fb, r, bu, bounds[name]))
		starved = append(starved, starvedAt(r.decl.Name, name, bu, t.flowOf, t.labels, t.reqs)...)
	}
	return keys, starved
}

// keyReport is the per-key row of bucket fb (of limiter r, used as bu,
// with model bound b).
func (t *flowTab) keyReport(fb flowBucket, r *limiterRun, bu *bucketUse, b report.ModelBound) report.KeyReport {
	reqs := t.reqs
	kr := report.KeyReport{Limiter: r.decl.Name, Bucket: fb.name, RatePerSec: bu.use.PerSec, Burst: bu.use.Burst, Min: b.Min, Max: b.Max}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	seen := map[int32]bool{}
	for j, i := range bu.reqs {
		f := t.flowOf[i]
		if !seen[f] {
			seen[f] = true
			t.usedBy[fb] = append(t.usedBy[fb], f)
		}
		t.flowUses[f][fb]++
		kr.Sent++
		switch bu.outcomes[j] {
		case model.Admitted, model.ShadowRejected:
			kr.Admitted++
		case model.Unknown:
			kr.Unknown++
		}
		first, last = min(first, reqs.SentNs.At(int(i))), max(last, reqs.SentNs.At(int(i)))
	}
	slices.Sort(t.usedBy[fb])
	for _, f := range t.usedBy[fb] {
		kr.Flows = append(kr.Flows, t.labels[f])
	}
	kr.AdmittedPct = pct(kr.Admitted, kr.Sent)
	kr.ActiveNs, kr.OfferedPerSec, kr.AdmittedPerSec = spanRates(kr.Sent, kr.Admitted, first, last)
	return kr
}

// reachedLast counts, per flow, its requests that reached their last
// limiter and used no bucket there (free: not limited, the model admits
// them), and tells the flows whose bound does not add up (unbounded: a
// request without a last limiter that bounds, or one that used several
// buckets).
func (t *flowTab) reachedLast() (free []int, unbounded []bool) {
	ls, reqs := t.in.limiters, t.reqs
	free = make([]int, len(t.flows))
	unbounded = make([]bool, len(t.flows))
	for i := 0; i < reqs.Len(); i++ {
		f := t.flowOf[i]
		k := t.lastOf[reqs.Target[i]]
		if k < 0 || !t.isLast[k] {
			unbounded[f] = true
			continue
		}
		if !ls.reaches(k, i, reqs, t.in.received) {
			continue
		}
		switch used := ls.keys.uses[k]; {
		case used == nil || used[i] == 0:
			free[f]++
		case used[i] > 1:
			unbounded[f] = true
		}
	}
	return free, unbounded
}

// flowReport is flow f's row: its counts, its buckets, the flows it
// shares them with, and its model bound (the bounds of its buckets at
// last limiters plus its free requests) when nothing is shared and the
// bound adds up.
func (t *flowTab) flowReport(f, free int, unbounded bool) report.FlowReport {
	a, ls := t.flows[f], t.in.limiters
	fr := report.FlowReport{Flow: t.labels[f], Phase: a.phase, Sent: a.sent, Admitted: a.passed, AdmittedPct: pct(a.passed, a.sent), Keys: []string{}}
	fr.ActiveNs, fr.OfferedPerSec, fr.AdmittedPerSec = spanRates(a.sent, a.passed, a.first, a.last)
	shared := map[int32]bool{}
	b := report.FlowBound{Min: free, Max: free}
	for fb := range t.flowUses[f] {
		fr.Keys = append(fr.Keys, ls.runs[fb.k].decl.Name+": "+fb.name)
		if !t.isLast[fb.k] {
			continue
		}
		for _, g := range t.usedBy[fb] {
			if int(g) != f {
				shared[g] = true
			}
		}
		b.Min += t.boundOf[fb].Min
		b.Max += t.boundOf[fb].Max
	}
	sort.Strings(fr.Keys)
	for g := range shared {
		fr.SharedWith = append(fr.SharedWith, t.labels[g])
	}
	sort.Strings(fr.SharedWith)
	if !unbounded && len(shared) == 0 {
		fr.Model = &b
	}
	return fr
}

// starvedAt finds the starved flows at one bucket shared by several flows.
func starvedAt(limiter, bucket string, bu *bucketUse, flowOf []int32, labels []string, reqs *evidence.Requests) []report.StarvedFlow {
	type acc struct {
		sent, admitted, rejected int
		first, last              int64
	}
	per := map[int32]*acc{}
	var order []int32
	for j, i := range bu.reqs {
		f := flowOf[i]
		a := per[f]
		if a == nil {
			a = &acc{first: reqs.SentNs.At(int(i)), last: reqs.SentNs.At(int(i))}
			per[f] = a
			order = append(order, f)
		}
		a.sent++
		switch bu.outcomes[j] {
		case model.Admitted, model.ShadowRejected:
			a.admitted++
		case model.Rejected:
			a.rejected++
		}
		a.first, a.last = min(a.first, reqs.SentNs.At(int(i))), max(a.last, reqs.SentNs.At(int(i)))
	}
	if len(per) < 2 || bu.use.PerSec <= 0 || math.IsInf(bu.use.PerSec, 0) {
		return nil
	}
	slices.Sort(order)
	share := bu.use.PerSec / float64(len(per))
	rate := func(a *acc) float64 {
		if a.sent < 2 {
			return 0
		}
		if a.last == a.first {
			return math.Inf(1)
		}
		return float64(a.sent-1) / (float64(a.last-a.first) / 1e9)
	}
	var out []report.StarvedFlow
	for _, f := range order {
		a := per[f]
		if a.rejected == 0 || rate(a) > share {
			continue
		}
		s := report.StarvedFlow{Flow: labels[f], Limiter: limiter, Bucket: bucket, OfferedPerSec: rate(a), FairSharePerSec: share, Sent: a.sent, Rejected: a.rejected,
			ConsumedBy: []report.FlowShare{}}
		for _, g := range order {
			if b := per[g]; g != f && rate(b) > share {
				s.ConsumedBy = append(s.ConsumedBy, report.FlowShare{Flow: labels[g], OfferedPerSec: rate(b), Admitted: b.admitted})
			}
		}
		if len(s.ConsumedBy) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// checkStarved: a flow within its fair share of a shared bucket that the
// bucket rejected while others consumed it fails the scenario unless the
// expectation accepts it (expect.starved: true, which then requires one).
func checkStarved(in *Input) (r Result) {
	want := in.Scenario.Expect.Starved
	got := in.Report.Starved
	if want == nil && len(got) == 0 {
		return r
	}
	var texts []string
	for _, s := range got {
		texts = append(texts, s.String())
	}
	desc := strconv.Itoa(len(got))
	if len(texts) > 0 {
		desc += ": " + strings.Join(texts, "; ")
	}
	if want != nil && *want {
		r.add("starved flows (within their fair share, rejected by a shared bucket)", passIf(len(got) > 0), ">= 1 (expect.starved)", desc)
		return r
	}
	r.add("starved flows (within their fair share, rejected by a shared bucket)", passIf(len(got) == 0), "0", desc)
	return r
}
