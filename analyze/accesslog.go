package analyze

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// Ways an access log entry is joined to a request (AccessLogResponse.JoinedBy).
const (
	// JoinRlbenchID: the entry logged the X-Rlbench-Id request header
	// (%REQ(X-RLBENCH-ID)%, keys rlbench_id / x_rlbench_id / x-rlbench-id).
	JoinRlbenchID = "rlbench_id"
	// JoinRequestID: the entry's %REQ(X-REQUEST-ID)% equals a request's ID
	// (the client sent the ID as x-request-id and Envoy kept it).
	JoinRequestID = "request_id"
	// JoinReceipt: the entry's x-request-id equals the x-request-id header
	// the backend recorded on a receipt (Envoy forwards the x-request-id it
	// logs), which names the request. Only responses that reached the backend
	// join this way; it is how Envoy's default format, which logs no custom
	// header, is joined.
	JoinReceipt = "receipt"
)

// AccessLogResponse is one access log entry joined to the request it answered.
type AccessLogResponse struct {
	// ID is the rlbench request ID.
	ID string `json:"id"`
	// Proxy is the log's proxy name; Target is the target the client sent the request to.
	Proxy  string `json:"proxy"`
	Target string `json:"target"`
	// File and Line locate the entry (File is relative to the scenario directory).
	File string `json:"file"`
	Line int    `json:"line"`
	// JoinedBy is one of the Join constants.
	JoinedBy string `json:"joined_by"`
	// Code is the entry's %RESPONSE_CODE%; ClientCode what the client got (0: no response).
	Code       int `json:"code"`
	ClientCode int `json:"client_code"`
	// Flags and Details are %RESPONSE_FLAGS% (short form) and %RESPONSE_CODE_DETAILS%.
	Flags   []string `json:"flags,omitempty"`
	Details string   `json:"details,omitempty"`
	// Producer is envoyrec.Producer of the entry; Class is Classify of the request.
	Producer string `json:"producer"`
	Class    string `json:"class"`
	// Disagreement is empty when the log and the client agree (ProducerAgrees,
	// same status code, same proxy), else what differs. A request without
	// response (class no_response) is never judged.
	Disagreement string `json:"disagreement,omitempty"`
	// Request is the joined request's index in Requests; ArrivedNs when the
	// proxy had it, unix ns on its clock: the lab proxy's local_ns (its
	// buckets' time), else start_ns, else Envoy's %START_TIME% (1 ms); 0
	// when the entry has none. Neither is part of the JSON report.
	Request   int   `json:"-"`
	ArrivedNs int64 `json:"-"`
}

// arrivedNs is AccessLogResponse.ArrivedNs of entry e.
func arrivedNs(e *envoyrec.AccessLogEntry) int64 {
	switch {
	case e.LocalNs > 0:
		return e.LocalNs
	case e.StartNs > 0:
		return e.StartNs
	case !e.Time.IsZero():
		return e.Time.UnixNano()
	}
	return 0
}

// AccessLogJoin is the join of a scenario's access logs with its requests.
type AccessLogJoin struct {
	// Files are the access log files read, relative to the scenario directory, sorted.
	Files []string `json:"files"`
	// Entries is the number of entries over all files.
	Entries int `json:"entries"`
	// Producers counts every entry by envoyrec.Producer (local_limiter,
	// global_limiter, rls_error, circuit_breaker, upstream_failure, backend, other).
	Producers map[string]int `json:"producers"`
	// Responses are the joined entries, in file and line order.
	Responses []AccessLogResponse `json:"responses"`
	// Unjoined counts, per proxy, entries that match no request of the scenario
	// (no usable ID, or another scenario's ID).
	Unjoined map[string]int `json:"unjoined"`
	// Missing lists the IDs of requests that got a response from a proxy that
	// has an access log, but have no entry in it (sorted).
	Missing []string `json:"missing"`
	// Several lists the IDs with more than one entry (sorted).
	Several []string `json:"several"`
}

// ProducerAgrees reports whether the client class of a response (Classify)
// is consistent with the producer its proxy logged (envoyrec.Producer):
//
//	local_429       ↔ local_limiter   (local_ratelimit filter: flag RL, local_rate_limited)
//	global_429      ↔ global_limiter  (ratelimit filter OVER_LIMIT: flag RL, request_rate_limited)
//	rls_error       ↔ rls_error       (ratelimit filter, RLS failed, failure_mode_deny: flag RLSE)
//	admitted        ↔ backend         (no flag: the upstream answered 2xx)
//	backend_4xx,
//	backend_429     ↔ backend         (the upstream's own answer)
//	backend_5xx     ↔ backend, upstream_failure, circuit_breaker (a try reached
//	                  the backend, whose receipt makes the class; a later try
//	                  failed or was refused: nginx 502 after proxy_next_upstream,
//	                  Envoy UF/URX after a retry, UO when max_retries refused one)
//	circuit_breaker ↔ circuit_breaker (UO)
//	other_4xx       ↔ backend, other
//	other_5xx       ↔ backend, circuit_breaker (UO), upstream_failure (UF, UC, URX, ...), other
//	other           ↔ backend, other
//
// no_response is consistent with any producer (the client saw nothing).
func ProducerAgrees(class, producer string) bool {
	switch class {
	case evidence.ClassLocal429.String():
		return producer == envoyrec.ProducerLocalLimiter
	case evidence.ClassGlobal429.String():
		return producer == envoyrec.ProducerGlobalLimiter
	case evidence.ClassRLSError.String():
		return producer == envoyrec.ProducerRLSError
	case evidence.ClassAdmitted.String(), evidence.ClassBackend4xx.String(), evidence.ClassBackend429.String():
		return producer == envoyrec.ProducerBackend
	case evidence.ClassBackend5xx.String():
		return producer == envoyrec.ProducerBackend || producer == envoyrec.ProducerUpstreamFailure || producer == envoyrec.ProducerCircuitBreaker
	case evidence.ClassCircuitBreaker.String():
		return producer == envoyrec.ProducerCircuitBreaker
	case evidence.ClassOther4xx.String(), evidence.ClassOther.String():
		return producer == envoyrec.ProducerBackend || producer == envoyrec.ProducerOther
	case evidence.ClassOther5xx.String():
		switch producer {
		case envoyrec.ProducerBackend, envoyrec.ProducerCircuitBreaker, envoyrec.ProducerUpstreamFailure, envoyrec.ProducerOther:
			return true
		}
		return false
	case evidence.ClassNoResponse.String():
		return true
	}
	return false
}

// accessLogSection joins the access logs with the requests
// (Input.AccessLogs, ScenarioReport.ProducerCounts); nothing without
// access log entries.
var accessLogSection = section{name: "access logs", compute: func(in *Input) {
	ev := in.Evidence
	if j := JoinAccessLogs(ev.AccessLogs, &ev.Requests, &ev.Receipts); j.Entries > 0 {
		in.AccessLogs = j
		in.Report.ProducerCounts = j.Producers
	}
}}

// JoinAccessLogs joins access log entries to requests: by the logged
// rlbench ID, else by an x-request-id equal to a request ID, else by the
// x-request-id a backend receipt recorded (see the Join constants; receipts'
// x-request-ids are in recs.XRequestID, which evidence.Load fills when the
// scenario has access logs).
func JoinAccessLogs(logs []evidence.AccessLog, reqs *evidence.Requests, recs *evidence.Receipts) *AccessLogJoin {
	j := &AccessLogJoin{Files: []string{}, Producers: map[string]int{}, Responses: []AccessLogResponse{}, Unjoined: map[string]int{},
		Missing: []string{}, Several: []string{}}
	byProxy := map[string][]envoyrec.AccessLogEntry{}
	for _, l := range logs {
		j.Files = append(j.Files, l.File)
		byProxy[l.Proxy] = l.Entries
	}
	// x-request-id the backend saw -> request index (-1: a receipt of an ID not sent).
	byXRID := map[string]int32{}
	for i, x := range recs.XRequestID {
		if x == "" || recs.Request[i] == evidence.NoID {
			continue
		}
		byXRID[x] = recs.Request[i]
	}
	lookup := func(id string) (int, bool) { return reqs.IDs.Lookup(id) }
	logsFor := byProxy
	proxies := make([]string, 0, len(logsFor))
	for p := range logsFor {
		proxies = append(proxies, p)
	}
	sort.Strings(proxies)
	count := map[int]int{}
	for _, p := range proxies {
		for _, e := range logsFor[p] {
			j.Entries++
			prod := envoyrec.Producer(e)
			j.Producers[prod]++
			idx, by := -1, ""
			switch {
			case e.RlbenchID != "":
				if i, ok := lookup(e.RlbenchID); ok {
					idx, by = i, JoinRlbenchID
				}
			case e.RequestID != "":
				if i, ok := lookup(e.RequestID); ok {
					idx, by = i, JoinRequestID
				} else if ri, ok := byXRID[e.RequestID]; ok && ri >= 0 {
					idx, by = int(ri), JoinReceipt
				}
			}
			if idx < 0 {
				j.Unjoined[p]++
				continue
			}
			count[idx]++
			target := reqs.Targets[reqs.Target[idx]]
			code := int(reqs.Code[idx])
			resp := AccessLogResponse{ID: reqs.IDs.ID(idx), Proxy: p, Target: target, File: evidence.AccessLogFile(p), Line: e.Line,
				JoinedBy: by, Code: e.Code, ClientCode: code, Flags: e.Flags, Details: e.CodeDetails, Producer: prod, Class: reqs.Class[idx].String(),
				Request: idx, ArrivedNs: arrivedNs(&e)}
			var why []string
			if resp.Class != evidence.ClassNoResponse.String() {
				if !ProducerAgrees(resp.Class, prod) {
					why = append(why, fmt.Sprintf("client class %s, log producer %s", resp.Class, prod))
				}
				if e.Code != code {
					why = append(why, fmt.Sprintf("client code %d, logged %d", code, e.Code))
				}
				if target != p {
					why = append(why, fmt.Sprintf("sent to %s, logged by %s", target, p))
				}
			}
			resp.Disagreement = strings.Join(why, "; ")
			j.Responses = append(j.Responses, resp)
		}
	}
	if len(logsFor) > 0 {
		for i := 0; i < reqs.Len(); i++ {
			if _, hasLog := logsFor[reqs.Targets[reqs.Target[i]]]; !hasLog || reqs.Code[i] == 0 {
				continue
			}
			if count[i] == 0 {
				j.Missing = append(j.Missing, reqs.IDs.ID(i))
			}
		}
	}
	for i, n := range count {
		if n > 1 {
			j.Several = append(j.Several, reqs.IDs.ID(i))
		}
	}
	sort.Strings(j.Missing)
	sort.Strings(j.Several)
	return j
}

// checkAccessLogs judges the join of the scenario's access logs with its
// requests; without access log entries it does nothing. The checks:
//   - "access log joined to requests" (unknown) when no entry joins any request;
//   - "requests without access log entry": 0 wanted; unknown instead of fail
//     when every such request's proxy also logged entries that join nothing
//     (e.g. Envoy's default format, which has no ID, for a rejected request),
//     or when rlbench's own lab proxy (Scenario.HarnessParts) answered
//     them: its log is the harness's record, so lines it lost leave the
//     scenario NOT_RUN, never a failure of the system under test;
//   - "access log producer agrees with client": ProducerAgrees, same code, same proxy;
//   - "requests with several access log entries": 0 wanted (a re-sent request).
func checkAccessLogs(in *Input) (res Result) {
	j := in.AccessLogs
	if j == nil {
		return res
	}
	reqs := &in.Evidence.Requests
	add := res.add
	if len(j.Responses) == 0 {
		add("access log joined to requests", report.CheckUnknown, fmt.Sprintf(">= 1 of %d entries", j.Entries),
			"0 (no entry carries a request's rlbench id or x-request-id, and no receipt's x-request-id matches)")
		return res
	}
	target := func(id string) string {
		i, _ := reqs.IDs.Lookup(id)
		return reqs.Targets[reqs.Target[i]]
	}
	st := report.CheckPass
	harness := 0 // missing entries of rlbench's own lab proxies
	if len(j.Missing) > 0 {
		st = report.CheckUnknown
		for _, id := range j.Missing {
			if in.Scenario.HasHarnessPart(target(id)) {
				harness++
				continue
			}
			if j.Unjoined[target(id)] == 0 {
				st = report.CheckFail
			}
		}
	}
	got := report.IDsGot(len(j.Missing), sampleOf(j.Missing))
	if st == report.CheckUnknown && harness < len(j.Missing) {
		got += fmt.Sprintf("; %d entries join no request", sumCounts(j.Unjoined))
	}
	if harness > 0 && st == report.CheckUnknown {
		got += fmt.Sprintf("; %d of them answered by rlbench's own lab proxies, whose log is the harness's record, not the system under test's", harness)
	}
	add("requests without access log entry", st, "0", got)
	var bad []string
	n := 0
	for _, r := range j.Responses {
		if r.Disagreement != "" {
			n++
			if len(bad) < report.SampleIDs {
				bad = append(bad, fmt.Sprintf("%s %s:%d: %s", r.ID, r.File, r.Line, r.Disagreement))
			}
		}
	}
	agot := strconv.Itoa(n)
	if n > 0 {
		agot += " (" + strings.Join(bad, "; ")
		if n > len(bad) {
			agot += "; …"
		}
		agot += ")"
	}
	add("access log producer agrees with client", passIf(n == 0), "0 disagreements", agot)
	add("requests with several access log entries", passIf(len(j.Several) == 0), "0", report.IDsGot(len(j.Several), sampleOf(j.Several)))
	return res
}

func sampleOf(ids []string) []string {
	return append([]string{}, ids[:min(len(ids), report.SampleIDs)]...)
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
