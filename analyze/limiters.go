package analyze

import (
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// limitersSection resolves and judges the scenario's limiters
// (in.limiters, ScenarioReport.Limiters, Harness, Shards): it needs the
// nginx join and the receipts (who answered, what was received), the stats
// (fail-open admissions) and the fault windows (which suspend the checks).
var limitersSection = section{name: "limiters", needs: []string{"nginx", "receipts", "totals", "stats", "faults"}, compute: judgeLimiters}

// judgeLimiters resolves the scenario's limiters, joins the RLS decisions
// to their requests, places the faults and runs each limiter's model check
// (limitersSection).
func judgeLimiters(in *Input) {
	ev, sr := in.Evidence, in.Report
	ls := resolveLimiters(in)
	in.limiters = ls
	in.seen, sr.Harness = limiterSeen(in)
	if h := ev.Harness; h != nil {
		harnessProbed(sr.Harness, h)
	}
	impossibleFaults(in, ls)
	applyShardClocks(in)
	ls.failOpen = failOpen(sr)
	if ev.HasDecisions && len(ev.Decisions) > 0 {
		ls.join = joinDecisions(ev, decisionResolution(ev.Decisions), ls.joinWidenNs(), ls.rlsUnits())
	}
	if namedFlows(&ev.Requests) {
		ls.keys = newKeyUse(len(ls.runs), ev.Requests.Len())
	}
	ls.applyFaults(in, in.received)
	if why := requestsIncomplete(in); why != "" {
		for _, r := range ls.runs {
			r.err = why
		}
	}
	ls.checkModels(in, in.received)
	sr.Limiters = make([]report.LimiterReport, 0, len(ls.runs))
	for _, r := range ls.runs {
		sr.Limiters = append(sr.Limiters, *r.report)
	}
}

// requestsIncomplete says why requests.jsonl lacks requests that may have
// reached the limiters (a model replay needs all of them), or "".
func requestsIncomplete(in *Input) string {
	ev := in.Evidence
	if a := ev.Attack; a != nil && a.Sent > ev.Requests.Len() {
		return fmt.Sprintf("%s holds %d of the %d requests sent: a replay needs every one", evidence.RequestsFile, ev.Requests.Len(), a.Sent)
	}
	for _, p := range ev.Problems {
		if p.File == evidence.RequestsFile {
			return evidence.RequestsFile + " is incomplete: a replay needs every request"
		}
	}
	return ""
}

// rlsUnits gives the join each request's RLS descriptor keys (the RLS
// counter keys, domain and descriptor without the window) at the first RLS
// limiter that computes them; one unknown key ("") for a request that
// called the RLS with descriptors no limiter computes; none for a request
// that did not call it.
func (ls *limiterSet) rlsUnits() func(int) ([]string, string) {
	unknown := []string{""}
	return func(i int) ([]string, string) {
		if ls.global && !ls.throughGlobal[i] {
			return nil, ""
		}
		for _, r := range ls.runs {
			if set := r.set(i); r.decl.RLS != nil && set != nil {
				return set.units, r.decl.RLS.Domain
			}
		}
		return unknown, ""
	}
}

// limiterRun is one limiter while it is being judged.
type limiterRun struct {
	decl    evidence.Limiter
	rejects []evidence.Class
	applies []bool // per target index
	// entries are the limiter's compiled rate_limits (nil: none declared);
	// descOf[i] indexes sets with request i's descriptors (-1: its target
	// does not meet the limiter, or no rate_limits).
	entries []descriptor.CompiledRateLimit
	descOf  []int32
	sets    []*descSet
	rules   []*rlsconfig.Match
	cfg     *rlsconfig.Config
	err     string
	report  *report.LimiterReport
	// suspend are the fault windows (with recovery lag) acting on it.
	suspend intervals
	// resets are the state resets (epochs) of its counters.
	resets []epochBoundary
	// unruled counts the requests that reached an RLS limiter and matched
	// no rule (or produced no descriptor): not limited by it. multi counts
	// those with more than one limited (or unknown) descriptor (several
	// counters). unknownKey counts those whose bucket is unknown.
	unruled, multi, unknownKey int
}

// zoneKeysUnknown lists the headers (lower-case) among unknown (canonical
// keys) that nginx zone keys read: $http_<name>, and Host for $host and
// $server_name.
func zoneKeysUnknown(keys, unknown []string) []string {
	if len(keys) == 0 || len(unknown) == 0 {
		return nil
	}
	var out []string
	for _, k := range keys {
		name := ""
		switch {
		case k == "$host" || k == "$server_name":
			name = "Host"
		case strings.HasPrefix(k, "$http_"):
			name = http.CanonicalHeaderKey(strings.ReplaceAll(strings.TrimPrefix(k, "$http_"), "_", "-"))
		}
		if name != "" && slices.Contains(unknown, name) {
			out = appendNew(out, strings.ToLower(name))
		}
	}
	return out
}

// appendNew appends the values of vs that dst lacks.
func appendNew(dst []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// unknownKeyDetail says why n of the offered requests have an unknown key.
func unknownKeyDetail(n, offered int, headers []string) string {
	what := "request header " + strings.Join(headers, ", ")
	if len(headers) > 1 {
		what = "request headers " + strings.Join(headers, ", ")
	}
	return fmt.Sprintf("the key of %d of the %d requests is unknown: they sent %s (%s header_names) without the value being recorded (%s request_headers)",
		n, offered, what, evidence.AttackFile, evidence.ScenarioFile)
}

// descSet is the descriptors one kind of request produces (the rate_limits
// entries evaluated on its phase's headers and client address), with each
// one's key (the RLS cache key prefix, or the entries as k=v) and, for an
// RLS limiter, the rule matched (-1 none, -2 unlimited).
type descSet struct {
	descs [][]descriptor.DescriptorEntry
	keys  []string
	rule  []int32
	// limited counts the descriptors with a rule (rule >= 0).
	limited int
	// unknown counts the rate_limits entries whose descriptor (and whether
	// they yield one) is unknown: they read a header the request sent
	// without its value being recorded (reqAttrs.unknown), named in
	// unknownHeaders (lower-case). units are keys plus one unknown key ("")
	// per such entry: what the RLS join matches.
	unknown        int
	unknownHeaders []string
	units          []string
}

// keyUnknown reports whether the request's limiter key is unknown at a
// limiter that keys or routes by descriptor: some entry's descriptor is.
func (s *descSet) keyUnknown() bool { return s != nil && s.unknown > 0 }

// newDescSet evaluates the rate_limits entries on one kind of request:
// headers h, client address ip, headers sent with unknown values unk
// (canonical keys); rls is the limiter's RLS (nil: none), whose domain
// begins each key.
func newDescSet(entries []descriptor.CompiledRateLimit, h http.Header, ip string, unk []string, rls *evidence.RLSLimiter) *descSet {
	set := &descSet{}
	isUnknown := func(name string) bool { return slices.Contains(unk, name) }
	for k := range entries {
		d, ok, hdr := entries[k].DescriptorOf(nil, h, ip, isUnknown)
		switch {
		case hdr != "":
			set.unknown++
			if !slices.Contains(set.unknownHeaders, hdr) {
				set.unknownHeaders = append(set.unknownHeaders, hdr)
			}
		case ok:
			set.descs = append(set.descs, d)
			if rls != nil {
				set.keys = append(set.keys, descriptor.CacheKeyPrefix(rls.Domain, d))
			} else {
				set.keys = append(set.keys, descriptorString(d))
			}
		}
	}
	set.units = set.keys
	if set.unknown > 0 {
		set.units = append(slices.Clone(set.keys), make([]string, set.unknown)...)
	}
	return set
}

// set returns request i's descriptors at r (nil: not evaluated).
func (r *limiterRun) set(i int) *descSet {
	if r.descOf == nil || r.descOf[i] < 0 {
		return nil
	}
	return r.sets[r.descOf[i]]
}

// firstLimited returns request i's first descriptor with a rule at an RLS
// limiter (the first descriptor otherwise); -1 when none.
func (s *descSet) firstLimited(rls bool) int {
	if s == nil || rls && s.rule == nil {
		return -1
	}
	for u := range s.descs {
		if !rls || s.rule[u] >= 0 {
			return u
		}
	}
	return -1
}

type epochBoundary struct {
	lo, hi int64
	name   string
}

// limiterSet is every limiter of a scenario with what the checkers share.
type limiterSet struct {
	runs []*limiterRun
	// reached[k][i]: request i reached limiter k.
	global bool // some limiter is StageGlobal
	join   *rlsJoin
	// throughGlobal[i]: request i went to an RLS (reached a global limiter
	// and had a descriptor), or may have (callUnknown[i]: its only
	// descriptors are unknown, descSet.unknown).
	throughGlobal, callUnknown []bool
	// failOpen: admissions without an RLS decision are known to exist.
	failOpen int64
	lastNs   int64
	attrs    *reqAttrs
	// keys collects which buckets each request used, for the per-flow and
	// per-key tables (flows.go); nil when the requests name no flow.
	keys *keyUse
	// shardWidenNs is a merged run's clock offset bound between its shards'
	// hosts and the backend (ShardsReport.OffsetBoundNs), 0 otherwise.
	shardWidenNs int64
}

// resolveLimiters builds the scenario's limiters (Scenario.EffectiveLimiters)
// with each request's descriptor and RLS rule.
func resolveLimiters(in *Input) *limiterSet {
	ev := in.Evidence
	reqs := &ev.Requests
	decls := in.Scenario.EffectiveLimiters(reqs.Targets, ev.RLSLog || ev.RLSParsedLog)
	ls := &limiterSet{}
	for _, e := range reqs.EndNs.All() {
		ls.lastNs = max(ls.lastNs, e)
	}
	// local limiters first, in declaration order, then global ones
	sort.SliceStable(decls, func(a, b int) bool {
		return decls[a].Stage == evidence.StageLocal && decls[b].Stage != evidence.StageLocal
	})
	attrs := newAttrs(in)
	ls.attrs = attrs
	for _, d := range decls {
		r := &limiterRun{decl: d, rejects: d.RejectionClasses(), applies: make([]bool, len(reqs.Targets))}
		for t, name := range reqs.Targets {
			r.applies[t] = d.AppliesTo(name)
		}
		targets := d.Targets
		if len(targets) == 0 {
			targets = append([]string(nil), reqs.Targets...)
			sort.Strings(targets)
		}
		r.report = &report.LimiterReport{Name: d.Name, Stage: d.Stage, Key: d.Key, Targets: targets, Status: report.LimiterChecked, Buckets: []report.ModelBound{},
			Windows: []report.ModelBound{}, OverAdmitted: []report.RequestVerdict{}, UnderAdmitted: []report.RequestVerdict{}, Shadow: []report.RequestVerdict{}, Findings: []string{}}
		if d.Model != nil {
			r.report.Model = d.Model.Kind
		} else {
			r.report.Model = "rls"
		}
		if len(d.RateLimits) > 0 {
			entries, err := descriptor.CompileRateLimits("rate_limits", d.RateLimits)
			if err != nil {
				r.err = err.Error()
			} else {
				r.entries = entries
				r.descOf = make([]int32, reqs.Len())
				byAttrs := map[[3]string]int32{}
				for i := 0; i < reqs.Len(); i++ {
					r.descOf[i] = -1
					if !r.applies[reqs.Target[i]] {
						continue
					}
					src, ip, unk := attrs.source(i), attrs.remoteIP(i), attrs.unknown(i)
					ak := [3]string{src, ip, strings.Join(unk, "\x00")}
					k, ok := byAttrs[ak]
					if !ok {
						set := newDescSet(entries, attrs.header(i), ip, unk, d.RLS)
						k = int32(len(r.sets))
						r.sets = append(r.sets, set)
						byAttrs[ak] = k
					}
					r.descOf[i] = k
				}
			}
		}
		if d.RLS != nil {
			ls.resolveRLS(r, reqs)
		}
		if d.Stage == evidence.StageGlobal {
			ls.global = true
		}
		ls.runs = append(ls.runs, r)
	}
	ls.throughGlobal = make([]bool, reqs.Len())
	ls.callUnknown = make([]bool, reqs.Len())
	for i := 0; i < reqs.Len(); i++ {
		for k, r := range ls.runs {
			if r.decl.Stage != evidence.StageGlobal || !ls.reaches(k, i, reqs, nil) {
				continue
			}
			switch set := r.set(i); {
			case r.entries == nil || set != nil && len(set.descs) > 0:
				ls.throughGlobal[i] = true
			case set.keyUnknown():
				// it called the RLS iff an entry it cannot be told yielded a
				// descriptor: give it the join's unknown units, never call
				// it fail-open on that alone
				ls.throughGlobal[i] = true
				ls.callUnknown[i] = true
			}
		}
	}
	return ls
}

// resolveRLS parses the limiter's RLS configuration and matches every
// request's descriptor with the pinned envoyproxy/ratelimit's matcher.
func (ls *limiterSet) resolveRLS(r *limiterRun, reqs *evidence.Requests) {
	cfg, err := rlsconfig.Parse(fmt.Sprintf("scenario.json limiter %q rls.config", r.decl.Name), []byte(r.decl.RLS.Config))
	if err != nil {
		r.err = err.Error()
		return
	}
	if cfg.Domain != r.decl.RLS.Domain {
		r.err = fmt.Sprintf("rls.config is for domain %q, the limiter's domain is %q", cfg.Domain, r.decl.RLS.Domain)
		return
	}
	r.cfg = cfg
	byKey := map[string]int32{}
	for _, set := range r.sets {
		set.rule = make([]int32, len(set.descs))
		for u, desc := range set.descs {
			m, ok := cfg.Match(desc)
			switch {
			case m == nil:
				set.rule[u] = -1
			case !ok:
				set.rule[u] = -2 // unlimited
			default:
				k, seen := byKey[m.FullKey]
				if !seen {
					k = int32(len(r.rules))
					byKey[m.FullKey] = k
					r.rules = append(r.rules, m)
				}
				set.rule[u] = k
				set.limited++
			}
		}
	}
}

// reaches reports whether request i reached the k-th limiter: its target
// meets it and no earlier limiter of its target rejected it (a rejection
// with a receipt did not stop it).
func (ls *limiterSet) reaches(k, i int, reqs *evidence.Requests, received []bool) bool {
	r := ls.runs[k]
	if !r.applies[reqs.Target[i]] {
		return false
	}
	if received != nil && received[i] {
		return true
	}
	c := reqs.Class[i]
	for j := 0; j < k; j++ {
		if e := ls.runs[j]; e.applies[reqs.Target[i]] && slices.Contains(e.rejects, c) {
			return false
		}
	}
	return true
}

// outcome is what limiter k saw of request i (which reached it).
func (ls *limiterSet) outcome(k, i int, reqs *evidence.Requests, received []bool) model.Outcome {
	r := ls.runs[k]
	c := reqs.Class[i]
	switch {
	case received[i]:
		return model.Admitted
	case slices.Contains(r.rejects, c):
		return model.Rejected
	case c.Passed():
		return model.Admitted
	}
	for j := k + 1; j < len(ls.runs); j++ {
		if e := ls.runs[j]; e.applies[reqs.Target[i]] {
			if slices.Contains(e.rejects, c) {
				return model.Admitted // a later limiter answered: it passed this one
			}
			if c == evidence.ClassRLSError && e.decl.Stage == evidence.StageGlobal && r.decl.Stage == evidence.StageLocal {
				return model.Admitted // the RLS call comes after the local filter
			}
		}
	}
	return model.Unknown
}

// reqAttrs gives descriptor actions what they read of each request: its
// phase's recorded request headers (Scenario.RequestHeaders, canonical
// keys) and the client's address from its connection; and nginx zone keys
// its URL. Like the lab proxy, actions read no pseudo-headers.
type reqAttrs struct {
	reqs    *evidence.Requests
	headers map[string]http.Header
	flows   map[[2]string]http.Header // phase, flow
	urls    []*url.URL
	attack  *evidence.Attack
	// unknowns caches unknown by phase, flow, target and URL.
	unknowns map[[4]uint32][]string
}

func newAttrs(in *Input) *reqAttrs {
	a := &reqAttrs{reqs: &in.Evidence.Requests, headers: map[string]http.Header{}, flows: map[[2]string]http.Header{},
		attack: in.Evidence.Attack, unknowns: map[[4]uint32][]string{}}
	canon := func(h map[string]string) http.Header {
		hh := make(http.Header, len(h))
		for k, v := range h {
			hh[http.CanonicalHeaderKey(k)] = []string{v}
		}
		return hh
	}
	for p, h := range in.Scenario.RequestHeaders {
		a.headers[p] = canon(h)
	}
	for p, fs := range in.Scenario.FlowRequestHeaders {
		for f, h := range fs {
			a.flows[[2]string{p, f}] = canon(h)
		}
	}
	a.urls = make([]*url.URL, len(a.reqs.URLs))
	for i, u := range a.reqs.URLs {
		a.urls[i], _ = url.Parse(u)
	}
	return a
}

// header returns request i's recorded request headers: its flow's, else
// its phase's (never nil).
func (a *reqAttrs) header(i int) http.Header {
	phase := a.reqs.Phases[a.reqs.PhaseAt(i)]
	if f, ok := a.reqs.FlowOf(i); len(a.flows) > 0 && ok {
		if h, ok := a.flows[[2]string{phase, a.reqs.Flows[f]}]; ok {
			return h
		}
	}
	if h, ok := a.headers[phase]; ok {
		return h
	}
	return http.Header{}
}

// unknown returns the request headers request i sent whose values the
// evidence does not hold (canonical keys, sorted; nil when none): those
// attack.json names (header_names of its phase's configuration, of its
// flow's, of its request templates for its target) and scenario.json's
// request_headers (or flow_request_headers) leave out. attack.json records
// only the names: the values may be credentials. A limiter key built from
// such a header is unknown, not that of a request without it.
func (a *reqAttrs) unknown(i int) []string {
	if a.attack == nil {
		return nil
	}
	r := a.reqs
	var flow uint32
	if f, ok := r.FlowOf(i); ok {
		flow = uint32(f) + 1
	}
	ck := [4]uint32{uint32(r.PhaseAt(i)), flow, uint32(r.Target[i]), r.URLAt(i)}
	if u, ok := a.unknowns[ck]; ok {
		return u
	}
	phase, target, flowName, rawURL := r.Phases[r.PhaseAt(i)], r.Targets[r.Target[i]], "", r.URLOf(i)
	if flow > 0 {
		flowName = r.Flows[flow-1]
	}
	recorded := a.header(i)
	var out []string
	add := func(names []string) {
		for _, n := range names {
			n = http.CanonicalHeaderKey(n)
			if _, ok := recorded[n]; !ok && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for p := range a.attack.Phases {
		ph := &a.attack.Phases[p]
		if ph.Config.Name != phase {
			continue
		}
		cfgs := []*evidence.AttackConfig{&ph.Config}
		if len(ph.Flows) > 0 {
			cfgs = cfgs[:0]
			for f := range ph.Flows {
				if c := &ph.Flows[f].Config; c.Flow == flowName || flowName == "" {
					cfgs = append(cfgs, c)
				}
			}
		}
		for _, c := range cfgs {
			add(c.HeaderNames)
			// its request template: one of its target whose path its URL
			// ends with, else any of its target's
			var path, same [][]string
			for k := range c.Requests {
				t := &c.Requests[k]
				if t.Target != target {
					continue
				}
				same = append(same, t.HeaderNames)
				if t.Path != "" && strings.HasSuffix(rawURL, t.Path) {
					path = append(path, t.HeaderNames)
				}
			}
			if len(path) == 0 {
				path = same
			}
			for _, names := range path {
				add(names)
			}
		}
	}
	sort.Strings(out)
	a.unknowns[ck] = out
	return out
}

// source names what request i's headers come from (its phase and flow).
func (a *reqAttrs) source(i int) string {
	s := a.reqs.Phases[a.reqs.PhaseAt(i)]
	if f, ok := a.reqs.FlowOf(i); ok {
		s += "\x00" + a.reqs.Flows[f]
	}
	return s
}

// remoteIP is the client's IP of request i from its connection ("": not recorded).
func (a *reqAttrs) remoteIP(i int) string {
	c := a.reqs.ConnOf(i)
	if c == "" {
		return ""
	}
	addr, _, _ := strings.Cut(c, "/")
	ip, _, _ := net.SplitHostPort(addr)
	return ip
}

// url is request i's URL (nil: not recorded or not parsable).
func (a *reqAttrs) url(i int) *url.URL {
	if k := int(a.reqs.URLAt(i)); k < len(a.urls) {
		return a.urls[k]
	}
	return nil
}

// eventKey is the model Key of request i at limiter r (KeyShared: "all";
// KeyDescriptor: its first limited descriptor).
func (r *limiterRun) eventKey(i int, reqs *evidence.Requests) (string, bool) {
	switch r.decl.Key {
	case evidence.KeyTarget:
		return reqs.Targets[reqs.Target[i]], true
	case evidence.KeyConnection:
		c := reqs.ConnOf(i)
		if c == "" {
			return "", false
		}
		return reqs.Targets[reqs.Target[i]] + " " + reqs.Phases[reqs.PhaseAt(i)] + " " + c, true
	case evidence.KeyDescriptor:
		set := r.set(i)
		u := set.firstLimited(r.decl.RLS != nil && r.cfg != nil)
		if u < 0 {
			return "", false
		}
		if r.decl.RLS == nil {
			return strings.Join(set.keys, " "), true
		}
		return set.keys[u], true
	}
	return "all", true
}

func descriptorString(es []descriptor.DescriptorEntry) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Key + "=" + e.Value
	}
	return strings.Join(parts, ",")
}

// checkModels replays, for every limiter, the requests that reached it
// through its model (model.Check) and fills its report.
func (ls *limiterSet) checkModels(in *Input, received []bool) {
	for k, r := range ls.runs {
		ls.checkLimiter(in, k, r, received)
	}
}

// checkLimiter replays the requests that reached limiter k (r) through the
// models its kind builds (limiterKind) and fills r.report: not checked when
// its declaration, a request's key or its models fail, else the model's
// verdicts, bounds and uncertainty.
func (ls *limiterSet) checkLimiter(in *Input, k int, r *limiterRun, received []bool) {
	rep := r.report
	if r.err != "" {
		rep.Status, rep.Detail = report.LimiterNotChecked, r.err
		return
	}
	kind := ls.kindOf(r, in.Evidence)
	groups, name, err := kind.models()
	if err != nil {
		rep.Status, rep.Detail = report.LimiterNotChecked, err.Error()
		return
	}
	if name != "" {
		rep.Model = name
	}
	reqs := &in.Evidence.Requests
	if len(groups) == 1 {
		groups[0].evs.Grow(reqs.Len())
	}
	for _, g := range groups {
		g.evs.Name = eventName(reqs)
	}
	p := &replay{ls: ls, in: in, reqs: reqs, k: k, r: r, kind: kind, groups: groups, received: received}
	for i := 0; i < reqs.Len(); i++ {
		p.request(i)
	}
	if p.noKey > 0 {
		rep.Status = report.LimiterNotChecked
		rep.Detail = fmt.Sprintf("%d requests have no %s key (%s)", p.noKey, r.decl.Key, keyNeeds(r.decl.Key))
		return
	}
	p.zombies()
	if !p.judgeable() {
		return
	}
	p.check()
}

// modelGroup is one model instance of a limiter (an RLS: one per rule
// matched) with the events replayed through it. An event's Req is its
// request's index in the requests, or -1-k for the late RLS decision k
// (evidence.ScenarioEvidence.Decisions; eventName).
type modelGroup struct {
	m   model.Model
	evs model.Events
}

// eventName names the events' requests (model.Events.Name): a request by
// its ID, a late RLS decision by zombieID.
func eventName(reqs *evidence.Requests) func(int32) string {
	return func(req int32) string {
		if req < 0 {
			return zombieID(int(-1 - req))
		}
		return reqs.IDs.ID(int(req))
	}
}

// counter is one counter a request hit at a limiter: an event of model
// group g with Key key. decKey is the RLS cache key prefix its decision is
// joined by ("": the request's decision, whatever the descriptor); unknown
// marks a counter whose bucket is not known (model.Event.KeyUnknown).
type counter struct {
	g       int
	key     string
	decKey  string
	unknown bool
}

// limitedReq is request i at one limiter while the limiter's requests are
// replayed: what the replay tells of it (its descriptors, key, observed
// outcome) and what the limiter's kind adds (limiterKind.admit, describe).
type limitedReq struct {
	i   int
	set *descSet
	// keyUnk: its bucket cannot be told (its descriptors or zone key read
	// a header sent without its value recorded, named in headers,
	// lower-case).
	keyUnk  bool
	headers []string
	// key is its model Key (limiterRun.eventKey; "" when keyUnk).
	key string
	// outcome is what the limiter saw of it; shadowVisible that the
	// limiter's own log showed a shadow (dry-run) rejection.
	outcome       model.Outcome
	shadowVisible bool
	// counters are the counters it hit (one event each, per epoch);
	// descs and vars its model.Event Descriptors and Vars.
	counters []counter
	descs    []model.Descriptor
	vars     map[string]string
	// attrs are descs and vars as its events carry them (model.Event.Attrs:
	// 0 neither), added to group attrsG's events.
	attrs  int32
	attrsG int
}

// descriptorKey marks q's key unknown when one of its rate_limits entries'
// descriptor is (the limiter keys or routes by descriptor).
func (q *limitedReq) descriptorKey() {
	if q.set.keyUnknown() {
		q.unknownKey(q.set.unknownHeaders...)
	}
}

// unknownKey marks q's key unknown, read from headers (lower-case).
func (q *limitedReq) unknownKey(headers ...string) {
	q.keyUnk = true
	q.headers = appendNew(q.headers, headers...)
}

// limiterKind is what the model replay (checkLimiter) asks of one kind of
// limiter. Everything else (which requests reached it, their intervals,
// fault windows and state resets, RLS decisions, the report) is the same
// for every kind, so adding a limiter kind means adding one implementation
// and its case in limiterSet.kindOf.
type limiterKind interface {
	// models builds the limiter's model instances and names them for
	// LimiterReport.Model ("": keep the declared kind resolveLimiters
	// gave). An error leaves the limiter not checked, the error its Detail.
	models() (groups []*modelGroup, name string, err error)
	// admit marks q's key unknown when the kind's key reads a header
	// sent without its value recorded (q.unknownKey), and reports whether
	// the limiter limits q at all (false: it is not replayed).
	admit(q *limitedReq) bool
	// describe fills q's counters, descriptors and zone variables once its
	// key and observed outcome are known; it may correct the outcome from
	// the limiter's own log.
	describe(q *limitedReq)
	// zombie returns the model group and key of a late RLS decision (one
	// that reached no request; evidence.Decision) that counted at the
	// limiter; ok is false when it did not.
	zombie(d *evidence.Decision) (group int, key string, ok bool)
}

// kindOf returns r's limiter kind: an RLS when it declares one, else its
// model.Spec's kind.
func (ls *limiterSet) kindOf(r *limiterRun, ev *evidence.ScenarioEvidence) limiterKind {
	if r.decl.Model == nil {
		return &rlsKind{r: r}
	}
	base := specKind{r: r}
	switch r.decl.Model.Kind {
	case model.KindEnvoyLocal:
		return envoyLocalKind{base}
	case model.KindNginxLimitReq:
		n := &nginxKind{specKind: base, attrs: ls.attrs, status: ev.LimitReq}
		n.keys, n.unknownVar = nginxZoneKeys(r.decl.Model)
		return n
	}
	return base
}

// specKind is a limiter declared by a model.Spec whose bucket is its
// model Key (Limiter.Key: shared, per target, connection or descriptor): a
// token bucket, a fixed window, a sliding log or counter. It is the base
// of the Envoy local and nginx kinds.
type specKind struct{ r *limiterRun }

// models builds the declared model.
func (s specKind) models() ([]*modelGroup, string, error) {
	m, err := model.New(*s.r.decl.Model)
	if err != nil {
		return nil, "", err
	}
	return []*modelGroup{{m: m}}, "", nil
}

// admit: a limiter keyed by descriptor does not know the key of a request
// whose descriptor is unknown; it limits every request that reached it.
func (s specKind) admit(q *limitedReq) bool {
	if s.r.decl.Key == evidence.KeyDescriptor {
		q.descriptorKey()
	}
	return true
}

// describe: one counter, the request's key.
func (s specKind) describe(q *limitedReq) {
	q.counters = append(q.counters[:0], counter{key: q.key, unknown: q.keyUnk})
}

// zombie: a late decision counted in a shared bucket ("all"); a declared
// model cannot tell any other bucket of it.
func (s specKind) zombie(d *evidence.Decision) (int, string, bool) {
	if d.Applied() && s.r.decl.Key == evidence.KeyShared {
		return 0, "all", true
	}
	return 0, "", false
}

// envoyLocalKind is Envoy's local rate limit (model.KindEnvoyLocal,
// envoy.filters.http.local_ratelimit): a token bucket per key and, when it
// declares descriptors, one per matching descriptor, so its bucket depends
// on the request's descriptors (its events carry them).
type envoyLocalKind struct{ specKind }

// admit: with descriptor buckets, a request whose descriptor is unknown
// has an unknown bucket.
func (e envoyLocalKind) admit(q *limitedReq) bool {
	if e.r.decl.Key == evidence.KeyDescriptor || len(e.r.decl.Model.Descriptors) > 0 {
		q.descriptorKey()
	}
	return true
}

// describe: one counter, the request's key, with its descriptors.
func (e envoyLocalKind) describe(q *limitedReq) {
	e.specKind.describe(q)
	if q.set != nil && len(q.set.descs) > 0 {
		q.descs = make([]model.Descriptor, len(q.set.descs))
		for u, d := range q.set.descs {
			q.descs[u] = toModelDescriptor(d)
		}
	}
}

// nginxKind is nginx's limit_req (model.KindNginxLimitReq,
// ngx_http_limit_req_module): zones keyed by nginx variables (keys) that
// the evidence tells per request (nginxKnownVars), and nginx's own
// decision per request ($limit_req_status, status) when its access log
// records it.
type nginxKind struct {
	specKind
	keys       []string
	unknownVar string
	attrs      *reqAttrs
	status     map[int32]string
}

// models: the declared model, unless a zone key is a variable the
// evidence does not tell.
func (n *nginxKind) models() ([]*modelGroup, string, error) {
	groups, name, err := n.specKind.models()
	if err == nil && n.unknownVar != "" {
		err = fmt.Errorf("zone key %s is not known from the evidence (%s)", n.unknownVar, strings.Join(nginxKnownVars, ", "))
	}
	return groups, name, err
}

// admit: a zone key reading a header sent without its value recorded
// makes the request's key unknown.
func (n *nginxKind) admit(q *limitedReq) bool {
	n.specKind.admit(q)
	if hs := zoneKeysUnknown(n.keys, n.attrs.unknown(q.i)); len(hs) > 0 {
		q.unknownKey(hs...)
	}
	return true
}

// describe: one counter with the zone keys' variables; the outcome is
// nginx's logged decision when there is one.
func (n *nginxKind) describe(q *limitedReq) {
	if st, ok := n.status[int32(q.i)]; ok {
		switch st {
		case nginxrec.LimitReqRejected:
			q.outcome = model.Rejected
		case nginxrec.LimitReqPassed, nginxrec.LimitReqDelayed, nginxrec.LimitReqDelayedDryRun:
			q.outcome = model.Admitted
		case nginxrec.LimitReqRejectedDryRun:
			q.outcome, q.shadowVisible = model.ShadowRejected, true
		}
	}
	n.specKind.describe(q)
	if len(n.keys) > 0 {
		q.vars = nginxVars(n.keys, q.key, n.attrs, q.i)
	}
}

// rlsKind is an envoyproxy/ratelimit service (Limiter.RLS): a fixed window
// per rule of its configuration (src/config/config_impl.go), counted per
// cache key (src/limiter/cache_key.go); a request hits one counter per
// descriptor that matched a rule.
type rlsKind struct{ r *limiterRun }

// models builds a fixed window per rule matched and names them
// "rls <rule> <limit>/<unit>, ...".
func (k *rlsKind) models() ([]*modelGroup, string, error) {
	r := k.r
	var groups []*modelGroup
	var names []string
	for _, rule := range r.rules {
		spec, err := decl.RLSRule{RequestsPerUnit: rule.Limit.RequestsPerUnit, Unit: rule.Limit.Unit, Align: r.decl.RLS.Align, ShadowMode: rule.ShadowMode}.Spec()
		var m model.Model
		if err == nil {
			m, err = model.New(spec)
		}
		if err != nil {
			return nil, "", fmt.Errorf("rule %s: %v", rule.FullKey, err)
		}
		groups = append(groups, &modelGroup{m: m})
		names = append(names, fmt.Sprintf("%s %d/%s", rule.FullKey, rule.Limit.RequestsPerUnit, strings.ToLower(rule.Limit.Unit)))
	}
	return groups, "rls " + strings.Join(names, ", "), nil
}

// admit: the RLS limits a request with a descriptor that matched a rule
// (or an unknown one); the others count as unruled (see the engagement
// check), those with several counters as multi.
func (k *rlsKind) admit(q *limitedReq) bool {
	q.descriptorKey()
	if q.set == nil || q.set.limited == 0 && !q.keyUnk {
		k.r.unruled++
		return false
	}
	if q.set.limited+q.set.unknown > 1 {
		k.r.multi++
	}
	return true
}

// describe: a counter per limited descriptor, in its rule's group; an
// entry whose descriptor is unknown may have hit any rule's counter, or
// none.
func (k *rlsKind) describe(q *limitedReq) {
	set := q.set
	for u, rule := range set.rule {
		if rule >= 0 {
			q.counters = append(q.counters, counter{g: int(rule), key: set.keys[u], decKey: set.keys[u]})
		}
	}
	for n := 0; n < set.unknown; n++ {
		for g := range k.r.rules {
			q.counters = append(q.counters, counter{g: g, unknown: true})
		}
	}
}

// zombie: a late decision of the limiter's domain counted in its rule's
// window under its cache key.
func (k *rlsKind) zombie(d *evidence.Decision) (int, string, bool) {
	r := k.r
	if !d.Applied() || d.Domain != r.decl.RLS.Domain || len(d.Descriptor) == 0 || r.cfg == nil {
		return 0, "", false
	}
	m, ok := r.cfg.Match(d.Descriptor)
	if !ok {
		return 0, "", false
	}
	for g, rule := range r.rules {
		if rule.FullKey == m.FullKey {
			return g, descriptor.CacheKeyPrefix(d.Domain, d.Descriptor), true
		}
	}
	return 0, "", false
}

// replay is one limiter's requests being replayed through its models.
type replay struct {
	ls       *limiterSet
	in       *Input
	reqs     *evidence.Requests
	k        int
	r        *limiterRun
	kind     limiterKind
	groups   []*modelGroup
	received []bool
	// shadowVisible: the limiter showed a shadow rejection (model.Options).
	shadowVisible bool
	// noKey counts the requests without a key; unkHeaders are the headers
	// that made keys unknown.
	noKey      int
	unkHeaders []string
	// q is the request being replayed, reused (its counters' array too):
	// nothing keeps it past request, and a million requests allocate none.
	q limitedReq
}

// request replays request i if it reached the limiter and the limiter
// limits it: one event per counter it hit (and epoch), and its observed
// outcome in the report's counts.
func (p *replay) request(i int) {
	r, reqs, rep := p.r, p.reqs, p.r.report
	if !p.ls.reaches(p.k, i, reqs, p.received) {
		return
	}
	q := &p.q
	*q = limitedReq{i: i, set: r.set(i), counters: q.counters[:0]}
	limited := p.kind.admit(q)
	p.unkHeaders = appendNew(p.unkHeaders, q.headers...)
	if !limited {
		return
	}
	key, ok := r.eventKey(i, reqs)
	if !ok && q.keyUnk {
		key, ok = "", true
	}
	if !ok {
		p.noKey++
		return
	}
	if q.keyUnk {
		r.unknownKey++
	}
	q.key = key
	q.outcome = p.ls.outcome(p.k, i, reqs, p.received)
	p.kind.describe(q)
	p.shadowVisible = p.shadowVisible || q.shadowVisible
	lo, hi := p.interval(i)
	rep.Offered++
	suspended := r.suspend.overlaps(lo, hi)
	if suspended {
		rep.Suspended++
	}
	switch p.events(q, lo, hi, suspended) {
	case model.Admitted, model.ShadowRejected:
		rep.Admitted++
	case model.Rejected:
		rep.Rejected++
	default:
		rep.Unknown++
	}
}

// interval bounds when request i reached the limiter (unix ns): between
// its send and its response (or its receipt, if earlier), narrowed by the
// limiter's own log when it shares the client's clock.
func (p *replay) interval(i int) (lo, hi int64) {
	reqs, seen := p.reqs, p.in.seen
	lo, hi = reqs.SentNs.At(i), reqs.EndNs.At(i)
	if t := p.in.ReceiptNs(i); p.received[i] && t > 0 {
		hi = min(hi, t)
	}
	hi = max(hi, lo)
	if t := reqs.Target[i]; p.r.decl.ClockSkewNs == 0 && seen.has(i, t) && seen.own[i] && p.r.decl.Stage == evidence.StageLocal {
		// the limiter's own clock grid (HAProxy's now_ms): replayed as is
		return seen.lo[i], seen.hi[i]
	}
	if t := reqs.Target[i]; p.r.decl.ClockSkewNs == 0 && seen.has(i, t) {
		// the limiter's own log: it read the request at seen.lo, and a
		// local limiter decided before the log's end (seen.hi); the
		// same host's clock, so the client's interval still holds
		nlo, nhi := max(lo, seen.lo[i]), hi
		if p.r.decl.Stage == evidence.StageLocal {
			nhi = min(hi, seen.hi[i])
		}
		if nlo <= nhi {
			lo, hi = nlo, nhi
		}
	}
	return lo, hi
}

// events adds q's events over [lo, hi] to their groups, one per counter
// and epoch, and returns the request's outcome at the limiter: rejected
// when one of its counters rejected it, else its counters' outcomes
// joined (joinOutcome).
func (p *replay) events(q *limitedReq, lo, hi int64, suspended bool) model.Outcome {
	var tally model.Outcome
	for n, c := range q.counters {
		uo, uhi := q.outcome, hi
		if p.r.decl.Stage == evidence.StageGlobal {
			uo, uhi = p.decided(q, c, uo, uhi)
		}
		if suspended {
			uo = model.Unknown
		}
		tally = joinOutcome(tally, uo, n == 0)
		p.add(q, c, lo, uhi, uo)
		p.r.report.Units++
	}
	if q.outcome == model.Rejected && !suspended {
		tally = model.Rejected // one of its counters rejected it
	}
	return tally
}

// decided corrects counter c's outcome uo of request q at a global
// limiter by the RLS decision joined to it, and widens the interval's end
// hi to the run's last response when the RLS may have counted it late.
func (p *replay) decided(q *limitedReq, c counter, uo model.Outcome, hi int64) (model.Outcome, int64) {
	ls := p.ls
	var d *evidence.Decision
	if !c.unknown {
		d = ls.unitDecision(q.i, c.decKey) // an unknown unit's decision cannot be told apart
	}
	if len(q.counters) > 1 && uo == model.Rejected {
		// one of its counters rejected it: which, its decisions tell
		switch {
		case d == nil:
			uo = model.Unknown
		case d.Code == evidence.CodeOK:
			uo = model.Admitted
		}
	}
	if ls.failOpen > 0 && uo == model.Admitted && (d == nil || d.Code != evidence.CodeOK) {
		uo = model.Unknown // may have been let through without a decision
	}
	if d != nil && d.Shadow && uo == model.Admitted {
		uo, p.shadowVisible = model.ShadowRejected, true
	}
	if uo == model.Unknown && !p.in.Evidence.HasDecisions {
		hi = max(hi, ls.lastNs) // the RLS may count it late (zombie), unseen without its log
	}
	return uo, hi
}

// joinOutcome joins the outcome o of one more counter of a request into
// the outcomes tally of its earlier ones (first: o is the first): the same
// outcome, or admissions beside shadow rejections (a shadow rejection),
// else unknown.
func joinOutcome(tally, o model.Outcome, first bool) model.Outcome {
	switch {
	case first:
		return o
	case tally == o, tally == model.ShadowRejected && o == model.Admitted:
		return tally
	case tally == model.Admitted && o == model.ShadowRejected:
		return o
	}
	return model.Unknown
}

// add appends counter c of request q over [lo, hi] with outcome o to its
// group: one event per epoch it may lie in, unknown when several.
func (p *replay) add(q *limitedReq, c counter, lo, hi int64, o model.Outcome) {
	eps := p.r.epochsOf(lo, hi)
	if len(eps) > 1 {
		o = model.Unknown // in flight across a state reset: either epoch
	}
	g := p.groups[c.g]
	if (q.attrs == 0 || q.attrsG != c.g) && (len(q.descs) > 0 || len(q.vars) > 0) && !c.unknown {
		// shared by its events of the group
		q.attrs, q.attrsG = g.evs.AddAttrs(model.Attrs{Descriptors: q.descs, Vars: q.vars}), c.g
	}
	for _, e := range eps {
		ev := model.Event{Lo: lo, Hi: hi, Req: int32(q.i), Outcome: o, KeyUnknown: c.unknown}
		if !c.unknown {
			ev.Key, ev.Attrs = g.evs.AddKey(c.key+e), q.attrs
		}
		g.evs.Add(ev)
	}
}

// zombies adds, at a global limiter, the RLS decisions that reached no
// request but still counted (LimiterReport.Zombies).
func (p *replay) zombies() {
	ls, rep := p.ls, p.r.report
	if p.r.decl.Stage != evidence.StageGlobal || ls.join == nil {
		return
	}
	for _, zi := range ls.join.zombieIdx {
		d := &p.in.Evidence.Decisions[zi]
		g, key, ok := p.kind.zombie(d)
		if !ok {
			continue
		}
		o := model.Admitted
		if d.Code == evidence.CodeOverLimit {
			o = model.Rejected
		}
		lo, hi := d.TimeNs, d.TimeNs+ls.join.res-1
		for _, e := range p.r.epochsOf(lo, hi) {
			evs := &p.groups[g].evs
			evs.Add(model.Event{Req: int32(-1 - zi), Lo: lo, Hi: hi, Key: evs.AddKey(key + e), Outcome: o})
		}
		rep.Zombies++
	}
}

// judgeable reports whether the replayed requests can be judged: some
// reached the limiter and not every one's key is unknown; otherwise the
// report says why not. Every request lying in a fault window makes the
// limiter suspended, and still judged.
func (p *replay) judgeable() bool {
	r, rep := p.r, p.r.report
	if rep.Offered == 0 {
		rep.Status, rep.Detail = report.LimiterNotChecked, "no request reached it"
		return false
	}
	if r.unknownKey > 0 {
		sort.Strings(p.unkHeaders)
		rep.UnknownKey, rep.UnknownKeyHeaders = r.unknownKey, p.unkHeaders
		if r.unknownKey == rep.Offered {
			rep.Status, rep.Detail = report.LimiterNotChecked, unknownKeyDetail(r.unknownKey, rep.Offered, p.unkHeaders)
			return false
		}
	}
	if rep.Suspended == rep.Offered {
		rep.Status, rep.Detail = report.LimiterSuspended, "every request lies in a fault window acting on it"
	}
	return true
}

// check runs model.Check on every group with events, merges the results
// into the report and routes the events for the per-key tables.
func (p *replay) check() {
	r, rep := p.r, p.r.report
	// the report reads a finding's Why, never its IDs, nor a check's
	// widths: it gathers them over every check (finish)
	opts := model.Options{ShadowVisible: p.shadowVisible, Widen: time.Duration(r.decl.ClockSkewNs), NoFindingIDs: true, NoWidths: true}
	rep.Uncertainty.WidenNs = r.decl.ClockSkewNs
	used := 0
	for _, g := range p.groups {
		if g.evs.Len() > 0 {
			used++
		}
	}
	checked := p.groups
	for n, g := range p.groups {
		if g.evs.Len() == 0 {
			continue
		}
		res, err := model.Check(g.m, &g.evs, opts)
		if err != nil {
			rep.Status, rep.Detail = report.LimiterNotChecked, err.Error()
			checked = p.groups[:n]
			break
		}
		mergeResult(rep, res, used == 1)
		if p.ls.keys != nil {
			p.ls.keys.route(p.k, g.m, &g.evs)
		}
	}
	// the widths are gathered once the checks are over: their array
	// (model.Quantiles: 4 or 8 bytes an event) never lives beside a
	// check's own
	n := 0
	for _, g := range checked {
		n += g.evs.Len()
	}
	p.finish(n, func(yield func(int64) bool) {
		for _, g := range checked {
			for j := range g.evs.Len() {
				e := g.evs.At(j)
				if !yield(e.Hi - e.Lo) {
					return
				}
			}
		}
	})
}

// finish completes the report's totals and findings after the model
// checks (widths: the n events' interval widths) and sorts its bounds.
func (p *replay) finish(n int, widths iter.Seq[int64]) {
	rep := p.r.report
	rep.Total.Offered = rep.Units + rep.Zombies // a request across a state reset is an event of both epochs
	if rep.Zombies > 0 {
		// the model's "of the N offered" counts them: say so
		for f, why := range rep.Findings {
			if strings.HasSuffix(why, " offered") {
				rep.Findings[f] = why + fmt.Sprintf(" (%d requests' hits and %d RLS decisions that reached no request)", rep.Units, rep.Zombies)
			}
		}
	}
	setWidths(&rep.Uncertainty, n, widths)
	sort.Slice(rep.Buckets, func(a, b int) bool { return rep.Buckets[a].Bucket < rep.Buckets[b].Bucket })
	sort.SliceStable(rep.Windows, func(a, b int) bool {
		if rep.Windows[a].FromNs != rep.Windows[b].FromNs {
			return rep.Windows[a].FromNs < rep.Windows[b].FromNs
		}
		return rep.Windows[a].Bucket < rep.Windows[b].Bucket
	})
}

// nginxKnownVars are the nginx variables a zone key may use that the
// evidence tells per request.
var nginxKnownVars = []string{"$binary_remote_addr", "$remote_addr", "$host", "$server_name", "$uri", "$request_uri", "$http_<name>"}

// nginxZoneKeys lists the zone keys (nginx variables) of an nginx_limit_req
// spec, and the first one the evidence cannot tell.
func nginxZoneKeys(s *model.Spec) (keys []string, unknown string) {
	if s == nil || s.Kind != model.KindNginxLimitReq {
		return nil, ""
	}
	if s.Key != "" {
		keys = append(keys, s.Key)
	}
	for _, z := range s.Zones {
		if z.Key != "" {
			keys = append(keys, z.Key)
		}
	}
	for _, k := range keys {
		switch {
		case k == "$binary_remote_addr", k == "$remote_addr", k == "$host", k == "$server_name", k == "$uri", k == "$request_uri",
			strings.HasPrefix(k, "$http_"):
		default:
			return keys, k
		}
	}
	return keys, ""
}

// nginxVars gives an nginx zone's key variables for request i, each
// prefixed with the limiter instance (key: one nginx's zones are its own).
// A request without a recorded connection is taken to come from the one
// address rlbench attack sends from.
func nginxVars(keys []string, instance string, a *reqAttrs, i int) map[string]string {
	u := a.url(i)
	h := a.header(i)
	vars := make(map[string]string, len(keys))
	for _, k := range keys {
		v, ok := "", false
		switch {
		case k == "$binary_remote_addr" || k == "$remote_addr":
			v, ok = a.remoteIP(i), true
			if v == "" {
				v = "the attack's address"
			}
		case k == "$host" || k == "$server_name":
			if hv := h.Get("Host"); hv != "" {
				v, ok = hv, true
			} else if u != nil {
				v, ok = u.Host, true
			}
			if host, _, err := net.SplitHostPort(v); err == nil {
				v = host
			}
			v = strings.ToLower(v)
		case k == "$uri":
			if u != nil {
				v, ok = u.EscapedPath(), true
				if v == "" {
					v = "/"
				}
			}
		case k == "$request_uri":
			if u != nil {
				v, ok = u.RequestURI(), true
			}
		default: // $http_<name>: the request header, '_' for '-'
			vs := h[http.CanonicalHeaderKey(strings.ReplaceAll(strings.TrimPrefix(k, "$http_"), "_", "-"))]
			if len(vs) > 0 {
				v, ok = vs[0], true
			}
		}
		if ok && v != "" {
			vars[k] = instance + " " + v
		}
	}
	return vars
}

func keyNeeds(key string) string {
	switch key {
	case evidence.KeyConnection:
		return "requests.jsonl records each request's conn since rlbench v1.1"
	case evidence.KeyDescriptor:
		return "the limiter's actions produced no descriptor"
	}
	return ""
}

func toModelDescriptor(es []descriptor.DescriptorEntry) model.Descriptor {
	d := make(model.Descriptor, len(es))
	for i, e := range es {
		d[i] = model.Entry{Key: e.Key, Value: e.Value}
	}
	return d
}

// zombieID names a late RLS decision in the model's events.
func zombieID(i int) string { return "rls-decision#" + strconv.Itoa(i+1) }

// epochsOf returns the epoch suffixes of an interval: "" before the first
// state reset, " after <fault>" after it; several when it straddles one.
// The slice may be shared (oneEpoch): read it, never write it.
func (r *limiterRun) epochsOf(lo, hi int64) []string {
	if len(r.resets) == 0 {
		return oneEpoch
	}
	var out []string
	name := ""
	for k := 0; k <= len(r.resets); k++ {
		start, end := int64(-1<<63), int64(1<<63-1)
		if k > 0 {
			start = r.resets[k-1].lo
			name = " after " + r.resets[k-1].name
		}
		if k < len(r.resets) {
			end = r.resets[k].hi
		}
		if lo <= end && hi >= start {
			out = append(out, name)
		}
	}
	return out
}

// oneEpoch is epochsOf without state resets, shared: callers only read it.
var oneEpoch = []string{""}

// mergeResult adds one model.Check result to the report.
// single tells that it is the limiter's only model (its run-level finding
// is then the total check's).
func mergeResult(rep *report.LimiterReport, res *model.Result, single bool) {
	rep.MustAdmit += res.MustAdmit
	rep.MustReject += res.MustReject
	verdict := func(v model.Violation) report.RequestVerdict {
		return report.RequestVerdict{ID: v.ID, Model: v.Verdict.String(), Observed: v.Outcome.String(), Bucket: v.Bucket, Why: v.Why}
	}
	add := func(list *[]report.RequestVerdict, n *int, vs []model.Violation) {
		for _, v := range vs {
			if v.Req < 0 { // a late RLS decision (eventName), not a request
				continue
			}
			*n++
			if len(*list) < report.SampleIDs {
				*list = append(*list, verdict(v))
			}
		}
	}
	add(&rep.OverAdmitted, &rep.OverAdmittedCount, res.Over)
	add(&rep.UnderAdmitted, &rep.UnderAdmittedCount, res.Under)
	add(&rep.Shadow, &rep.ShadowCount, res.Shadow)
	for _, w := range res.Windows {
		if single && strings.HasPrefix(w.Why, "run: ") {
			continue // the run-level finding: the total check reports it
		}
		rep.Findings = append(rep.Findings, w.Why)
	}
	bound := func(b model.Bound) report.ModelBound {
		return report.ModelBound{Bucket: b.Bucket, FromNs: b.From, ToNs: b.To, Offered: b.Offered, Min: b.Min, Max: b.Max, Admitted: b.Admitted, Possible: b.Possible}
	}
	t := res.Total
	rep.Total.Offered += t.Offered
	rep.Total.Min += t.Min
	rep.Total.Max += t.Max
	rep.Total.Admitted += t.Admitted
	rep.Total.Possible += t.Possible
	for _, b := range res.Buckets {
		rep.Buckets = append(rep.Buckets, bound(b))
	}
	for _, b := range res.WindowBounds {
		rep.Windows = append(rep.Windows, bound(b))
	}
	u := &rep.Uncertainty
	u.Either += res.Uncertainty.Either
	u.EitherFromTiming += res.Uncertainty.EitherFromTiming
}

// setWidths sets u's largest, median and 99th percentile interval widths
// from the n widths w yields (model.Quantiles); none when n is 0.
func setWidths(u *report.ModelUncertainty, n int, w iter.Seq[int64]) {
	if n == 0 {
		return
	}
	u.MaxWidthNs, u.MedianWidthNs, u.P99WidthNs = model.Quantiles(n, w)
}

// unitDecision returns the RLS decision joined to request i's descriptor
// with cache key prefix key ("": its first), if any.
func (ls *limiterSet) unitDecision(i int, key string) *evidence.Decision {
	j := ls.join
	if j == nil || j.unitStart == nil {
		return nil
	}
	for u := j.unitStart[i]; u < j.unitStart[i+1]; u++ {
		if key == "" || j.unitKey[u] == "" || j.unitKey[u] == key {
			if j.unit2dec[u] < 0 {
				return nil
			}
			return j.decision(int(j.unit2dec[u]))
		}
	}
	return nil
}

// joinedOK reports whether request i has an OK decision joined to one of
// its descriptors: a sure sign the RLS answered its call.
func (ls *limiterSet) joinedOK(i int) bool {
	j := ls.join
	if j == nil || j.unitStart == nil {
		return false
	}
	for u := j.unitStart[i]; u < j.unitStart[i+1]; u++ {
		if k := j.unit2dec[u]; k >= 0 && j.ds[k].Code == evidence.CodeOK {
			return true
		}
	}
	return false
}

// endToEnd is the scenario's end-to-end model bound: for each target, the
// last limiter on its path bounds what passed; the totals of those
// limiters add up when each is last for all of its targets. why is "" with
// a bound, else it says why there is none: no limiter declared, a target
// no limiter applies to, limiters that do not partition the targets, or a
// last limiter that was not checked (or whose RLS requests matched no rule
// or several rules: its total does not count requests).
func (ls *limiterSet) endToEnd(reqs *evidence.Requests) (b report.ModelBound, why string) {
	if ls == nil || len(ls.runs) == 0 {
		return report.ModelBound{}, "no limiter declared"
	}
	last := make([]int, len(reqs.Targets))
	for t := range reqs.Targets {
		last[t] = -1
		for k, r := range ls.runs {
			if r.applies[t] {
				last[t] = k
			}
		}
	}
	var out report.ModelBound
	used := map[int]bool{}
	for t, k := range last {
		if k < 0 {
			return report.ModelBound{}, fmt.Sprintf("no declared limiter applies to target %s", reqs.Targets[t])
		}
		r := ls.runs[k]
		for t2, ok := range r.applies {
			if ok && last[t2] != k {
				return report.ModelBound{}, fmt.Sprintf("limiter %s is last on target %s but not on %s: the limiters do not partition the targets",
					r.report.Name, reqs.Targets[t], reqs.Targets[t2])
			}
		}
		if used[k] {
			continue
		}
		used[k] = true
		switch {
		case r.report.Status == report.LimiterSuspended:
			return report.ModelBound{}, fmt.Sprintf("limiter %s: every request lies in a fault window", r.report.Name)
		case r.report.Status != report.LimiterChecked:
			return report.ModelBound{}, fmt.Sprintf("limiter %s not checked: %s", r.report.Name, r.report.Detail)
		case r.unruled > 0:
			return report.ModelBound{}, fmt.Sprintf("limiter %s: %d requests matched no RLS rule", r.report.Name, r.unruled)
		case r.multi > 0:
			return report.ModelBound{}, fmt.Sprintf("limiter %s: %d requests hit several RLS rules", r.report.Name, r.multi)
		}
		tb := r.report.Total
		out.Offered += tb.Offered
		out.Min += tb.Min
		out.Max += tb.Max
		out.Admitted += tb.Admitted
		out.Possible += tb.Possible
	}
	if len(used) == 0 {
		return report.ModelBound{}, "no target"
	}
	return out, ""
}

// fmtNs renders a duration of ns for check texts.
func fmtNs(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() }

// checkLimiters: every limiter's model check — its admitted count within
// the model's bounds (both: fewer than the lower bound fails, so a limiter
// that rejects everything fails), no request the model must reject
// admitted, none it must admit rejected, no window or bucket count the
// model cannot produce.
func checkLimiters(in *Input) (r Result) {
	ls := in.limiters
	if ls == nil {
		return r
	}
	for _, run := range ls.runs {
		rep := run.report
		name := "limiter " + rep.Name
		switch rep.Status {
		case report.LimiterNotChecked:
			if rep.Offered > 0 || run.err != "" || strings.Contains(rep.Detail, "key") {
				r.add(name+": model check", report.CheckUnknown, "a model check", rep.Detail)
			}
			continue
		case report.LimiterSuspended:
			continue // every request in a fault window: nothing to judge
		}
		t := rep.Total
		got := strconv.Itoa(t.Admitted)
		if t.Possible != t.Admitted {
			got = fmt.Sprintf("%d..%d (%d without outcome)", t.Admitted, t.Possible, t.Possible-t.Admitted)
		}
		if rep.Suspended > 0 {
			got += fmt.Sprintf("; %d of %d suspended by faults", rep.Suspended, rep.Offered)
		}
		if rep.UnknownKey > 0 {
			got += fmt.Sprintf("; %d of %d with an unknown key (header %s not recorded), judged either", rep.UnknownKey, rep.Offered,
				strings.Join(rep.UnknownKeyHeaders, ", "))
		}
		r.add(name+": admitted within model bounds", passIf(t.Holds()), fmt.Sprintf("%d..%d", t.Min, t.Max), got)
		r.add(name+": over-admitted (model must reject)", passIf(rep.OverAdmittedCount == 0), "0", report.VerdictsGot(rep.OverAdmittedCount, rep.OverAdmitted))
		r.add(name+": under-admitted (model must admit)", passIf(rep.UnderAdmittedCount == 0), "0", report.VerdictsGot(rep.UnderAdmittedCount, rep.UnderAdmitted))
		fgot := strconv.Itoa(len(rep.Findings))
		if len(rep.Findings) > 0 {
			fgot += " (" + strings.Join(rep.Findings[:min(3, len(rep.Findings))], "; ")
			if len(rep.Findings) > 3 {
				fgot += "; …"
			}
			fgot += ")"
		}
		r.add(name+": window and bucket counts the model allows", passIf(len(rep.Findings) == 0), "0 findings", fgot)
		if run.decl.Stage == evidence.StageGlobal {
			r.excuse(len(r.Checks)-4, labRLSStall(in))
		}
	}
	return r
}
