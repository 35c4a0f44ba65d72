package analyze

import (
	"slices"
	"time"
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
		ruleMs := haproxyRuleMs(h)
		placed := map[int32]bool{}
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
				if fwd >= 0 {
					placed[ri] = true
				}
			}
			lt.acceptNs = append(lt.acceptNs, acc)
			lt.forwardNs = append(lt.forwardNs, fwd)
			lt.request = append(lt.request, ri)
			lt.line = append(lt.line, a.Line)
			lt.limited = append(lt.limited, a.Tracked())
			lt.vars = append(lt.vars, nil)
		}
		if !slices.ContainsFunc(lt.forwardNs, func(f int64) bool { return f >= 0 }) {
			continue
		}
		for i := 0; i < reqs.Len(); i++ {
			if in.received[i] && reqs.Targets[reqs.Target[i]] == h.Proxy && !placed[int32(i)] {
				lt.unplaced++
			}
		}
		out = append(out, lt)
	}
	return out
}
