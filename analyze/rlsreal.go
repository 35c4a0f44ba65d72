package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
)

// Evidence files of a scenario run on the real envoyproxy/ratelimit (written by the runner for lab.rls.kind real,
// or collected by hand into the same layout); the names are evidence's.
const (
	// RealRLSLog is the RLS log; its presence (or that of RealRLSParsedLog) switches the real-RLS reconciliation
	// (rls.real) on.
	RealRLSLog = evidence.RLSLogFile
	// RealRLSParsedLog is the parsed RLS log that `rlbench collect rls-log --out DIR` writes.
	RealRLSParsedLog = evidence.RLSParsedLogFile
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

// RLSReal is rls.real of the report: the reconciliation of a real envoyproxy/ratelimit on Redis with the
// clients, from rls/decisions.jsonl (decisions parsed from the RLS debug log), faults.jsonl, requests.jsonl and
// the RLS Prometheus snapshots rls/metrics.*.json.
type RLSReal struct {
	// TimeResolutionNs is the resolution assumed for decision times: 1e9 when every decision time is a whole
	// second (LOG_FORMAT=text, logrus RFC3339), else 1 (LOG_FORMAT=json, RFC3339Nano).
	TimeResolutionNs int64 `json:"time_resolution_ns"`
	// Windows lists each counter window (cache key) per Redis epoch.
	Windows []RealWindow `json:"windows"`
	// Descriptors compares, per descriptor, OK decisions (zombies excluded) with the admissions that went
	// through the RLS.
	Descriptors []RealDescriptor `json:"descriptors"`
	// Zombies counts OK/OVER_LIMIT decisions that reached no request: joined per call (analyze's rlsJoin: same
	// descriptor, made while that request was in flight, a code its outcome agrees with, one decision per request),
	// none could take them: calls that hung on a dead Redis and were executed after their clients had given up:
	// envoyproxy/ratelimit counts a hit when its Redis pipeline returns (src/redis/fixed_cache_impl.go DoLimit),
	// whether or not the Envoy that asked still waits (its ratelimit filter's timeout,
	// api/envoy/extensions/filters/http/ratelimit/v3/rate_limit.proto), and calls of other clients (the RLS's HTTP
	// /json endpoint). They consume the window but admit nobody, so they are excluded from OK counts.
	Zombies int `json:"zombies"`
	// JoinSkipped says why the decisions were not joined to requests ("" when they were); no decision is then
	// called late.
	JoinSkipped string `json:"join_skipped,omitempty"`
	// ZombieDecisions holds up to SampleIDs of them.
	ZombieDecisions []RealDecision `json:"zombie_decisions"`
	Errors          RealErrors     `json:"errors"`
	// Snapshots lists the RLS metrics snapshots found, in time order.
	Snapshots []RealSnapshot `json:"snapshots"`
	// Identities checks the RLS stat identity per RLS process and stat key.
	Identities []RealIdentity `json:"identities"`
}

// RealWindow is one Redis counter (cache key) within one Redis epoch. A start or restart of Redis (no
// persistence) begins a new epoch: counters restart at 1 in mid-window. An RLS restart does not: the counts live
// in Redis (envoyproxy/ratelimit src/redis/fixed_cache_impl.go: INCRBY and EXPIRE on the cache key).
type RealWindow struct {
	Key string `json:"key"`
	// Epoch is "" for the first Redis, else "after <fault name>".
	Epoch string `json:"epoch"`
	Limit int    `json:"limit"`
	// Decisions counts the decisions with a counter value (current).
	Decisions int `json:"decisions"`
	// OK and OverLimit exclude zombies; ZombieOK and ZombieOver count them.
	OK         int `json:"ok"`
	OverLimit  int `json:"over_limit"`
	ZombieOK   int `json:"zombie_ok"`
	ZombieOver int `json:"zombie_over"`
	// MaxCurrent is the highest counter value logged.
	MaxCurrent uint64 `json:"max_current"`
	// DuplicateCurrents are counter values logged more than once: within a window each INCRBY yields a unique N.
	DuplicateCurrents []uint64 `json:"duplicate_currents"`
	// Inconsistent counts decisions whose code disagrees with "OK iff current <= limit" (each decision against the
	// limit it was decided with; a shadow_mode hit over its limit is OK).
	Inconsistent int `json:"inconsistent"`
	// Limits lists the limits the window's decisions applied, in order, when more than one: the configuration
	// was reloaded within the window (Reloaded tells whether a config-load line of the RLS log lies between).
	Limits   []int `json:"limits,omitempty"`
	Reloaded *bool `json:"reloaded,omitempty"`
	// Shadow counts OK decisions of a shadow_mode rule over its limit (would have rejected).
	Shadow int `json:"shadow,omitempty"`
}

// RealDescriptor compares one descriptor's OK decisions with client admissions.
type RealDescriptor struct {
	// Descriptor is "<domain> <k>=<v>[,<k>=<v>...]".
	Descriptor string `json:"descriptor"`
	// OK excludes zombies; ZombieOK counts them.
	OK       int `json:"ok"`
	ZombieOK int `json:"zombie_ok"`
	// AdmittedMin..AdmittedMax are the admissions that needed an OK: admitted (plus no-response) minus the
	// proxies' ratelimit.failure_mode_allowed.
	AdmittedMin int `json:"admitted_min"`
	AdmittedMax int `json:"admitted_max"`
	// Uncarried: no request of the run carries the descriptor (every
	// request's descriptors are known and none is it): its decisions are
	// unmatched evidence (Engagement), not admissions of these requests.
	// The checks read it, the JSON form does not carry it.
	Uncarried bool `json:"-"`
}

// RealDecision is a decision flagged in the report.
type RealDecision struct {
	TimeNs  int64  `json:"time_ns"`
	Key     string `json:"key"`
	Current uint64 `json:"current"`
	Code    string `json:"code"`
	// Fault names the fault window the decision lies in, else the last one that ended before it; "" if none.
	Fault string `json:"fault"`
}

// RealErrors joins the RLS's Redis errors (ERROR decisions: `caught error during call`) to the Redis fault
// windows, with each line's time resolution (collect/rls.Place: a text-log line at second S may lie anywhere in
// [S, S+1s)).
type RealErrors struct {
	Total int `json:"total"`
	// Inside counts errors consistent with a Redis fault window.
	Inside int `json:"inside"`
	// AfterRecovery counts errors after a Redis window closed: the RLS's connection pool
	// (src/redis/driver_impl.go) keeps connections that died with the Redis, so the next calls fail fast with EOF.
	AfterRecovery int `json:"after_recovery"`
	// Unexplained counts errors before any Redis fault, or in a scenario without one.
	Unexplained int `json:"unexplained"`
	// Windows gives, per Redis fault window, the errors consistent with it (collect/rls.MatchErrorsToWindow).
	Windows []RealErrorWindow `json:"windows"`
}

// RealErrorWindow is one Redis fault window and its errors.
type RealErrorWindow struct {
	Name    string `json:"name"`
	BeginNs int64  `json:"begin_ns"`
	EndNs   int64  `json:"end_ns"`
	Errors  int    `json:"errors"`
}

// RealSnapshot is one RLS metrics snapshot file.
type RealSnapshot struct {
	Label   string `json:"label"`
	TimeNs  int64  `json:"time_ns"`
	Process int    `json:"process"`
	Stable  bool   `json:"stable"`
	Error   string `json:"error,omitempty"`
}

// RealIdentity is the RLS stat identity total_hits = within_limit + over_limit (+ hits of failed or hanging
// calls) of one stat key over one RLS process's life: its last good snapshot against zero, since the RLS's
// Prometheus counters are totals since the process started and restart at 0 with it (a reset that is
// recognised, not a failure).
type RealIdentity struct {
	Process int `json:"process"`
	// Snapshot is the label of the snapshot used.
	Snapshot    string  `json:"snapshot"`
	Key         string  `json:"key"`
	TotalHits   float64 `json:"total_hits"`
	WithinLimit float64 `json:"within_limit"`
	OverLimit   float64 `json:"over_limit"`
	// Gap is total_hits − within_limit − over_limit.
	Gap float64 `json:"gap"`
	// RedisErrors and Hanging are the process's redis_error calls and ShouldRateLimit calls without a
	// response time (total_requests − response_time count): the hits a gap may be made of.
	RedisErrors float64 `json:"redis_errors"`
	Hanging     float64 `json:"hanging"`
	// Status is pass, explained, fail or unknown.
	Status string `json:"status"`
	Detail string `json:"detail"`
}

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
				st, got = CheckUnknown, got+"; fail-open admissions unknown without proxy stats"
			}
			add(name, st, want, got)
		}
	}
	if e := rr.Errors; e.Total > 0 {
		add("rls real: Redis errors joined to Redis fault windows", passIf(e.Unexplained == 0), "0 unexplained",
			fmt.Sprintf("%d inside, %d after recovery, %d unexplained", e.Inside, e.AfterRecovery, e.Unexplained))
	}
	for _, id := range rr.Identities {
		st := CheckFail
		switch id.Status {
		case rls.IdentityPass, IdentityExplained:
			st = CheckPass
		case IdentityUnknown:
			st = CheckUnknown
		}
		add(fmt.Sprintf("rls real stats (process %d) %s: total_hits = within_limit + over_limit (+ errors, hanging)", id.Process, id.Key),
			st, "identity", id.Detail)
	}
	return res
}

// reconcileReal computes rls.real from the scenario's decisions, fault windows, client classes, the proxies'
// ratelimit.failure_mode_allowed (admissions without an RLS decision) and the per-call join of the decisions.
func reconcileReal(in *Input) *RLSReal {
	ev, fws, totals, failOpenN := in.Evidence, in.Report.FaultWindows, in.Report.Totals, failOpen(in.Report)
	rr := &RLSReal{Windows: []RealWindow{}, Descriptors: []RealDescriptor{}, ZombieDecisions: []RealDecision{},
		Errors: RealErrors{Windows: []RealErrorWindow{}}, Snapshots: []RealSnapshot{}, Identities: []RealIdentity{}}
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
		case ActionStop:
			if downSince < 0 {
				downSince = f.BeginNs
			}
		case ActionStart:
			at := f.BeginNs
			if downSince >= 0 {
				at = downSince
			}
			epochs = append(epochs, boundary{at, f.Name})
			downSince = -1
		case ActionRestart:
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
			rr.Descriptors = append(rr.Descriptors, RealDescriptor{Descriptor: desc, Uncarried: !join.carried(d)})
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
			if len(rr.ZombieDecisions) < SampleIDs {
				rr.ZombieDecisions = append(rr.ZombieDecisions, RealDecision{TimeNs: d.TimeNs, Key: d.Key, Current: d.Current,
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
			rr.Windows = append(rr.Windows, RealWindow{Key: k.key, Epoch: k.epoch, Limit: int(d.Limit), DuplicateCurrents: []uint64{}})
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
	var redisWins []FaultWindow
	for _, w := range fws {
		if w.Target == "redis" {
			redisWins = append(redisWins, w)
			in, _ := rls.MatchErrorsToWindow(errs, w.BeginNs, w.EndNs)
			rr.Errors.Windows = append(rr.Errors.Windows, RealErrorWindow{Name: w.Name, BeginNs: w.BeginNs, EndNs: w.EndNs, Errors: in})
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
func realIdentities(files []evidence.RLSMetrics, pendingLookups int) ([]RealSnapshot, []RealIdentity) {
	snaps := []RealSnapshot{}
	ids := []RealIdentity{}
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
		snaps = append(snaps, RealSnapshot{Label: m.Label, TimeNs: m.TimeNs, Process: m.Process, Stable: m.Stable, Error: m.Error})
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
			id := RealIdentity{Process: p, Snapshot: m.Label, Key: r.Key, TotalHits: r.After.TotalHits, WithinLimit: r.After.WithinLimit,
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
