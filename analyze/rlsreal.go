package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
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

// checkRealRLS judges rls.real of a scenario that ran on the real RLS (RealRLSLog or RealRLSParsedLog present).
func checkRealRLS(in *Input) (res Result) {
	sr := in.Report
	if sr.RLS == nil || sr.RLS.Real == nil {
		return res
	}
	add := res.add
	rr := sr.RLS.Real

	for _, w := range rr.Windows {
		name := "rls real " + w.Key
		if w.Epoch != "" {
			name += " " + w.Epoch
		}
		got := fmt.Sprintf("%d decisions, max current %d", w.Decisions, w.MaxCurrent)
		if len(w.DuplicateCurrents) > 0 {
			got = fmt.Sprintf("%d decisions, duplicated current %v", w.Decisions, w.DuplicateCurrents)
		}
		add(name+": current values unique", passIf(len(w.DuplicateCurrents) == 0), "unique", got)
		if w.Limit > 0 {
			add(name+": OK iff current <= limit", passIf(w.Inconsistent == 0), "0 inconsistent",
				strconv.Itoa(w.Inconsistent))
		}
		if w.Reloaded != nil {
			add(name+": limit change explained by a config reload", passIf(*w.Reloaded), "a config-load line between",
				fmt.Sprintf("limits %v", w.Limits))
		}
	}
	if globalInLoop(in) {
		for _, d := range rr.Descriptors {
			if d.Uncarried && d.OK == 0 {
				continue // another client's descriptor: counted as unmatched decisions by the engagement checks
			}
			name := "rls real " + d.Descriptor + ": OK decisions (zombies excluded) = admissions through the RLS"
			want := evidence.Range{Min: d.AdmittedMin, Max: d.AdmittedMax}.String()
			st := passIf(d.OK >= d.AdmittedMin && d.OK <= d.AdmittedMax)
			if len(rr.Descriptors) > 1 {
				// A request with several descriptors is admitted only when all are OK; an OK of one descriptor
				// may belong to a request another one rejected.
				want = ">= " + strconv.Itoa(d.AdmittedMin)
				st = passIf(d.OK >= d.AdmittedMin)
			}
			got := strconv.Itoa(d.OK)
			if d.ZombieOK > 0 {
				got += fmt.Sprintf(" (+%d zombie)", d.ZombieOK)
			}
			joined := sr.RLSFailures != nil && sr.RLSFailures.FailOpen == 0 && rr.JoinSkipped == "" && in.Evidence.HasDecisions
			if len(sr.Stats) == 0 && rr.Errors.Total > 0 && sr.Totals.Passed > 0 && !joined {
				st, got = report.CheckUnknown, got+"; fail-open admissions unknown without proxy stats"
			}
			add(name, st, want, got)
		}
	}
	if e := rr.Errors; e.Total > 0 {
		add("rls real: Redis errors joined to Redis fault windows", passIf(e.Unexplained == 0), "0 unexplained",
			fmt.Sprintf("%d inside, %d after recovery, %d unexplained", e.Inside, e.AfterRecovery, e.Unexplained))
	}
	for _, id := range rr.Identities {
		st := report.CheckFail
		switch id.Status {
		case rls.IdentityPass, IdentityExplained:
			st = report.CheckPass
		case IdentityUnknown:
			st = report.CheckUnknown
		}
		add(fmt.Sprintf("rls real stats (process %d) %s: total_hits = within_limit + over_limit (+ errors, hanging)", id.Process, id.Key),
			st, "identity", id.Detail)
	}
	return res
}

// reconcileReal computes rls.real from the scenario's decisions, fault windows, client classes, the proxies'
// ratelimit.failure_mode_allowed (admissions without an RLS decision) and the per-call join of the decisions.
func reconcileReal(in *Input) *report.RLSReal {
	ev, fws, totals, failOpenN := in.Evidence, in.Report.FaultWindows, in.Report.Totals, failOpen(in.Report)
	rr := &report.RLSReal{Windows: []report.RealWindow{}, Descriptors: []report.RealDescriptor{}, ZombieDecisions: []report.RealDecision{},
		Errors: report.RealErrors{Windows: []report.RealErrorWindow{}}, Snapshots: []report.RealSnapshot{}, Identities: []report.RealIdentity{}}
	rr.TimeResolutionNs = decisionResolution(ev.Decisions)
	res := rr.TimeResolutionNs

	// Redis epochs. Redis has no persistence, so its counters restart with the process. No decision with a
	// counter can happen while Redis is down, so the new epoch begins where the Redis went down: at the begin of
	// the stop that a start ends (or of the start itself), or at the begin of a restart. Steps run one after the
	// other, so nothing new is sent during the action. Text logs (1 s) can still misplace a decision logged in
	// the very second of the fault.
	type boundary struct {
		at   int64
		name string
	}
	var epochs []boundary
	faults := append([]evidence.Fault(nil), ev.Faults...)
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
			epochs = append(epochs, boundary{at, f.Name})
			downSince = -1
		case evidence.ActionRestart:
			epochs = append(epochs, boundary{f.BeginNs, f.Name})
			downSince = -1
		}
	}
	sort.Slice(epochs, func(i, j int) bool { return epochs[i].at < epochs[j].at })
	epochOf := func(t int64) string {
		i := sort.Search(len(epochs), func(i int) bool { return epochs[i].at > t })
		if i == 0 {
			return ""
		}
		return "after " + epochs[i-1].name
	}
	faultOf := func(t int64) string {
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
	join := in.limiters.join
	if join != nil {
		rr.JoinSkipped = join.skipped
	}

	type wkey struct{ key, epoch string }
	widx := map[wkey]int{}
	windowLast := map[wkey]int64{}
	seen := map[wkey]map[uint64]int{}
	didx := map[string]int{}
	var errs []rls.ErrorLine
	for di, d := range ev.Decisions {
		desc := descriptorName(d)
		i, ok := didx[desc]
		if !ok && len(d.Descriptor) > 0 {
			rr.Descriptors = append(rr.Descriptors, report.RealDescriptor{Descriptor: desc, Uncarried: !join.carried(d)})
			i = len(rr.Descriptors) - 1
			didx[desc] = i
		}
		if d.Code == "ERROR" {
			errs = append(errs, rls.ErrorLine{TimeNs: d.TimeNs, TimeResolutionNs: res, Kind: rls.ErrorKindCall,
				Class: rls.ClassRedis, Message: d.Error})
			continue
		}
		if d.Code != "OK" && d.Code != "OVER_LIMIT" {
			continue
		}
		zombie := join.isZombie(di)
		if zombie {
			rr.Zombies++
			if len(rr.ZombieDecisions) < report.SampleIDs {
				rr.ZombieDecisions = append(rr.ZombieDecisions, report.RealDecision{TimeNs: d.TimeNs, Key: d.Key, Current: d.Current,
					Code: d.Code, Fault: faultOf(d.TimeNs)})
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
			continue // no limit applied (no counter), or a local-cache hit (no INCRBY)
		}
		k := wkey{d.Key, epochOf(d.TimeNs)}
		j, ok := widx[k]
		if !ok {
			rr.Windows = append(rr.Windows, report.RealWindow{Key: k.key, Epoch: k.epoch, Limit: int(d.Limit), DuplicateCurrents: []uint64{}})
			j = len(rr.Windows) - 1
			widx[k] = j
			seen[k] = map[uint64]int{}
		}
		w := &rr.Windows[j]
		w.Decisions++
		w.MaxCurrent = max(w.MaxCurrent, d.Current)
		if d.Limit > 0 && (len(w.Limits) == 0 && int(d.Limit) != w.Limit || len(w.Limits) > 0 && w.Limits[len(w.Limits)-1] != int(d.Limit)) {
			if len(w.Limits) == 0 {
				w.Limits = []int{w.Limit}
			}
			w.Limits = append(w.Limits, int(d.Limit))
			reloaded := w.Reloaded == nil || *w.Reloaded
			reloaded = reloaded && configLoadBetween(ev.RLSConfigLoads, windowLast[k], d.TimeNs+res-1)
			w.Reloaded = &reloaded
		}
		windowLast[k] = d.TimeNs
		if seen[k][d.Current]++; seen[k][d.Current] == 2 {
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
		shadow := d.Code == "OK" && limit > 0 && d.Current > limit && (d.Shadow || in.limiters.shadowRule(&d))
		if shadow {
			w.Shadow++
		}
		if limit > 0 && (d.Code == "OK") != (d.Current <= limit) && !shadow {
			w.Inconsistent++
		}
	}
	sort.Slice(rr.Windows, func(i, j int) bool {
		if rr.Windows[i].Key != rr.Windows[j].Key {
			return rr.Windows[i].Key < rr.Windows[j].Key
		}
		return rr.Windows[i].Epoch < rr.Windows[j].Epoch
	})
	for i := range rr.Windows {
		sort.Slice(rr.Windows[i].DuplicateCurrents, func(a, b int) bool {
			return rr.Windows[i].DuplicateCurrents[a] < rr.Windows[i].DuplicateCurrents[b]
		})
	}

	// Admissions that needed an OK decision.
	admitted, noResp := totals.Passed, totals.PassedMax(in.Report.Receipts.IndeterminateWithReceipt)-totals.Passed
	for i := range rr.Descriptors {
		rr.Descriptors[i].AdmittedMin = max(0, admitted-int(failOpenN))
		rr.Descriptors[i].AdmittedMax = max(0, admitted+noResp-int(failOpenN))
	}
	sort.Slice(rr.Descriptors, func(i, j int) bool { return rr.Descriptors[i].Descriptor < rr.Descriptors[j].Descriptor })

	// Errors against the Redis fault windows.
	rr.Errors.Total = len(errs)
	var redisWins []report.FaultWindow
	for _, w := range fws {
		if w.Target == "redis" {
			redisWins = append(redisWins, w)
			in, _ := rls.MatchErrorsToWindow(errs, w.BeginNs, w.EndNs)
			rr.Errors.Windows = append(rr.Errors.Windows, report.RealErrorWindow{Name: w.Name, BeginNs: w.BeginNs, EndNs: w.EndNs, Errors: in})
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
			rr.Errors.Inside++
		case after:
			rr.Errors.AfterRecovery++
		default:
			rr.Errors.Unexplained++
		}
	}

	rr.Snapshots, rr.Identities = realIdentities(ev.RLSMetrics, ev.RLSPendingLookups)
	return rr
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
	for _, m := range ms {
		snaps = append(snaps, report.RealSnapshot{Label: m.Label, TimeNs: m.TimeNs, Process: m.Process, Stable: m.Stable, Error: m.Error})
	}
	// Assign process numbers where absent: a new process where any counter went down.
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
		m := last[p]
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
			case unknownWithin[p] != "":
				id.Status, id.Detail = IdentityUnknown, unknownWithin[p]
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
	}
	return snaps, ids
}
