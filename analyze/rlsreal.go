package analyze

import (
	"fmt"
	"sort"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
)

// Identity statuses of RealIdentity.Status, beyond collect/rls's pass, fail and reset.
const (
	// IdentityExplained: total_hits exceeds within_limit + over_limit by no more than the calls that failed on
	// Redis (redis_error) plus the calls still hanging (total_requests − response_time count), as
	// envoyproxy/ratelimit counts total_hits before its Redis call (limiter/base_limiter.go).
	IdentityExplained = "explained"
	// IdentityUnknown: the snapshot cannot decide (a counter went down inside one RLS process, or a failing
	// snapshot was not stable).
	IdentityUnknown = "unknown"
)

// realRLSSection reconciles a real RLS's logs (ScenarioReport.RLS.Real),
// when the scenario has them.
var realRLSSection = section{name: "real rls", needs: []string{"receipts", "totals", "stats", "faults", "rls"}, compute: func(in *Input) {
	sr := in.Report
	if ev := in.Evidence; ev.RLSLog || ev.RLSParsedLog {
		if sr.RLS == nil {
			sr.RLS = &report.RLSCheck{ByCode: map[string]int{}, Windows: []report.RLSWindow{}}
		}
		sr.RLS.Real = reconcileReal(in)
	}
}}

// reconcileReal computes rls.real from the scenario's decisions, fault windows, client classes, the proxies'
// ratelimit.failure_mode_allowed (admissions without an RLS decision) and the per-call join of the decisions.
func reconcileReal(in *Input) *report.RLSReal {
	ev, fws, totals, failOpenN := in.Evidence, in.Report.FaultWindows, in.Report.Totals, failOpen(in.Report)
	rr := &report.RLSReal{Windows: []report.RealWindow{}, Descriptors: []report.RealDescriptor{}, ZombieDecisions: []report.RealDecision{},
		Errors: report.RealErrors{Windows: []report.RealErrorWindow{}}, Snapshots: []report.RealSnapshot{}, Identities: []report.RealIdentity{}}
	rr.TimeResolutionNs = decisionResolution(ev.Decisions)
	join := in.limiters.join
	if join != nil {
		rr.JoinSkipped = join.skipped
	}
	t := &realTally{in: in, rr: rr, join: join, epochs: redisEpochs(ev.Faults), widx: map[realWindowKey]int{},
		windowLast: map[realWindowKey]int64{}, seen: map[realWindowKey]map[uint64]int{}, didx: map[string]int{}}
	for di, d := range ev.Decisions {
		t.decision(di, d)
	}
	sortRealWindows(rr.Windows)

	// Admissions that needed an OK decision.
	admitted, noResp := totals.Passed, totals.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)-totals.Passed
	for i := range rr.Descriptors {
		rr.Descriptors[i].AdmittedMin = max(0, admitted-int(failOpenN))
		rr.Descriptors[i].AdmittedMax = max(0, admitted+noResp-int(failOpenN))
	}
	t.perValueAdmissions(failOpenN)
	sort.Slice(rr.Descriptors, func(i, j int) bool { return rr.Descriptors[i].Descriptor < rr.Descriptors[j].Descriptor })

	realErrors(&rr.Errors, t.errs, fws)
	rr.Snapshots, rr.Identities = realIdentities(ev.RLSMetrics, ev.RLSPendingLookups)
	return rr
}

// redisEpoch is where one Redis epoch begins (unix ns) and the fault that began it.
type redisEpoch struct {
	at   int64
	name string
}

// redisEpochs returns the Redis epochs of the faults, sorted. Redis has no persistence, so its counters restart
// with the process. No decision with a counter can happen while Redis is down, so the new epoch begins where the
// Redis went down: at the begin of the stop that a start ends (or of the start itself), or at the begin of a
// restart. Steps run one after the other, so nothing new is sent during the action. Text logs (1 s) can still
// misplace a decision logged in the very second of the fault.
func redisEpochs(fs []evidence.Fault) []redisEpoch {
	var epochs []redisEpoch
	faults := append([]evidence.Fault(nil), fs...)
	sort.SliceStable(faults, func(i, j int) bool { return faults[i].BeginNs < faults[j].BeginNs })
	downSince := int64(-1)
	for _, f := range faults {
		if f.Target != "redis" {
			continue
		}
		switch f.Action {
		case evidence.ActionStop:
			if downSince < 0 {
				downSince = f.BeginNs
			}
		case evidence.ActionStart:
			at := f.BeginNs
			if downSince >= 0 {
				at = downSince
			}
			epochs = append(epochs, redisEpoch{at, f.Name})
			downSince = -1
		case evidence.ActionRestart:
			epochs = append(epochs, redisEpoch{f.BeginNs, f.Name})
			downSince = -1
		}
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i].at < epochs[j].at })
	return epochs
}

// redisEpochOf names the Redis epoch at t (unix ns): "" before the first, "after <fault>" after one.
func redisEpochOf(epochs []redisEpoch, t int64) string {
	i := sort.Search(len(epochs), func(i int) bool { return epochs[i].at > t })
	if i == 0 {
		return ""
	}
	return "after " + epochs[i-1].name
}

// faultAt names the fault window that holds t (unix ns), else the closed one that ended last before t ("": none).
func faultAt(fws []report.FaultWindow, t int64) string {
	name, at := "", int64(0)
	for _, w := range fws {
		if t >= w.BeginNs && t <= w.EndNs {
			return w.Name
		}
		if !w.Open && w.EndNs < t && w.EndNs >= at {
			name, at = w.Name, w.EndNs
		}
	}
	return name
}

// realWindowKey names one RLS counter window: its cache key in one Redis epoch.
type realWindowKey struct{ key, epoch string }

// realTally folds the RLS log's decisions, one at a time, into rls.real's windows, descriptors and zombie
// decisions, and collects its error lines.
type realTally struct {
	in     *Input
	rr     *report.RLSReal
	join   *rlsJoin
	epochs []redisEpoch
	// widx indexes rr.Windows; windowLast is each window's last decision time (unix ns); seen counts each
	// window's decisions per current value; didx indexes rr.Descriptors by descriptorName.
	widx       map[realWindowKey]int
	windowLast map[realWindowKey]int64
	seen       map[realWindowKey]map[uint64]int
	didx       map[string]int
	errs       []rls.ErrorLine
	// dkeys are rr.Descriptors' cache key prefixes (descriptor.CacheKeyPrefix with their domain), in order;
	// dfirst their first decisions.
	dkeys  []string
	dfirst []evidence.Decision
}

// decision folds in decision di (d).
func (t *realTally) decision(di int, d evidence.Decision) {
	rr := t.rr
	desc := descriptorName(d)
	i, ok := t.didx[desc]
	if !ok && len(d.Descriptor) > 0 {
		rr.Descriptors = append(rr.Descriptors, report.RealDescriptor{Descriptor: desc, Uncarried: !t.join.carried(d)})
		t.dkeys = append(t.dkeys, descriptor.CacheKeyPrefix(d.Domain, d.Descriptor))
		t.dfirst = append(t.dfirst, d)
		i = len(rr.Descriptors) - 1
		t.didx[desc] = i
	}
	if d.Code == "ERROR" {
		t.errs = append(t.errs, rls.ErrorLine{TimeNs: d.TimeNs, TimeResolutionNs: rr.TimeResolutionNs, Kind: rls.ErrorKindCall,
			Class: rls.ClassRedis, Message: d.Error})
		return
	}
	if d.Code != "OK" && d.Code != "OVER_LIMIT" {
		return
	}
	zombie := t.join.isZombie(di)
	if zombie {
		rr.Zombies++
		if len(rr.ZombieDecisions) < report.SampleIDs {
			rr.ZombieDecisions = append(rr.ZombieDecisions, report.RealDecision{TimeNs: d.TimeNs, Key: d.Key, Current: d.Current,
				Code: d.Code, Fault: faultAt(t.in.Report.FaultWindows, d.TimeNs)})
		}
	}
	if d.Code == "OK" && len(d.Descriptor) > 0 {
		if zombie {
			rr.Descriptors[i].ZombieOK++
		} else {
			rr.Descriptors[i].OK++
		}
	}
	if d.Key == "" || d.Current == 0 {
		return // no limit applied (no counter), or a local-cache hit (no INCRBY)
	}
	t.window(d, zombie)
}

// window folds an OK or OVER_LIMIT decision d with a counter into its window.
func (t *realTally) window(d evidence.Decision, zombie bool) {
	k := realWindowKey{d.Key, redisEpochOf(t.epochs, d.TimeNs)}
	j, ok := t.widx[k]
	if !ok {
		t.rr.Windows = append(t.rr.Windows, report.RealWindow{Key: k.key, Epoch: k.epoch, Limit: int(d.Limit), DuplicateCurrents: []uint64{}})
		j = len(t.rr.Windows) - 1
		t.widx[k] = j
		t.seen[k] = map[uint64]int{}
	}
	w := &t.rr.Windows[j]
	w.Decisions++
	w.MaxCurrent = max(w.MaxCurrent, d.Current)
	t.limitChange(w, k, d)
	t.windowLast[k] = d.TimeNs
	if t.seen[k][d.Current]++; t.seen[k][d.Current] == 2 {
		w.DuplicateCurrents = append(w.DuplicateCurrents, d.Current)
	}
	switch {
	case d.Code == "OK" && zombie:
		w.ZombieOK++
	case d.Code == "OK":
		w.OK++
	case zombie:
		w.ZombieOver++
	default:
		w.OverLimit++
	}
	limit := uint64(w.Limit)
	if d.Limit > 0 {
		limit = uint64(d.Limit) // the limit this decision was made with (a reload changes it)
	}
	shadow := d.Code == "OK" && limit > 0 && d.Current > limit && (d.Shadow || t.in.limiters.shadowRule(&d))
	if shadow {
		w.Shadow++
	}
	if limit > 0 && (d.Code == "OK") != (d.Current <= limit) && !shadow {
		w.Inconsistent++
	}
}

// limitChange records in window w (key k) a decision d made with another limit than the window's last, and
// whether a configuration reload explains every change (RealWindow.Limits, Reloaded).
func (t *realTally) limitChange(w *report.RealWindow, k realWindowKey, d evidence.Decision) {
	if d.Limit <= 0 || len(w.Limits) == 0 && int(d.Limit) == w.Limit || len(w.Limits) > 0 && w.Limits[len(w.Limits)-1] == int(d.Limit) {
		return
	}
	if len(w.Limits) == 0 {
		w.Limits = []int{w.Limit}
	}
	w.Limits = append(w.Limits, int(d.Limit))
	reloaded := w.Reloaded == nil || *w.Reloaded
	reloaded = reloaded && configLoadBetween(t.in.Evidence.RLSConfigLoads, t.windowLast[k], d.TimeNs+t.rr.TimeResolutionNs-1)
	w.Reloaded = &reloaded
}

// sortRealWindows sorts windows by key and epoch, and each one's duplicate currents.
func sortRealWindows(ws []report.RealWindow) {
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].Key != ws[j].Key {
			return ws[i].Key < ws[j].Key
		}
		return ws[i].Epoch < ws[j].Epoch
	})
	for i := range ws {
		sort.Slice(ws[i].DuplicateCurrents, func(a, b int) bool {
			return ws[i].DuplicateCurrents[a] < ws[i].DuplicateCurrents[b]
		})
	}
}

// realErrors places the RLS log's error lines errs against the Redis fault windows among fws into out.
func realErrors(out *report.RealErrors, errs []rls.ErrorLine, fws []report.FaultWindow) {
	out.Total = len(errs)
	var redisWins []report.FaultWindow
	for _, w := range fws {
		if w.Target == "redis" {
			redisWins = append(redisWins, w)
			in, _ := rls.MatchErrorsToWindow(errs, w.BeginNs, w.EndNs)
			out.Windows = append(out.Windows, report.RealErrorWindow{Name: w.Name, BeginNs: w.BeginNs, EndNs: w.EndNs, Errors: in})
		}
	}
	for _, e := range errs {
		inside, after := false, false
		for _, w := range redisWins {
			switch rls.Place(e.TimeNs, e.TimeResolutionNs, w.BeginNs, w.EndNs) {
			case rls.Inside, rls.Straddles:
				inside = true
			case rls.After:
				after = true
			}
		}
		switch {
		case inside:
			out.Inside++
		case after:
			out.AfterRecovery++
		default:
			out.Unexplained++
		}
	}
}

// configLoadBetween reports whether a successful configuration load was logged in [from, to] (unix ns).
func configLoadBetween(loads []evidence.RLSConfigLoad, from, to int64) bool {
	for _, l := range loads {
		if l.OK && !l.Initial && l.TimeNs >= from && l.TimeNs <= to {
			return true
		}
	}
	return false
}

// decisionResolution infers the log's time resolution from the decision times (see RLSReal.TimeResolutionNs).
func decisionResolution(ds []evidence.Decision) int64 {
	if len(ds) == 0 {
		return 1
	}
	for _, d := range ds {
		if d.TimeNs%rls.TextResolutionNs != 0 {
			return rls.JSONResolutionNs
		}
	}
	return rls.TextResolutionNs
}

func descriptorName(d evidence.Decision) string {
	parts := make([]string, 0, len(d.Descriptor))
	for _, e := range d.Descriptor {
		parts = append(parts, e.Key+"="+e.Value)
	}
	return strings.TrimSpace(d.Domain + " " + strings.Join(parts, ","))
}

// intervals is a sorted union of closed [begin, end] intervals, unix ns.
type intervals [][2]int64

// overlaps reports whether [lo, hi] meets any interval.
func (iv intervals) overlaps(lo, hi int64) bool {
	i := sort.Search(len(iv), func(i int) bool { return iv[i][1] >= lo })
	return i < len(iv) && iv[i][0] <= hi
}

// realIdentities checks the stat identity per RLS process on its last good snapshot of ms (the scenario's
// rls/metrics.*.json). Snapshots without a process number are split into processes where a counter goes down.
// pendingLookups are the RLS log's lookups that never got an answer (-1: unknown): calls that hung, over gRPC or
// the HTTP /json endpoint; the gRPC ones show as total_requests − response_time count, the /json ones only there
// (envoyproxy/ratelimit counts ShouldRateLimit_total_requests in its gRPC interceptor, not for /json calls, whose
// hits are in total_hits all the same).
func realIdentities(files []evidence.RLSMetrics, pendingLookups int) ([]report.RealSnapshot, []report.RealIdentity) {
	snaps := []report.RealSnapshot{}
	ids := []report.RealIdentity{}
	ms := sortedRLSMetrics(files)
	for _, m := range ms {
		snaps = append(snaps, report.RealSnapshot{Label: m.Label, TimeNs: m.TimeNs, Process: m.Process, Stable: m.Stable, Error: m.Error})
	}
	unknownWithin := assignRLSProcesses(ms)
	last := map[int]*evidence.RLSMetrics{}
	var order []int
	for i := range ms {
		m := &ms[i]
		if m.Error != "" || m.Counters == nil {
			continue
		}
		if _, ok := last[m.Process]; !ok {
			order = append(order, m.Process)
		}
		last[m.Process] = m
	}
	for _, p := range order {
		ids = append(ids, processIdentities(p, last[p], unknownWithin[p], pendingLookups)...)
	}
	return snaps, ids
}

// sortedRLSMetrics returns a copy of the snapshots files in time order, "before" first and "after" last among
// equal times.
func sortedRLSMetrics(files []evidence.RLSMetrics) []evidence.RLSMetrics {
	ms := append([]evidence.RLSMetrics(nil), files...)
	rank := func(m evidence.RLSMetrics) int {
		switch m.Label {
		case "before":
			return 0
		case "after":
			return 2
		}
		return 1
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].TimeNs != ms[j].TimeNs {
			return ms[i].TimeNs < ms[j].TimeNs
		}
		return rank(ms[i]) < rank(ms[j])
	})
	return ms
}

// assignRLSProcesses numbers the processes of the good snapshots ms (in time order) that have none: a new
// process where any counter went down. It returns, per process number, why its identity is unknown when
// counters went down within one numbered process.
func assignRLSProcesses(ms []evidence.RLSMetrics) map[int]string {
	proc := 0
	var prev *evidence.RLSMetrics
	unknownWithin := map[int]string{}
	for i := range ms {
		m := &ms[i]
		if m.Error != "" || m.Counters == nil {
			continue
		}
		reset := false
		if prev != nil {
			for _, r := range rls.CheckIdentities(prev.Counters, m.Counters) {
				if r.Status == rls.IdentityReset {
					reset = true
				}
			}
		}
		switch {
		case m.Process != 0:
			if prev != nil && prev.Process == m.Process && reset {
				unknownWithin[m.Process] = fmt.Sprintf("counters went down between %s and %s within one RLS process", prev.Label, m.Label)
			}
			proc = m.Process
		case prev == nil || reset:
			proc++
			m.Process = proc
		default:
			m.Process = proc
		}
		prev = m
	}
	return unknownWithin
}

// processIdentities checks the stat identities of RLS process p on its last good snapshot m; unknownWithin
// ("": none) makes them unknown. Gaps that the hits of failed calls (redis_error) and of hanging calls explain
// are explained, not failed.
func processIdentities(p int, m *evidence.RLSMetrics, unknownWithin string, pendingLookups int) []report.RealIdentity {
	var ids []report.RealIdentity
	var hanging float64
	if m.Prometheus != nil {
		hanging = m.Prometheus.TotalRequests["ShouldRateLimit"] - float64(m.Prometheus.ResponseTime["ShouldRateLimit"].Count)
	}
	results := rls.CheckIdentities(nil, m.Counters)
	var gaps float64
	for _, r := range results {
		gaps += max(r.Gap, 0)
	}
	explainable := m.Counters.RedisErrors + max(hanging, 0)
	jsonHanging := 0.0
	if pendingLookups > 0 {
		jsonHanging = max(float64(pendingLookups)-max(hanging, 0), 0)
		explainable += jsonHanging
	}
	for _, r := range results {
		id := report.RealIdentity{Process: p, Snapshot: m.Label, Key: r.Key, TotalHits: r.After.TotalHits, WithinLimit: r.After.WithinLimit,
			OverLimit: r.After.OverLimit, Gap: r.Gap, RedisErrors: m.Counters.RedisErrors, Hanging: hanging}
		switch {
		case unknownWithin != "":
			id.Status, id.Detail = IdentityUnknown, unknownWithin
		case r.Status == rls.IdentityInexact:
			id.Status, id.Detail = IdentityUnknown, r.Detail
		case r.Status == rls.IdentityPass:
			id.Status, id.Detail = rls.IdentityPass, r.Detail
		case r.Gap > 0 && gaps <= explainable && r.Delta.ShadowMode <= r.Delta.OverLimit &&
			r.Delta.OverLimitWithLocalCache <= r.Delta.OverLimit:
			id.Status = IdentityExplained
			id.Detail = fmt.Sprintf("total_hits %g = within_limit %g + over_limit %g + %g hits of failed or hanging calls (redis_error %g, hanging %g)",
				r.After.TotalHits, r.After.WithinLimit, r.After.OverLimit, r.Gap, m.Counters.RedisErrors, hanging)
			if jsonHanging > 0 {
				id.Detail += fmt.Sprintf(", %g more hung in the log (/json calls)", jsonHanging)
			}
		case !m.Stable:
			id.Status, id.Detail = IdentityUnknown, r.Detail+" (snapshot "+m.Label+" was not stable: counters still moving)"
		default:
			id.Status, id.Detail = rls.IdentityFail, r.Detail
		}
		ids = append(ids, id)
	}
	return ids
}

// perValueAdmissions narrows each descriptor's admissions to the requests that carried it when the descriptors are
// per-key values (Envoy's request_headers action: each value is its own envoyproxy/ratelimit counter, cache key
// <domain>_<key>_<value>_..., src/limiter/cache_key.go): every request
// that called the RLS carries exactly one descriptor, known from its headers, and there are several descriptors.
// Else it leaves the run's admissions (a request with several descriptors is admitted only when all are OK).
// Admissions of descriptor v: Passed (a backend response, or no response with a receipt) of v's requests, at most
// plus v's requests without response nor receipt; minus the proxies' fail-open admissions (failOpenN, not
// attributable to one value: at least the admissions minus all of them needed an OK).
func (t *realTally) perValueAdmissions(failOpenN int64) {
	j, rr, in := t.join, t.rr, t.in
	if j == nil || len(rr.Descriptors) < 2 || len(in.received) != in.Evidence.Requests.Len() {
		return
	}
	idx := make(map[string]int, len(t.dkeys))
	for i, k := range t.dkeys {
		if _, dup := idx[k]; dup || k == "" {
			return
		}
		idx[k] = i
	}
	admitted, noResp := make([]int, len(rr.Descriptors)), make([]int, len(rr.Descriptors))
	reqs := &in.Evidence.Requests
	for i := 0; i < reqs.Len(); i++ {
		units := j.unitKey[j.unitStart[i]:j.unitStart[i+1]]
		if len(units) == 0 {
			continue // no RLS call
		}
		if units[0] == "" {
			t.summedValues() // an unknown descriptor
			return
		}
		if len(units) > 1 {
			return // several descriptors
		}
		k, ok := idx[units[0]]
		if !ok {
			continue // a descriptor no decision names: its requests got none (judged by the engagement checks)
		}
		switch c := reqs.Class[i]; {
		case c.Passed() || c == evidence.ClassNoResponse && in.received[i]:
			admitted[k]++
		case c == evidence.ClassNoResponse:
			noResp[k]++
		}
	}
	for i := range rr.Descriptors {
		d := &rr.Descriptors[i]
		d.AdmittedMin = max(0, admitted[i]-int(failOpenN))
		d.AdmittedMax = max(0, admitted[i]+noResp[i]-int(failOpenN))
		d.PerValue = true
	}
}

// summedValues marks the descriptors Summed when they share their domain and keys and differ only in values (a
// request_headers action whose requests' headers are unknown: each value its own counter).
func (t *realTally) summedValues() {
	ds := t.dfirst
	keys := func(d evidence.Decision) string {
		ks := make([]string, 0, len(d.Descriptor))
		for _, e := range d.Descriptor {
			ks = append(ks, e.Key)
		}
		return strings.TrimSpace(d.Domain + " " + strings.Join(ks, ","))
	}
	group := keys(ds[0])
	for _, d := range ds[1:] {
		if d.Domain != ds[0].Domain || keys(d) != group {
			return
		}
	}
	for i := range t.rr.Descriptors {
		t.rr.Descriptors[i].Summed = group
	}
}
