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

// route records the buckets of limiter k's events under m; idx gives each
// event's request (-1: not a request).
func (u *keyUse) route(k int, m model.Model, events []model.Event, idx []int32) {
	r := model.NewRouter(m)
	var buf []model.BucketUse
	for j := range events {
		if idx[j] < 0 || events[j].KeyUnknown {
			continue // a late RLS decision, or a request whose bucket is not known
		}
		buf = r.Route(&events[j], buf[:0])
		for _, b := range buf {
			if b.Burst >= math.MaxUint32 {
				// the lab's stand-in for no default bucket (fill_interval 0,
				// runner localSpec): it never limits, so it is no key
				continue
			}
			if u.uses[k] == nil {
				u.uses[k] = make([]uint8, u.n)
			}
			if u.uses[k][idx[j]] < math.MaxUint8 {
				u.uses[k][idx[j]]++
			}
			bu := u.limiters[k][b.Name]
			if bu == nil {
				bu = &bucketUse{use: b}
				u.limiters[k][b.Name] = bu
			}
			bu.reqs = append(bu.reqs, idx[j])
			bu.outcomes = append(bu.outcomes, events[j].Outcome)
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

// flowTables fills the per-flow and per-key tables and the starved
// findings of a scenario whose requests name flows.
func flowTables(in *Input) {
	ls, sr := in.limiters, in.Report
	if ls == nil || ls.keys == nil {
		return
	}
	reqs := &in.Evidence.Requests
	n := reqs.Len()
	// flows: (phase, flow) in first-send order
	type flowAcc struct {
		phase, name  string
		sent, passed int
		first, last  int64
	}
	var flows []*flowAcc
	byPF := map[[2]uint16]int32{}
	flowOf := make([]int32, n)
	phases := map[uint16]bool{}
	for i := 0; i < n; i++ {
		var f uint16
		if i < len(reqs.Flow) {
			f = reqs.Flow[i]
		}
		pf := [2]uint16{reqs.Phase[i], f}
		k, ok := byPF[pf]
		if !ok {
			k = int32(len(flows))
			byPF[pf] = k
			name := ""
			if int(f) < len(reqs.Flows) {
				name = reqs.Flows[f]
			}
			flows = append(flows, &flowAcc{phase: reqs.Phases[pf[0]], name: name, first: reqs.SentNs[i], last: reqs.SentNs[i]})
			phases[pf[0]] = true
		}
		flowOf[i] = k
		a := flows[k]
		a.sent++
		if c := reqs.Class[i]; c.Passed() || c == evidence.ClassNoResponse && in.received[i] {
			a.passed++
		}
		a.first, a.last = min(a.first, reqs.SentNs[i]), max(a.last, reqs.SentNs[i])
	}
	labels := make([]string, len(flows))
	for k, a := range flows {
		switch {
		case a.name == "":
			labels[k] = a.phase
		case len(phases) > 1:
			labels[k] = a.phase + "/" + a.name
		default:
			labels[k] = a.name
		}
	}

	// the last limiter of each target's path, and whether it is last for
	// all of its targets (then its buckets bound what passed)
	lastOf := make([]int, len(reqs.Targets))
	for t := range lastOf {
		lastOf[t] = -1
		for k, r := range ls.runs {
			if r.applies[t] {
				lastOf[t] = k
			}
		}
	}
	isLast := make([]bool, len(ls.runs))
	for k, r := range ls.runs {
		isLast[k] = r.report.Status == report.LimiterChecked
		for t, ok := range r.applies {
			if ok && lastOf[t] != k {
				isLast[k] = false
			}
		}
	}

	type flowBucket struct {
		k    int
		name string
	}
	usedBy := map[flowBucket][]int32{} // bucket -> flows (sorted, distinct)
	flowUses := make([]map[flowBucket]int, len(flows))
	for k := range flowUses {
		flowUses[k] = map[flowBucket]int{}
	}
	boundOf := map[flowBucket]report.ModelBound{}
	for k, r := range ls.runs {
		bounds := map[string]report.ModelBound{}
		for _, b := range r.report.Buckets {
			bounds[b.Bucket] = b
		}
		names := make([]string, 0, len(ls.keys.limiters[k]))
		for name := range ls.keys.limiters[k] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			bu := ls.keys.limiters[k][name]
			fb := flowBucket{k, name}
			boundOf[fb] = bounds[name]
			kr := report.KeyReport{Limiter: r.decl.Name, Bucket: name, RatePerSec: bu.use.PerSec, Burst: bu.use.Burst, Min: bounds[name].Min, Max: bounds[name].Max}
			first, last := int64(math.MaxInt64), int64(math.MinInt64)
			seen := map[int32]bool{}
			for j, i := range bu.reqs {
				f := flowOf[i]
				if !seen[f] {
					seen[f] = true
					usedBy[fb] = append(usedBy[fb], f)
				}
				flowUses[f][fb]++
				kr.Sent++
				switch bu.outcomes[j] {
				case model.Admitted, model.ShadowRejected:
					kr.Admitted++
				case model.Unknown:
					kr.Unknown++
				}
				first, last = min(first, reqs.SentNs[i]), max(last, reqs.SentNs[i])
			}
			slices.Sort(usedBy[fb])
			for _, f := range usedBy[fb] {
				kr.Flows = append(kr.Flows, labels[f])
			}
			kr.AdmittedPct = pct(kr.Admitted, kr.Sent)
			kr.ActiveNs, kr.OfferedPerSec, kr.AdmittedPerSec = spanRates(kr.Sent, kr.Admitted, first, last)
			sr.Keys = append(sr.Keys, kr)
			sr.Starved = append(sr.Starved, starvedAt(r.decl.Name, name, bu, flowOf, labels, reqs)...)
		}
	}

	// Of each flow's requests that reached their last limiter: those that
	// used no bucket there (not limited: the model admits them), and
	// whether one used several (then the buckets' bounds do not add up).
	free := make([]int, len(flows))
	unbounded := make([]bool, len(flows))
	for i := 0; i < n; i++ {
		f := flowOf[i]
		k := lastOf[reqs.Target[i]]
		if k < 0 || !isLast[k] {
			unbounded[f] = true
			continue
		}
		if !ls.reaches(k, i, reqs, in.received) {
			continue
		}
		switch used := ls.keys.uses[k]; {
		case used == nil || used[i] == 0:
			free[f]++
		case used[i] > 1:
			unbounded[f] = true
		}
	}
	for f, a := range flows {
		fr := report.FlowReport{Flow: labels[f], Phase: a.phase, Sent: a.sent, Admitted: a.passed, AdmittedPct: pct(a.passed, a.sent), Keys: []string{}}
		fr.ActiveNs, fr.OfferedPerSec, fr.AdmittedPerSec = spanRates(a.sent, a.passed, a.first, a.last)
		shared := map[int32]bool{}
		b := report.FlowBound{Min: free[f], Max: free[f]}
		for fb := range flowUses[f] {
			fr.Keys = append(fr.Keys, ls.runs[fb.k].decl.Name+": "+fb.name)
			if !isLast[fb.k] {
				continue
			}
			for _, g := range usedBy[fb] {
				if int(g) != f {
					shared[g] = true
				}
			}
			b.Min += boundOf[fb].Min
			b.Max += boundOf[fb].Max
		}
		sort.Strings(fr.Keys)
		for g := range shared {
			fr.SharedWith = append(fr.SharedWith, labels[g])
		}
		sort.Strings(fr.SharedWith)
		if !unbounded[f] && len(shared) == 0 {
			fr.Model = &b
		}
		sr.Flows = append(sr.Flows, fr)
	}
	// by phase (in send order), then by name: a table that does not depend
	// on which flow's request happened to be answered first
	phaseRank := map[string]int{}
	for _, a := range flows {
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
			a = &acc{first: reqs.SentNs[i], last: reqs.SentNs[i]}
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
		a.first, a.last = min(a.first, reqs.SentNs[i]), max(a.last, reqs.SentNs[i])
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
