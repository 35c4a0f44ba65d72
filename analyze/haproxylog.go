package analyze

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// haproxyForwardResolution is the resolution of an HAProxy forward time (haproxyrec.LogRecord.ForwardMs): the
// accept date and five timers, each truncated to the ms, so the true forward lies up to 6 ms after it.
const haproxyForwardResolution = 6 * time.Millisecond

// haproxyLimiterTimes reads the HAProxy proxies' logs: every record the stick table did not deny, with the ms its
// rule ran (haproxyRuleMs: HAProxy's clock moved onto the system date) and its forward time
// (haproxyrec.LogRecord.ForwardMs). A proxy whose log has no forward time gives none.
func haproxyLimiterTimes(in *Input) []*limiterTimes {
	reqs := &in.Evidence.Requests
	var out []*limiterTimes
	for k := range in.Evidence.HAProxy {
		h := &in.Evidence.HAProxy[k]
		lt := &limiterTimes{target: h.Proxy, source: h.File, resolution: haproxyForwardResolution}
		ruleMs, _ := haproxyRuleMs(h)
		for _, a := range h.Records {
			if a.Denied() {
				continue
			}
			acc, fwd := int64(-1), int64(-1)
			if v, ok := ruleMs(a); ok {
				acc = v * int64(time.Millisecond)
			}
			if v, ok := a.ForwardMs(); ok {
				fwd = v * int64(time.Millisecond)
			}
			ri := int32(-1)
			if i, ok := reqs.IDs.Lookup(a.ID); a.ID != "" && ok {
				ri = int32(i)
			}
			lt.add(acc, fwd, ri, a.Line, a.Tracked(), nil)
		}
		if lt.finish(in) {
			out = append(out, lt)
		}
	}
	return out
}

// checkHAProxy judges the HAProxy logs' join with the requests; without HAProxy evidence it does nothing:
//   - "requests without haproxy log entry": 0 (an answered request sent to an HAProxy whose log was kept must be in
//     it: the model is replayed at the times the log gives);
//   - "haproxy log agrees with client": the status HAProxy logged is the one the client got, the request was sent
//     to the HAProxy that logged it, and a logged deny (PR, no server) is what the client classed local_429;
//   - "requests with several haproxy log entries": 0 (a re-sent request).
func checkHAProxy(in *Input) (r Result) {
	ev := in.Evidence
	if len(ev.HAProxy) == 0 {
		return r
	}
	reqs := &ev.Requests
	n := reqs.Len()
	records := make([]int, n)
	proxies := map[string]bool{}
	var disagree []string
	disagreements := 0
	for _, h := range ev.HAProxy {
		proxies[h.Proxy] = true
		for _, a := range h.Records {
			i, ok := reqs.IDs.Lookup(a.ID)
			if a.ID == "" || !ok {
				continue
			}
			records[i]++
			var why []string
			if code := int(reqs.Code[i]); code != 0 {
				if code != a.Status {
					why = append(why, fmt.Sprintf("client code %d, logged %d", code, a.Status))
				}
				if a.Denied() != (reqs.Class[i] == evidence.ClassLocal429) {
					why = append(why, fmt.Sprintf("client class %s, logged denied %v", reqs.Class[i], a.Denied()))
				}
			}
			if t := reqs.Targets[reqs.Target[i]]; t != h.Proxy {
				why = append(why, fmt.Sprintf("sent to %s, logged by %s", t, h.Proxy))
			}
			if len(why) > 0 {
				disagreements++
				if len(disagree) < report.SampleIDs {
					disagree = append(disagree, fmt.Sprintf("%s %s:%d: %s", a.ID, h.File, a.Line, strings.Join(why, "; ")))
				}
			}
		}
	}
	var missing, several []string
	for i := range n {
		if records[i] > 1 {
			several = append(several, reqs.IDs.ID(i))
		}
		if records[i] == 0 && reqs.Code[i] != 0 && proxies[reqs.Targets[reqs.Target[i]]] {
			missing = append(missing, reqs.IDs.ID(i))
		}
	}
	slices.Sort(missing)
	slices.Sort(several)
	r.add("requests without haproxy log entry", passIf(len(missing) == 0), "0", report.IDsGot(len(missing), sampleOf(missing)))
	got := strconv.Itoa(disagreements)
	if disagreements > 0 {
		got += " (" + strings.Join(disagree, "; ")
		if disagreements > len(disagree) {
			got += "; …"
		}
		got += ")"
	}
	r.add("haproxy log agrees with client", passIf(disagreements == 0), "0 disagreements", got)
	r.add("requests with several haproxy log entries", passIf(len(several) == 0), "0", report.IDsGot(len(several), sampleOf(several)))
	return r
}
