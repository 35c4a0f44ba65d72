package analyze

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// Stats delta keys. Local and global rate limit counters are summed over
// stat prefixes and clusters of one proxy.
const (
	DeltaLocalEnabled     = "http_local_rate_limit.enabled"
	DeltaLocalOK          = "http_local_rate_limit.ok"
	DeltaLocalRateLimited = "http_local_rate_limit.rate_limited"
	DeltaLocalEnforced    = "http_local_rate_limit.enforced"
	DeltaGlobalOK         = "ratelimit.ok"
	DeltaGlobalOverLimit  = "ratelimit.over_limit"
	DeltaGlobalError      = "ratelimit.error"
	DeltaGlobalFailOpen   = "ratelimit.failure_mode_allowed"
)

// flatten sums a snapshot's rate-limit counters into the Delta* keys and
// cluster.<c>.upstream_rq_<code> keys; local and global tell which filters
// were seen. label names the snapshot (evidence.LabelBefore or LabelAfter).
// big maps a key whose value, or sum over stat prefixes and clusters, does
// not fit an int64 (Envoy's counters are uint64; a delta is an int64, so
// a value past 2^63−1 would wrap), or whose stat the snapshot lists as
// inexact (envoyrec.Snapshot.Inexact: Prometheus text at or past 2^53), to why,
// naming the Envoy stat and its value; such a key is left out of m.
func flatten(s *envoyrec.Snapshot, label string) (m map[string]uint64, big map[string]string, local, global bool) {
	m, big = map[string]uint64{}, map[string]string{}
	put := func(key, stat string, v uint64, inexact bool) {
		if _, ok := big[key]; ok {
			return
		}
		sum, carry := bits.Add64(m[key], v, 0)
		switch {
		case inexact:
			big[key] = fmt.Sprintf("%s ≈ %d in the %s snapshot, read from Prometheus text at or past 2^53, where float64 no longer holds every whole number: not exact", stat, v, label)
		case v > math.MaxInt64:
			big[key] = fmt.Sprintf("%s = %d in the %s snapshot, past the int64 range of a delta (2^63-1)", stat, v, label)
		case carry != 0 || sum > math.MaxInt64:
			big[key] = fmt.Sprintf("%s: the sum with %s = %d in the %s snapshot is past the int64 range of a delta (2^63-1)", key, stat, v, label)
		default:
			m[key] = sum
			return
		}
		delete(m, key)
	}
	for _, l := range s.Local {
		local = true
		p := l.Prefix + ".http_local_rate_limit."
		put(DeltaLocalEnabled, p+"enabled", l.Enabled, s.IsInexact(p+"enabled"))
		put(DeltaLocalOK, p+"ok", l.OK, s.IsInexact(p+"ok"))
		put(DeltaLocalRateLimited, p+"rate_limited", l.RateLimited, s.IsInexact(p+"rate_limited"))
		put(DeltaLocalEnforced, p+"enforced", l.Enforced, s.IsInexact(p+"enforced"))
	}
	for _, g := range s.Global {
		global = true
		p := "cluster." + g.Cluster + ".ratelimit."
		if g.StatPrefix != "" {
			p += g.StatPrefix + "."
		}
		put(DeltaGlobalOK, p+"ok", g.OK, s.IsInexact(p+"ok"))
		put(DeltaGlobalOverLimit, p+"over_limit", g.OverLimit, s.IsInexact(p+"over_limit"))
		put(DeltaGlobalError, p+"error", g.Error, s.IsInexact(p+"error"))
		put(DeltaGlobalFailOpen, p+"failure_mode_allowed", g.FailureModeAllowed, s.IsInexact(p+"failure_mode_allowed"))
	}
	for _, u := range s.Upstream {
		for code, v := range u.Codes {
			k := "cluster." + u.Cluster + ".upstream_rq_" + code
			put(k, k, v, s.IsInexact(k) || s.IsInexact("cluster."+u.Cluster+".internal.upstream_rq_"+code) ||
				s.IsInexact("cluster."+u.Cluster+".external.upstream_rq_"+code))
		}
	}
	return m, big, local, global
}

// partialLocal reports whether a local limiter of proxy evaluates only part
// of the requests (an envoy_local model with filter_enabled below 100 %).
func partialLocal(in *Input, proxy string) bool {
	for _, l := range in.Scenario.Limiters {
		if l.Stage == evidence.StageLocal && l.AppliesTo(proxy) && l.Model != nil && l.Model.FilterEnabledPercent != nil && *l.Model.FilterEnabledPercent < 100 {
			return true
		}
	}
	return false
}

// statsSection compares the proxies' counter deltas with the client classes
// (ScenarioReport.Stats).
var statsSection = section{name: "stats", needs: []string{"totals"}, compute: func(in *Input) {
	in.Report.Stats = proxyStats(in)
}}

// proxyStats computes, for every proxy with a snapshot under stats/, the
// counter deltas (after − before) and checks them against what that proxy's
// clients saw. The attack target named like the proxy is its client side.
// A counter that went down between snapshots is a reset (process restart or
// /reset_counters), and so is a restart that only server.uptime shows
// (uptimeRestart): the proxy's comparison is then unknown, never a pass.
func proxyStats(in *Input) []report.ProxyStats {
	out := []report.ProxyStats{}
	for _, snaps := range in.Evidence.Stats {
		out = append(out, proxyStat(in, snaps))
	}
	return out
}

// proxyStat is proxyStats of one proxy's snapshots.
func proxyStat(in *Input, snaps evidence.ProxySnapshots) report.ProxyStats {
	p := snaps.Proxy
	ps := report.ProxyStats{Proxy: p, Deltas: map[string]int64{}, Checks: []report.Check{}}
	before, after := snaps.Before, snaps.After
	if status, detail := statsUnusable(in, snaps); status != "" {
		ps.Status, ps.Detail = status, detail
		return ps
	}
	bm, bBig, bLocal, bGlobal := flatten(before, evidence.LabelBefore)
	am, aBig, aLocal, aGlobal := flatten(after, evidence.LabelAfter)
	if len(bm) == 0 && len(am) == 0 && len(bBig) == 0 && len(aBig) == 0 {
		// Nothing in either snapshot: not evidence of anything.
		ps.Status = "missing"
		ps.Detail = fmt.Sprintf("stats snapshot: %s and %s hold no rate limit or upstream counters",
			evidence.Dir(in.Evidence.Path).StatsSnapshot(p, evidence.LabelBefore, ".json"), evidence.Dir(in.Evidence.Path).StatsSnapshot(p, evidence.LabelAfter, ".json"))
		return ps
	}
	local, global := bLocal || aLocal, bGlobal || aGlobal
	ps.Status = report.StatsOK
	statsDeltas(&ps, bm, am, bBig, aBig)
	if why := uptimeRestart(before, after); why != "" {
		ps.Resets = append(ps.Resets, why)
		ps.Status = report.StatsReset
		ps.Detail = "the proxy restarted between snapshots (server.uptime): comparison unknown"
	}
	ps.Timing = snapshotTiming(&in.Evidence.Requests, p, before, after)
	var c *report.Classes
	for i := range in.Report.Targets {
		if in.Report.Targets[i].Target == p {
			c = &in.Report.Targets[i].Classes
		}
	}
	if c == nil && attackedWithNone(in.Evidence.Attack, p) {
		// The attack had this proxy as a target and sent it nothing (a
		// sticky split): its clients sent 0, which its counters must show.
		c = &report.Classes{}
	}
	if c == nil {
		ps.Checks = append(ps.Checks, report.Check{Name: "clients of this proxy", Status: report.CheckUnknown, Want: "a target named " + p, Got: "none"})
		return ps
	}
	statsChecks(in, &ps, c, local, global)
	return ps
}

// statsUnusable returns StatsMissing and why when a snapshot of the proxy
// is missing or holds another proxy; "" when both are usable.
func statsUnusable(in *Input, snaps evidence.ProxySnapshots) (status, detail string) {
	p, before, after := snaps.Proxy, snaps.Before, snaps.After
	if before == nil || after == nil {
		var msgs []string
		for _, e := range []string{snaps.BeforeErr, snaps.AfterErr} {
			if e != "" {
				msgs = append(msgs, e)
			}
		}
		return report.StatsMissing, "stats snapshot: " + strings.Join(msgs, "; ")
	}
	if (before.Proxy != "" && before.Proxy != p) || (after.Proxy != "" && after.Proxy != p) {
		d := evidence.Dir(in.Evidence.Path)
		return report.StatsMissing, fmt.Sprintf("stats snapshot: %s holds proxy %q and %s proxy %q, not %q",
			d.StatsSnapshot(p, evidence.LabelBefore, ".json"), before.Proxy, d.StatsSnapshot(p, evidence.LabelAfter, ".json"), after.Proxy, p)
	}
	return "", ""
}

// statsDeltas sets ps's deltas from the flattened snapshots bm (before)
// and am (after), every counter of either, and marks a counter that went
// down (or vanished) as a reset. A key of bBig or aBig (flatten: past the
// int64 range) gets no delta; its why goes to ps.Unrepresentable and the
// comparisons that read it are unknown (statsChecks).
func statsDeltas(ps *report.ProxyStats, bm, am map[string]uint64, bBig, aBig map[string]string) {
	big := map[string]bool{}
	for _, m := range []map[string]string{bBig, aBig} {
		for k, why := range m {
			if ps.Unrepresentable == nil {
				ps.Unrepresentable = map[string]string{}
			}
			if big[k] {
				why = ps.Unrepresentable[k] + "; " + why
			}
			big[k] = true
			ps.Unrepresentable[k] = why
		}
	}
	for k, bv := range bm {
		if _, ok := am[k]; !ok && !big[k] {
			// Envoy never removes a counter while it runs: one in the
			// before snapshot and not in the after is a restart or a
			// snapshot that lost it, even at 0 (then av < bv cannot say so).
			am[k] = 0
			if bv == 0 {
				ps.Resets = append(ps.Resets, fmt.Sprintf("%s (0 before) is missing from the after snapshot", k))
			}
		}
	}
	for k, av := range am {
		if big[k] {
			continue
		}
		bv := bm[k]
		// flatten kept both below 2^63: the difference fits an int64.
		ps.Deltas[k] = int64(av) - int64(bv)
		if av < bv {
			ps.Resets = append(ps.Resets, fmt.Sprintf("%s went from %d to %d", k, bv, av))
		}
	}
	sort.Strings(ps.Resets)
	if len(ps.Resets) > 0 {
		ps.Status = report.StatsReset
		ps.Detail = "a counter went down between snapshots (restart or reset_counters): comparison unknown"
	}
}

// unrepresentable returns why (ProxyStats.Unrepresentable) any of the
// delta keys has no delta because a counter is past the int64 range, or "".
func unrepresentable(ps *report.ProxyStats, keys ...string) string {
	var why []string
	for _, k := range keys {
		if u, ok := ps.Unrepresentable[k]; ok {
			why = append(why, u)
		}
	}
	return strings.Join(why, "; ")
}

// statsChecks checks ps's deltas against what the proxy's clients saw (c):
// the configured limiters' stats are present, and the local
// (local: its snapshots have local rate limit stats), cluster and global
// (global: ratelimit stats) counters match the client classes.
func statsChecks(in *Input, ps *report.ProxyStats, c *report.Classes, local, global bool) {
	p := ps.Proxy
	// add checks got in lo..hi; got is read from the deltas of keys: one
	// without a delta (unrepresentable) makes the comparison unknown.
	add := func(name string, got int64, lo, hi int, keys ...string) {
		want := strconv.Itoa(lo)
		if hi != lo {
			want = fmt.Sprintf("%d..%d", lo, hi)
		}
		st, g := passIf(got >= int64(lo) && got <= int64(hi)), strconv.FormatInt(got, 10)
		switch why := unrepresentable(ps, keys...); {
		case why != "":
			st, g = report.CheckUnknown, "unknown: "+why
		case ps.Status == report.StatsReset:
			st = report.CheckUnknown
		case st == report.CheckFail && ps.Timing != "":
			st, g = report.CheckUnknown, g+" ("+ps.Timing+")"
		}
		ps.Checks = append(ps.Checks, report.Check{Name: name, Status: st, Want: want, Got: g})
	}
	n, nr := c.Sent, c.N[evidence.ClassNoResponse]
	// The configured limiters must show in the proxy's stats.
	for _, l := range in.Scenario.Limits {
		switch {
		case l.Kind == evidence.LimitTokenBucket && !local:
			ps.Checks = append(ps.Checks, report.Check{Name: "local rate limit stats present", Status: report.CheckFail, Want: "http_local_rate_limit.* counters", Got: "none"})
		case l.Kind == evidence.LimitFixedWindow && !global:
			ps.Checks = append(ps.Checks, report.Check{Name: "global rate limit stats present", Status: report.CheckFail, Want: "cluster.<c>.ratelimit.* counters", Got: "none"})
		}
	}
	if local {
		// Every request that reached the proxy passed the local filter first:
		// ok + (rate_limited − enforced) = reached − local 429s (rejections
		// not enforced, filter_enforced below 100 %, pass); enforced = local
		// 429s (Envoy local_ratelimit). With filter_enabled below 100 % some
		// requests are not evaluated: only the upper bound holds.
		// Deltas are within ±(2^63−1) (flatten): the difference cannot
		// wrap, and the sum saturates instead of wrapping.
		shadow := max(ps.Deltas[DeltaLocalRateLimited]-ps.Deltas[DeltaLocalEnforced], 0)
		passed := ps.Deltas[DeltaLocalOK] + shadow
		if shadow > 0 && passed < ps.Deltas[DeltaLocalOK] {
			passed = math.MaxInt64
		}
		lo := n - nr - c.N[evidence.ClassLocal429]
		if partialLocal(in, p) {
			lo = 0
		}
		add("local ok = requests passed by the local bucket", passed, lo, n-c.N[evidence.ClassLocal429], DeltaLocalOK, DeltaLocalRateLimited, DeltaLocalEnforced)
		add("local enforced = local 429s", ps.Deltas[DeltaLocalEnforced], c.N[evidence.ClassLocal429], c.N[evidence.ClassLocal429]+nr, DeltaLocalEnforced)
	}
	if cl := in.Scenario.Cluster; cl != "" {
		// Envoy's router charges cluster.<c>.upstream_rq_2xx for every 2xx
		// the upstream answered; local replies (429s, RLS-error 500s) never
		// reach it.
		k := "cluster." + cl + ".upstream_rq_2xx"
		add(k+" = admitted", ps.Deltas[k], c.N[evidence.ClassAdmitted], c.N[evidence.ClassAdmitted]+nr, k)
	}
	if global {
		add("ratelimit.over_limit = global 429s", ps.Deltas[DeltaGlobalOverLimit], c.N[evidence.ClassGlobal429], c.N[evidence.ClassGlobal429]+nr, DeltaGlobalOverLimit)
		// a failure_mode_allowed delta near 2^63 would wrap the bounds: past
		// any count of requests, the error check is then unknown
		const errName = "ratelimit.error = RLS 500s + failure_mode_allowed"
		if fo := int(ps.Deltas[DeltaGlobalFailOpen]); fo > math.MaxInt32 && unrepresentable(ps, DeltaGlobalFailOpen) == "" {
			ps.Checks = append(ps.Checks, report.Check{Name: errName, Status: report.CheckUnknown, Want: "RLS 500s + failure_mode_allowed",
				Got: fmt.Sprintf("unknown: %s delta %d: the bounds would pass the int64 range", DeltaGlobalFailOpen, fo)})
		} else {
			add(errName, ps.Deltas[DeltaGlobalError], c.N[evidence.ClassRLSError]+fo, c.N[evidence.ClassRLSError]+fo+nr, DeltaGlobalError, DeltaGlobalFailOpen)
		}
		add("ratelimit.failure_mode_allowed <= admitted", ps.Deltas[DeltaGlobalFailOpen], 0, c.N[evidence.ClassAdmitted]+nr, DeltaGlobalFailOpen)
	}
}

// uptimeSlack is how far server.uptime may fall behind the time between
// two snapshots without a restart: the gauge lags by up to a stats flush
// interval (envoyrec.DefaultStatsFlushInterval), and each of its two readings
// is rounded to a whole second.
const uptimeSlack = envoyrec.DefaultStatsFlushInterval + 2*time.Second

// uptimeRestart says how the snapshots' server.uptime (envoyrec.UptimeStat)
// shows a restart of the proxy between them, or "": the after snapshot's
// uptime is below the before's, or below the before's plus the time between
// the snapshots (their taken_ns) less uptimeSlack. A restart that lost no
// counter (the proxy restarted early and counted again) is then still a
// reset. Snapshots without uptime, or without taken_ns for the second test,
// show nothing. A stats_flush_interval configured above Envoy's default can
// make a live proxy's uptime lag further: its comparison is then unknown
// too, never a false FAIL.
func uptimeRestart(before, after *envoyrec.Snapshot) string {
	b, okb := before.Uptime()
	a, oka := after.Uptime()
	const maxSec = uint64(math.MaxInt64 / int64(time.Second))
	switch {
	case !okb || !oka:
		return ""
	case a > maxSec || b > maxSec:
		// past time.Duration's range (292 years): no restart can be ruled out
		return fmt.Sprintf("%s is %d s before and %d s after, past the range of a duration (%d s): a restart cannot be ruled out", envoyrec.UptimeStat, b, a, maxSec)
	case a < b:
		return fmt.Sprintf("%s went from %d s to %d s", envoyrec.UptimeStat, b, a)
	case before.TakenNs <= 0 || after.TakenNs <= before.TakenNs:
		return ""
	}
	between := time.Duration(after.TakenNs - before.TakenNs)
	least := time.Duration(b)*time.Second + between - uptimeSlack
	if least < time.Duration(b)*time.Second-uptimeSlack {
		// the sum wrapped: taken_ns that far apart rule out nothing
		return fmt.Sprintf("%s is %d s before and %d s after, with the snapshots' taken_ns %d ns apart: past the range of a duration, a restart cannot be ruled out",
			envoyrec.UptimeStat, b, a, after.TakenNs-before.TakenNs)
	}
	if time.Duration(a)*time.Second < least {
		return fmt.Sprintf("%s is %d s at the after snapshot, taken %v after the before snapshot (%d s): the proxy started in between",
			envoyrec.UptimeStat, a, readDuration(int64(between)), b)
	}
	return ""
}

// snapshotTiming says how proxy's snapshots miss the window of the
// requests sent to it (ProxyStats.Timing), or "": the before snapshot's
// taken_ns after the first request's send, the after snapshot's before the
// last request's end (its response, or the client giving up). Counters
// read inside the window may hold part of the attack before it, or miss
// part of it after: a disagreement with the clients proves nothing.
// Snapshots without taken_ns, or a proxy sent nothing, give "".
func snapshotTiming(reqs *evidence.Requests, proxy string, before, after *envoyrec.Snapshot) string {
	var first, last int64
	found := false
	for i := 0; i < reqs.Len(); i++ {
		if reqs.Targets[reqs.Target[i]] != proxy {
			continue
		}
		if s := reqs.SentNs.At(i); !found || s < first {
			first = s
		}
		if e := reqs.EndNs.At(i); !found || e > last {
			last = e
		}
		found = true
	}
	if !found {
		return ""
	}
	var why []string
	if before.TakenNs > 0 && before.TakenNs > first {
		why = append(why, "before snapshot taken "+readDuration(before.TakenNs-first)+" after the first request was sent: counters may include it")
	}
	if after.TakenNs > 0 && after.TakenNs < last {
		why = append(why, "after snapshot taken "+readDuration(last-after.TakenNs)+" before the last response: counters may miss it")
	}
	return strings.Join(why, "; ")
}

// readDuration renders ns to the millisecond ("120ms", "2.5s"), or to the
// microsecond below one.
func readDuration(ns int64) string {
	d := time.Duration(ns)
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// attackedWithNone reports whether attack.json lists a target named
// proxy (in any phase, or any flow of one): the attack knew it and assigned
// it IDs (0 of them, when no request line names it).
func attackedWithNone(a *evidence.Attack, proxy string) bool {
	if a == nil {
		return false
	}
	has := func(c evidence.AttackConfig) bool {
		for _, t := range c.Targets {
			if t.Name == proxy {
				return true
			}
		}
		return false
	}
	for _, ph := range a.Phases {
		if has(ph.Config) {
			return true
		}
		for _, f := range ph.Flows {
			if has(f.Config) {
				return true
			}
		}
	}
	return false
}

// checkStats: proxy counters are compared whenever snapshots exist, unless
// scenario.json's stats_agree is false; a missing one of a pair (or of a
// proxy the scenario names), or none at all under stats_agree true, is
// incomplete evidence.
func checkStats(in *Input) (r Result) {
	sr := in.Report
	if statsOff(in) {
		return r
	}
	if in.Scenario.Expect.StatsAgree != nil && len(sr.Stats) == 0 {
		r.Incomplete = append(r.Incomplete, "stats_agree expected but no stats snapshots under "+evidence.StatsDir+"/")
	}
	for _, ps := range sr.Stats {
		if ps.Status == report.StatsMissing {
			r.Incomplete = append(r.Incomplete, ps.Detail)
			continue
		}
		for _, c := range ps.Checks {
			r.add(ps.Proxy+": "+c.Name, c.Status, c.Want, c.Got)
		}
	}
	return r
}

// statsOff reports whether scenario.json's stats_agree is false: the
// proxies' counters are then compared with nothing (checkStats,
// checkRLSLogged), only reported.
func statsOff(in *Input) bool {
	a := in.Scenario.Expect.StatsAgree
	return a != nil && !*a
}
