package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	collectnginx "github.com/rlbench/rlbench/collect/nginx"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/model"
)

// nginxJoin is the join of the nginx access logs with the requests.
type nginxJoin struct {
	report *report.NginxReport
	// tries[i] is the number of server tries the records of request i
	// logged (-1: no record), for the amplification split.
	tries []int
	// producer[i] is the producer of request i's last record ("" without one).
	producer []string
	// rejected[i] is true when a record says limit_req REJECTED request i.
	rejected []bool
	// proxies are the names of the nginx proxies with an access log.
	proxies map[string]bool
	// unlogged are the nginx proxies without one (evidence.NginxEvidence.File
	// ""), by name: the requests each answered (a response code), which its
	// log would have judged. Lost evidence: the checks it decides are
	// unknown for them, never failed.
	unlogged map[string]int
	// why says, per unlogged proxy, why it has no log (unloggedWhy).
	why map[string]string
}

// unloggedWhy says why nginx proxy ng has no access log on file:
// "nginx/nginx-a/: no access.jsonl nor access.log", or what lost it
// (evidence.NginxEvidence.Lost).
func unloggedWhy(ng *evidence.NginxEvidence) string {
	if ng.Lost != "" {
		return "lost: " + ng.Lost
	}
	return fmt.Sprintf("%s: no %s nor %s", evidence.NginxPath(ng.Proxy, ""), evidence.NginxAccessFile, evidence.NginxAccessLogFile)
}

// unloggedNote says which nginx proxies answered requests without an
// access log on file ("" when none did): "20 requests answered by nginx-a,
// whose access log is absent (nginx/nginx-a/: no access.jsonl nor
// access.log)".
func (j *nginxJoin) unloggedNote() string {
	var parts []string
	n, lost := 0, 0
	for _, p := range sortedKeys(j.unlogged) {
		if k := j.unlogged[p]; k > 0 {
			n += k
			parts = append(parts, fmt.Sprintf("%s (%s)", p, j.why[p]))
			if strings.HasPrefix(j.why[p], "lost: ") {
				lost++
			}
		}
	}
	if n == 0 {
		return ""
	}
	state := "absent"
	switch {
	case lost == len(parts):
		state = "lost"
	case lost > 0:
		state = "absent or lost"
	}
	return fmt.Sprintf("%s answered by %s, whose access log is %s", plural(n, "request", "requests"), strings.Join(parts, ", "), state)
}

// unloggedTarget reports whether request i was sent to an nginx proxy
// without an access log.
func (j *nginxJoin) unloggedTarget(reqs *evidence.Requests, i int) bool {
	if j == nil {
		return false
	}
	_, ok := j.unlogged[reqs.Targets[reqs.Target[i]]]
	return ok
}

// NginxProducer returns who produced the response of an nginx access log
// record (see NginxReport.Producers): local_limiter when limit_req rejected
// it (REJECTED; a dry run rejects nothing), upstream_failure for nginx's own
// 502 or 504 (the status nginx records for a try that failed or timed out,
// and for "no live upstreams": ngx_http_upstream_next), backend when the
// last upstream try answered the status the record has, other otherwise.
// A backend answering 502 or 504 itself is counted as upstream_failure: the
// log does not tell them apart.
func NginxProducer(a nginxrec.AccessRecord) string {
	switch {
	case a.LimitReqStatus == nginxrec.LimitReqRejected:
		return envoyrec.ProducerLocalLimiter
	case a.Status == 502 || a.Status == 504:
		return envoyrec.ProducerUpstreamFailure
	case len(a.Upstreams) > 0:
		last := a.Upstreams[len(a.Upstreams)-1]
		if last.Server && last.Status == a.Status {
			return envoyrec.ProducerBackend
		}
	}
	return envoyrec.ProducerOther
}

// nginxSection joins the nginx access logs with the requests (in.nginx,
// ScenarioReport.Nginx): nginx's log says who answered, so its limit_req
// rejections count as local_429 in every later section.
var nginxSection = section{name: "nginx", compute: func(in *Input) {
	in.nginx = joinNginx(in.Evidence)
	if in.nginx != nil {
		in.Report.Nginx = in.nginx.report
	}
	for _, ng := range in.Evidence.Nginx {
		for _, msg := range ng.Notices {
			in.Report.Notices = append(in.Report.Notices, msg+" (no check reads it: the verdict stands)")
		}
	}
}}

// joinNginx joins the nginx access logs to the requests (by X-Rlbench-Id)
// and reclassifies, in reqs, the requests whose record says limit_req
// REJECTED and that the clients' marks left as other_4xx or other_5xx: they
// are local_429 (nginx answers limit_req_status, 503 by default, from its
// own limiter). It returns nil without nginx evidence.
func joinNginx(ev *evidence.ScenarioEvidence) *nginxJoin {
	if len(ev.Nginx) == 0 {
		return nil
	}
	reqs := &ev.Requests
	n := reqs.Len()
	j := &nginxJoin{report: &report.NginxReport{Proxies: []report.NginxProxyReport{}, Producers: map[string]int{}, Missing: []string{},
		Several: []string{}, Disagreements: []string{}}, tries: make([]int, n), producer: make([]string, n),
		rejected: make([]bool, n), proxies: map[string]bool{}, unlogged: map[string]int{}, why: map[string]string{}}
	for i := range j.tries {
		j.tries[i] = -1
	}
	rep := j.report
	records := make([]int, n)
	for k := range ev.Nginx {
		ng := &ev.Nginx[k]
		if ng.File == "" {
			j.unlogged[ng.Proxy], j.why[ng.Proxy] = 0, unloggedWhy(ng)
		} else {
			j.proxies[ng.Proxy] = true
		}
		s := nginxrec.Summarize(ng.Records)
		pr := report.NginxProxyReport{Proxy: ng.Proxy, File: ng.File, Records: s.Requests, ByLimitReqStatus: s.ByLimitReqStatus,
			ByStatus: map[string]int{}, Proxied: s.Proxied, Retried: s.Retried, Tries: s.Tries, ServerTries: s.ServerTries}
		for code, k := range s.ByStatus {
			pr.ByStatus[strconv.Itoa(code)] = k
		}
		if ng.Before != nil && ng.After != nil {
			if d, err := collectnginx.Delta(*ng.Before, *ng.After); err == nil {
				pr.StubStatus = &d
			}
		}
		pr.StubStatusMissing = ng.StubStatusMissing
		rep.Proxies = append(rep.Proxies, pr)
		for _, a := range ng.Records {
			i, ok := reqs.IDs.Lookup(a.ID)
			if a.ID == "" || !ok {
				rep.Unjoined++
				continue
			}
			prod := NginxProducer(a)
			rep.Producers[prod]++
			records[i]++
			if j.tries[i] < 0 {
				j.tries[i] = 0
			}
			j.tries[i] += a.ServerTries()
			j.producer[i] = prod
			if prod == envoyrec.ProducerLocalLimiter {
				j.rejected[i] = true
			}
			if c := reqs.Class[i]; prod == envoyrec.ProducerLocalLimiter && (c == evidence.ClassOther4xx || c == evidence.ClassOther5xx || c.FromBackend()) &&
				int(reqs.Code[i]) == a.Status {
				reqs.Class[i] = evidence.ClassLocal429
				rep.Reclassified++
			}
			target := reqs.Targets[reqs.Target[i]]
			var why []string
			if code := int(reqs.Code[i]); code != 0 {
				if code != a.Status {
					why = append(why, fmt.Sprintf("client code %d, logged %d", code, a.Status))
				}
				if cl := reqs.Class[i].String(); !ProducerAgrees(cl, prod) {
					why = append(why, fmt.Sprintf("client class %s, log producer %s", cl, prod))
				}
			}
			if target != ng.Proxy {
				why = append(why, fmt.Sprintf("sent to %s, logged by %s", target, ng.Proxy))
			}
			if len(why) > 0 {
				rep.DisagreementCount++
				if len(rep.Disagreements) < report.SampleIDs {
					rep.Disagreements = append(rep.Disagreements, fmt.Sprintf("%s %s:%d: %s", a.ID, evidence.NginxPath(ng.Proxy, ""), a.Line,
						strings.Join(why, "; ")))
				}
			}
		}
	}
	var missing, several []string
	for i := 0; i < n; i++ {
		if j.rejected[i] {
			rep.Rejected++
		}
		if records[i] > 1 {
			several = append(several, reqs.IDs.ID(i))
		}
		if records[i] != 0 || reqs.Code[i] == 0 {
			continue
		}
		if t := reqs.Targets[reqs.Target[i]]; j.proxies[t] {
			missing = append(missing, reqs.IDs.ID(i))
		} else if k, ok := j.unlogged[t]; ok {
			j.unlogged[t] = k + 1
		}
	}
	sort.Strings(missing)
	sort.Strings(several)
	rep.MissingCount, rep.SeveralCount = len(missing), len(several)
	rep.Missing, rep.Several = sampleOf(missing), sampleOf(several)
	return j
}

// checkNginx judges the nginx evidence; without it, it does nothing:
// A proxy that answered requests without an access log on file (lost
// evidence) leaves the scenario incomplete (NOT_RUN).
//   - "requests without nginx log entry": 0 (a request answered by an
//     nginx proxy that has an access log must be in it); unknown, not
//     passed, when the rest were answered by a proxy whose access log is
//     absent (lost evidence: a damaged log that was sealed leaves the
//     scenario NOT_RUN already, evidence.Load);
//   - "nginx log agrees with client": same status, NginxProducer consistent
//     with the client's class (ProducerAgrees), logged by the proxy the
//     request was sent to;
//   - "requests with several nginx log entries": 0 (a re-sent request);
//   - per proxy with both stub_status snapshots, "stub_status requests =
//     access log records + 1": the after page counts itself (stub_status
//     counts every request, the status requests included); unknown
//     without the proxy's access log;
//   - expect.limit_req_status: the records per $limit_req_status; while a
//     proxy that answered requests has no access log, unknown unless the
//     count is above the range already.
func checkNginx(in *Input) (r Result) {
	j := in.nginx
	if j == nil {
		if len(in.Scenario.Expect.LimitReqStatus) > 0 {
			r.add("limit_req_status", report.CheckUnknown, "nginx access log records", "no nginx evidence under "+evidence.NginxDir+"/")
		}
		return r
	}
	rep := j.report
	lost := j.unloggedNote()
	if lost != "" {
		// Lost evidence: the log would have told who answered these
		// requests (nginx's limit_req or the backend), which the classes,
		// the retries and the limiters' checks count with. The scenario is
		// NOT_RUN whatever else fails, never blamed on the limiter.
		r.Incomplete = append(r.Incomplete, lost+": the requests it answered are not judged")
	}
	st, got := passIf(rep.MissingCount == 0), report.IDsGot(rep.MissingCount, rep.Missing)
	if st == report.CheckPass && lost != "" {
		st, got = report.CheckUnknown, got+"; "+lost
	}
	r.add("requests without nginx log entry", st, "0", got)
	got = strconv.Itoa(rep.DisagreementCount)
	if rep.DisagreementCount > 0 {
		got += " (" + strings.Join(rep.Disagreements, "; ")
		if rep.DisagreementCount > len(rep.Disagreements) {
			got += "; …"
		}
		got += ")"
	}
	r.add("nginx log agrees with client", passIf(rep.DisagreementCount == 0), "0 disagreements", got)
	r.add("requests with several nginx log entries", passIf(rep.SeveralCount == 0), "0", report.IDsGot(rep.SeveralCount, rep.Several))
	total := map[string]int{}
	for _, p := range rep.Proxies {
		for k, v := range p.ByLimitReqStatus {
			total[k] += v
		}
		switch {
		case len(p.StubStatusMissing) > 0:
			r.add(p.Proxy+": stub_status requests = access log records + 1", report.CheckUnknown, "access log records + 1",
				strings.Join(p.StubStatusMissing, ", ")+": missing (the other stub_status snapshot is there): the delta is not measured")
		case p.StubStatus == nil:
		case p.File == "":
			r.add(p.Proxy+": stub_status requests = access log records + 1", report.CheckUnknown, "access log records + 1",
				fmt.Sprintf("%d; no access log (%s)", p.StubStatus.Requests, j.why[p.Proxy]))
		default:
			want := int64(p.Records) + 1
			r.add(p.Proxy+": stub_status requests = access log records + 1", passIf(p.StubStatus.Requests == want),
				strconv.FormatInt(want, 10), strconv.FormatInt(p.StubStatus.Requests, 10))
		}
	}
	ex := in.Scenario.Expect.LimitReqStatus
	for _, k := range sortedKeys(ex) {
		if v := limitReqVacuous(in, k, ex[k]); v != nil {
			r.notChecked(v, strconv.Itoa(total[k]))
			continue
		}
		st, got := passIf(ex[k].Contains(total[k])), strconv.Itoa(total[k])
		if why := timingPremise(in); st == report.CheckFail && why != "" {
			st, got = report.CheckUnknown, got+", "+why
		}
		if lost != "" {
			// The absent logs can only add records: only a count above the
			// range is sure.
			got += "; " + lost
			if total[k] <= ex[k].Max {
				st = report.CheckUnknown
			}
		}
		r.add("limit_req_status "+k, st, ex[k].String(), got)
	}
	return r
}

// nginxWorkers is how many nginx workers decided the requests of ng's
// log: the distinct $pid of its records (nginxrec.AccessRecord.Pid) when
// every record has one, else worker_processes of the configuration kept
// beside the log (evidence.NginxEvidence.Workers), else 0 (unknown). how
// says it for a report ("2 workers by $pid", "4 workers by nginx.conf",
// "workers unknown").
func nginxWorkers(ng *evidence.NginxEvidence) (n int, how string) {
	pids := map[int64]bool{}
	for k := range ng.Records {
		p := ng.Records[k].Pid
		if p == 0 {
			pids = nil
			break
		}
		pids[p] = true
	}
	switch {
	case len(pids) > 0:
		return len(pids), plural(len(pids), "worker", "workers") + " by $pid"
	case ng.Workers > 0:
		return ng.Workers, plural(ng.Workers, "worker", "workers") + " by " + evidence.NginxConfFile
	}
	return 0, "workers unknown"
}

// nginxLimiterTimes reads the nginx proxies' access logs: every record
// limit_req did not reject, with its accept time (nginxrec.AccessRecord.AcceptMs) and
// forward time (nginxrec.AccessRecord.ForwardMs) at nginx's 1 ms resolution. A proxy whose
// log has no forward time gives none.
func nginxLimiterTimes(in *Input) []*limiterTimes {
	reqs := &in.Evidence.Requests
	var out []*limiterTimes
	for k := range in.Evidence.Nginx {
		ng := &in.Evidence.Nginx[k]
		if n, _ := nginxWorkers(ng); n != 1 {
			// Several workers' clocks give neither the order of the
			// decisions nor one time line of the forwards (seenReader.nginxLog):
			// the checks take the clients' times, as for a proxy without a log.
			continue
		}
		lt := &limiterTimes{target: ng.Proxy, source: ng.File, resolution: time.Millisecond}
		for k := range ng.Records {
			a := &ng.Records[k]
			if a.LimitReqStatus == nginxrec.LimitReqRejected {
				continue
			}
			acc, fwd := int64(-1), int64(-1)
			if v, ok := a.AcceptMs(); ok {
				acc = v * int64(time.Millisecond)
			}
			if v, ok := a.ForwardMs(); ok {
				fwd = v * int64(time.Millisecond)
			}
			ri := int32(-1)
			if i, ok := reqs.IDs.Lookup(a.ID); a.ID != "" && ok {
				ri = int32(i)
			}
			lt.add(acc, fwd, ri, a.Line, a.LimitReqStatus == nginxrec.LimitReqPassed || a.LimitReqStatus == nginxrec.LimitReqDelayed, a.Keys)
		}
		if lt.finish(in) {
			out = append(out, lt)
		}
	}
	return out
}

// checkAdmissionTiming judges when nginx's limit_req let each request go,
// for every declared nginx_limit_req limiter that delays (one zone, no
// nodelay, delay below burst, no dry run) and every nginx proxy it applies
// to whose access log has the times: "admission timing (<limiter>)".
// model.EarliestForwards replays the zone on nginx's own accept times
// (nginxrec.AccessRecord.AcceptMs) and gives the earliest each passed request may leave;
// nginx's forward times (nginxrec.AccessRecord.ForwardMs) must not be earlier, beyond the
// clock's 1 ms resolution. Which of the requests created in one millisecond
// nginx took first, the log does not tell, so the check compares, per key,
// the sorted forward times against the sorted earliest times: a forward
// counts as early only when no order explains it (the fewest forwards left
// unmatched when each forward is matched to an earliest time it is not
// before; the worst earliness under the sorted pairing, the least any order
// gives). Forwards later than the model are no violation of the limit (a
// late timer, a worker not scheduled): the report gives the largest
// lateness as information.
func checkAdmissionTiming(in *Input) (r Result) {
	if len(in.Evidence.Nginx) == 0 {
		return r
	}
	fw := in.limiterForwards()
	for _, l := range in.Scenario.Limiters {
		if l.Model == nil || l.Model.Kind != model.KindNginxLimitReq {
			continue
		}
		m, err := model.New(*l.Model)
		if err != nil {
			continue
		}
		s := m.Spec()
		if s.DryRun || len(s.Zones) != 1 || s.Zones[0].NoDelay || s.Zones[0].Delay >= s.Zones[0].Burst {
			continue
		}
		var proxies []*evidence.NginxEvidence
		for k := range in.Evidence.Nginx {
			ng := &in.Evidence.Nginx[k]
			if n, _ := nginxWorkers(ng); n != 1 && ng.File != "" || fw[ng.Proxy] != nil && fw[ng.Proxy].source == ng.File {
				if len(l.Targets) == 0 || slices.Contains(l.Targets, ng.Proxy) {
					proxies = append(proxies, ng)
				}
			}
		}
		for _, ng := range proxies {
			name := "admission timing (" + l.Name + ")"
			if len(proxies) > 1 {
				name = "admission timing (" + l.Name + " at " + ng.Proxy + ")"
			}
			want := fmt.Sprintf("no forward earlier than %s lets it go (the model replayed on the accept times of %s; %v resolution)",
				specLabel(s), ng.File, time.Millisecond)
			if n, how := nginxWorkers(ng); n != 1 {
				// The replay needs the decisions' order; several workers'
				// clocks do not give it (seenReader.nginxLog).
				r.add(name, report.CheckNotChecked, want, "not judged: "+how+", each stamping by its own cached clock, so the accept times are not the order of nginx's decisions")
				continue
			}
			if t, ok := admissionTiming(in, m, fw[ng.Proxy]); ok {
				r.add(name, passIf(t.early == 0), want, t.got)
			}
		}
	}
	return r
}

// timing is admissionTiming's finding.
type timing struct {
	early, forwards int
	got             string
}

// admissionTiming compares one nginx's forwards with the earliest its zone
// allows (see checkAdmissionTiming); ok is false when no passed request has
// both times.
func admissionTiming(in *Input, m model.Model, lt *limiterTimes) (timing, bool) {
	type fwd struct {
		ns int64
		k  int // index in lt
	}
	type keyed struct {
		fwds     []fwd
		earliest []int64
	}
	byKey := map[string]*keyed{}
	var mreqs []model.Request
	var keys []string
	origin := int64(math.MaxInt64)
	for k := range lt.acceptNs {
		a := lt.acceptNs[k]
		if !lt.limited[k] || a < 0 {
			continue
		}
		origin = min(origin, a)
		r := model.Request{At: a, Key: "target " + lt.target, Vars: zoneVars(m.Spec(), lt.vars[k])}
		mreqs = append(mreqs, r)
		key := r.Key
		if z := m.Spec().Zones[0]; z.Key != "" {
			key = r.Vars[z.Key] // "": not limited, the earliest is the accept time
		}
		keys = append(keys, key)
		g := byKey[key]
		if g == nil {
			g = &keyed{}
			byKey[key] = g
		}
		if f := lt.forwardNs[k]; f >= 0 {
			g.fwds = append(g.fwds, fwd{f, k})
		}
	}
	earliest, ok := model.EarliestForwards(m, mreqs)
	if !ok || len(mreqs) == 0 {
		return timing{}, false
	}
	for i, e := range earliest {
		g := byKey[keys[i]]
		g.earliest = append(g.earliest, e)
	}
	res := int64(lt.resolution)
	var t timing
	worst, late := int64(math.MinInt64), int64(math.MinInt64)
	var worstF fwd
	var worstE int64
	for _, g := range byKey {
		slices.SortFunc(g.fwds, func(a, b fwd) int { return cmp.Compare(a.ns, b.ns) })
		slices.Sort(g.earliest)
		t.forwards += len(g.fwds)
		j := 0
		for x, f := range g.fwds {
			// greedy: the smallest unmatched earliest time not after this forward
			if j < len(g.earliest) && g.earliest[j] <= f.ns+res {
				j++
			} else {
				t.early++
			}
			if x < len(g.earliest) {
				if d := g.earliest[x] - f.ns; d > worst {
					worst, worstF, worstE = d, f, g.earliest[x]
				}
				late = max(late, f.ns-g.earliest[x])
			}
		}
	}
	if t.forwards == 0 {
		return timing{}, false
	}
	rel := func(ns int64) string { return "+" + time.Duration(ns-origin).Round(time.Millisecond).String() }
	if t.early == 0 {
		t.got = fmt.Sprintf("0 of %d forwards early", t.forwards)
		if late > 0 {
			t.got += fmt.Sprintf("; the latest %v after the model's earliest (a late forward does not break the limit)", time.Duration(late).Round(time.Millisecond))
		}
		return t, true
	}
	id := "a request without ID"
	if q := lt.request[worstF.k]; q >= 0 {
		id = in.Evidence.Requests.IDs.ID(int(q))
	}
	t.got = fmt.Sprintf("at least %d of %d forwards earlier than the model allows, in any order of the requests created in one millisecond; worst: %s (%s:%d) forwarded at %s, where the model's earliest for its place in the queue is %s",
		t.early, t.forwards, id, lt.source, lt.line[worstF.k], rel(worstF.ns), rel(worstE))
	return t, true
}
