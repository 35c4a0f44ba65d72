package analyze

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/model"
)

// Limiter check statuses (LimiterReport.Status).
const (
	// LimiterChecked: the model judged the requests that reached the limiter.
	LimiterChecked = "checked"
	// LimiterSuspended: every request that reached the limiter lies in a
	// fault window acting on it (or its recovery lag): nothing was judged.
	LimiterSuspended = "suspended"
	// LimiterNotChecked: the limiter could not be judged (Detail says why:
	// a bad RLS configuration, no connection recorded for a per-connection key).
	LimiterNotChecked = "not_checked"
)

// LimiterReport is the model check (model) of one limiter that
// scenario.json declares (or that its limits translate to): the requests
// that reached it, replayed through its model with each one's arrival
// known only within [send, min(response, receipt)].
type LimiterReport struct {
	Name    string   `json:"name"`
	Stage   string   `json:"stage"`
	Key     string   `json:"key"`
	Targets []string `json:"targets"`
	// Model names the semantic: the model kind, or "rls" with the rules matched.
	Model  string `json:"model"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Offered counts the requests that reached the limiter (those an
	// earlier limiter rejected did not); Suspended those of them judged
	// unknown because they lie in a fault window acting on the limiter or in
	// its recovery lag; Zombies the RLS decisions that reached no request
	// (they count as hits, not as admissions).
	Offered   int `json:"offered"`
	Suspended int `json:"suspended"`
	Zombies   int `json:"zombies,omitempty"`
	// UnknownKey counts the offered requests whose bucket is unknown: their
	// descriptors (or nginx zone key) read a request header they sent
	// whose value the evidence does not hold (UnknownKeyHeaders,
	// lower-case): attack.json names it, scenario.json's request_headers
	// do not give it. The model judges them "either" and counts them as
	// possible hits of every bucket (model.Event.KeyUnknown).
	UnknownKey        int      `json:"unknown_key,omitempty"`
	UnknownKeyHeaders []string `json:"unknown_key_headers,omitempty"`
	// Admitted, Rejected and Unknown are the outcomes observed at the limiter.
	Admitted int `json:"admitted"`
	Rejected int `json:"rejected"`
	Unknown  int `json:"unknown"`
	// MustAdmit and MustReject count the requests the model decided.
	MustAdmit  int `json:"must_admit"`
	MustReject int `json:"must_reject"`
	// Total bounds the limiter's admitted count over every schedule the
	// intervals allow; Buckets per key (and, for Envoy, per descriptor
	// bucket); Windows per fixed window. Late RLS decisions (Zombies) are
	// in them as the hits they were: they took room in their window.
	Total   ModelBound   `json:"total"`
	Buckets []ModelBound `json:"buckets"`
	Windows []ModelBound `json:"windows"`
	// OverAdmitted are admissions the model says it must have rejected;
	// UnderAdmitted rejections it must have admitted; Shadow passes of a
	// limiter that does not enforce every rejection where the model says
	// reject (would have rejected). Lists hold at most SampleIDs; the counts
	// are exact.
	OverAdmitted       []RequestVerdict `json:"over_admitted"`
	OverAdmittedCount  int              `json:"over_admitted_count"`
	UnderAdmitted      []RequestVerdict `json:"under_admitted"`
	UnderAdmittedCount int              `json:"under_admitted_count"`
	Shadow             []RequestVerdict `json:"shadow"`
	ShadowCount        int              `json:"shadow_count"`
	// Findings are count findings that need no single culprit (too many
	// admissions surely inside one window or bucket, too few).
	Findings []string `json:"findings"`
	// Uncertainty is how wide the timing uncertainty was.
	Uncertainty ModelUncertainty `json:"uncertainty"`

	// units counts the events judged (a request per counter it hit).
	units int
}

// ModelBound is the model's bound on one admitted count: a bucket (a key),
// a fixed window of it, or the whole limiter (Bucket empty).
type ModelBound struct {
	Bucket string `json:"bucket,omitempty"`
	// FromNs and ToNs bound a window (unix ns); 0 for a bucket or a total.
	FromNs int64 `json:"from_ns,omitempty"`
	ToNs   int64 `json:"to_ns,omitempty"`
	// Offered are the model's events that may have hit it: the requests
	// that may have reached it (one per counter a request hit at an RLS,
	// and per epoch when it was in flight across a state reset) and the
	// RLS decisions that reached no request (LimiterReport.Zombies), which
	// counted without admitting anyone; so it may exceed the requests.
	Offered int `json:"offered"`
	// Min..Max is what the model admits of them over every schedule.
	Min int `json:"min"`
	Max int `json:"max"`
	// Admitted are the observed admissions surely in it; Possible the
	// admissions and requests without outcome that may be in it.
	Admitted int `json:"admitted"`
	Possible int `json:"possible"`
}

// Holds reports whether the observation fits: no more sure admissions
// than Max, no fewer possible ones than Min.
func (b ModelBound) Holds() bool { return b.Admitted <= b.Max && b.Possible >= b.Min }

// String renders "admitted N (model MIN..MAX)".
func (b ModelBound) String() string {
	got := strconv.Itoa(b.Admitted)
	if b.Possible != b.Admitted {
		got += ".." + strconv.Itoa(b.Possible)
	}
	return fmt.Sprintf("admitted %s (model %d..%d)", got, b.Min, b.Max)
}

// RequestVerdict is the model's verdict on one request that contradicts it.
type RequestVerdict struct {
	ID string `json:"id"`
	// Model is "must admit" or "must reject"; Observed "admitted" or "rejected".
	Model    string `json:"model"`
	Observed string `json:"observed"`
	Bucket   string `json:"bucket"`
	Why      string `json:"why"`
}

// ModelUncertainty is model.Uncertainty in ns.
type ModelUncertainty struct {
	MaxWidthNs    int64 `json:"max_width_ns"`
	MedianWidthNs int64 `json:"median_width_ns"`
	P99WidthNs    int64 `json:"p99_width_ns"`
	// Either counts the requests the model left undecided; EitherFromTiming
	// those of them exact arrival times would have decided.
	Either           int `json:"either"`
	EitherFromTiming int `json:"either_from_timing"`
	// WidenNs is how much every interval was widened on each side for
	// clock offsets: the limiter's clock_skew_ns plus, in a merged run,
	// the shards' clock offset bound (ShardsReport.OffsetBoundNs).
	WidenNs int64 `json:"widen_ns,omitempty"`
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
	report  *LimiterReport
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

// keyedByDescriptor reports whether the limiter's bucket depends on the
// request's descriptors: an RLS (its rules match descriptors), a
// descriptor key, or an Envoy local rate limit with descriptor buckets.
func (r *limiterRun) keyedByDescriptor() bool {
	m := r.decl.Model
	return r.decl.RLS != nil || r.decl.Key == evidence.KeyDescriptor || m != nil && m.Kind == model.KindEnvoyLocal && len(m.Descriptors) > 0
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
	for _, e := range reqs.EndNs {
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
		r.report = &LimiterReport{Name: d.Name, Stage: d.Stage, Key: d.Key, Targets: targets, Status: LimiterChecked, Buckets: []ModelBound{},
			Windows: []ModelBound{}, OverAdmitted: []RequestVerdict{}, UnderAdmitted: []RequestVerdict{}, Shadow: []RequestVerdict{}, Findings: []string{}}
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
	phase := a.reqs.Phases[a.reqs.Phase[i]]
	if len(a.flows) > 0 && i < len(a.reqs.Flow) {
		if h, ok := a.flows[[2]string{phase, a.reqs.Flows[a.reqs.Flow[i]]}]; ok {
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
	if i < len(r.Flow) {
		flow = uint32(r.Flow[i]) + 1
	}
	ck := [4]uint32{uint32(r.Phase[i]), flow, uint32(r.Target[i]), r.URL[i]}
	if u, ok := a.unknowns[ck]; ok {
		return u
	}
	phase, target, flowName, rawURL := r.Phases[r.Phase[i]], r.Targets[r.Target[i]], "", r.URLOf(i)
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
	s := a.reqs.Phases[a.reqs.Phase[i]]
	if i < len(a.reqs.Flow) {
		s += "\x00" + a.reqs.Flows[a.reqs.Flow[i]]
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
	if k := int(a.reqs.URL[i]); k < len(a.urls) {
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
		return reqs.Targets[reqs.Target[i]] + " " + reqs.Phases[reqs.Phase[i]] + " " + c, true
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
func (ls *limiterSet) checkModels(in *Input, received []bool, recvNs []int64) {
	ev := in.Evidence
	reqs := &ev.Requests
	for k, r := range ls.runs {
		rep := r.report
		if r.err != "" {
			rep.Status, rep.Detail = LimiterNotChecked, r.err
			continue
		}
		// models: one per RLS rule, or the declared one
		type group struct {
			m      model.Model
			events []model.Event
			// idx is each event's request index (-1: a late RLS decision);
			// kept only for the per-flow and per-key tables (ls.keys).
			idx []int32
		}
		var groups []*group
		if r.decl.Model != nil {
			m, err := model.New(*r.decl.Model)
			if err != nil {
				rep.Status, rep.Detail = LimiterNotChecked, err.Error()
				continue
			}
			groups = []*group{{m: m}}
		} else {
			var names []string
			for _, rule := range r.rules {
				spec := model.Spec{Kind: model.KindFixedWindow, Limit: uint64(rule.Limit.RequestsPerUnit), Unit: strings.ToLower(rule.Limit.Unit),
					Align: r.decl.RLS.Align, ShadowMode: rule.ShadowMode}
				m, err := model.New(spec)
				if err != nil {
					rep.Status, rep.Detail = LimiterNotChecked, fmt.Sprintf("rule %s: %v", rule.FullKey, err)
					break
				}
				groups = append(groups, &group{m: m})
				names = append(names, fmt.Sprintf("%s %d/%s", rule.FullKey, rule.Limit.RequestsPerUnit, strings.ToLower(rule.Limit.Unit)))
			}
			if rep.Status == LimiterNotChecked {
				continue
			}
			rep.Model = "rls " + strings.Join(names, ", ")
		}
		if len(groups) == 1 {
			groups[0].events = make([]model.Event, 0, reqs.Len())
		}
		zoneKeys, unknownVar := nginxZoneKeys(r.decl.Model)
		if unknownVar != "" {
			rep.Status, rep.Detail = LimiterNotChecked, fmt.Sprintf("zone key %s is not known from the evidence (%s)", unknownVar, strings.Join(nginxKnownVars, ", "))
			continue
		}
		shadowVisible := false
		noKey := 0
		global := r.decl.Stage == evidence.StageGlobal
		isRLS := r.decl.RLS != nil
		var unkHeaders []string // headers that made keys unknown
		for i := 0; i < reqs.Len(); i++ {
			if !ls.reaches(k, i, reqs, received) {
				continue
			}
			set := r.set(i)
			// keyUnk: the request's bucket cannot be told (its descriptors
			// or zone key read a header sent without its value recorded)
			var keyUnk bool
			if r.keyedByDescriptor() && set.keyUnknown() {
				keyUnk = true
				unkHeaders = appendNew(unkHeaders, set.unknownHeaders...)
			}
			if hs := zoneKeysUnknown(zoneKeys, ls.attrs.unknown(i)); len(hs) > 0 {
				keyUnk = true
				unkHeaders = appendNew(unkHeaders, hs...)
			}
			if isRLS {
				if set == nil || set.limited == 0 && !keyUnk {
					r.unruled++ // no rule applied: not limited (see the engagement check)
					continue
				}
				if set.limited+set.unknown > 1 {
					r.multi++
				}
			}
			key, ok := r.eventKey(i, reqs)
			if !ok && keyUnk {
				key, ok = "", true
			}
			if !ok {
				noKey++
				continue
			}
			if keyUnk {
				r.unknownKey++
			}
			o := ls.outcome(k, i, reqs, received)
			if st, ok := ev.LimitReq[int32(i)]; ok && r.decl.Model != nil && r.decl.Model.Kind == model.KindNginxLimitReq {
				// nginx logged limit_req's own decision ($limit_req_status)
				switch st {
				case nginxrec.LimitReqRejected:
					o = model.Rejected
				case nginxrec.LimitReqPassed, nginxrec.LimitReqDelayed, nginxrec.LimitReqDelayedDryRun:
					o = model.Admitted
				case nginxrec.LimitReqRejectedDryRun:
					o, shadowVisible = model.ShadowRejected, true
				}
			}
			lo, hi := reqs.SentNs[i], reqs.EndNs[i]
			if received[i] && recvNs[i] > 0 {
				hi = min(hi, recvNs[i])
			}
			hi = max(hi, lo)
			if t := reqs.Target[i]; r.decl.ClockSkewNs == 0 && in.seen.has(i, t) {
				// the limiter's own log: it read the request at seen.lo, and a
				// local limiter decided before the log's end (seen.hi); the
				// same host's clock, so the client's interval still holds
				nlo, nhi := max(lo, in.seen.lo[i]), hi
				if r.decl.Stage == evidence.StageLocal {
					nhi = min(hi, in.seen.hi[i])
				}
				if nlo <= nhi {
					lo, hi = nlo, nhi
				}
			}
			rep.Offered++
			suspended := r.suspend.overlaps(lo, hi)
			if suspended {
				rep.Suspended++
			}
			// one event per counter the request hit: per limited descriptor
			// at an RLS, else one
			type unit struct {
				g   int
				key string
				// unknown: its bucket is not known (model.Event.KeyUnknown)
				unknown bool
			}
			units := []unit{{0, key, keyUnk}}
			if isRLS {
				units = units[:0]
				for u, rule := range set.rule {
					if rule >= 0 {
						units = append(units, unit{g: int(rule), key: set.keys[u]})
					}
				}
				// an entry whose descriptor is unknown may have hit any
				// rule's counter, or none
				for n := 0; n < set.unknown; n++ {
					for g := range groups {
						units = append(units, unit{g: g, unknown: true})
					}
				}
			}
			var descs []model.Descriptor
			if r.decl.Model != nil && set != nil && len(set.descs) > 0 {
				descs = make([]model.Descriptor, len(set.descs))
				for u, d := range set.descs {
					descs[u] = toModelDescriptor(d)
				}
			}
			var vars map[string]string
			if len(zoneKeys) > 0 {
				vars = nginxVars(zoneKeys, key, ls.attrs, i)
			}
			var tally model.Outcome
			for n, un := range units {
				uo, uhi := o, hi
				if global {
					dkey := un.key
					if !isRLS {
						dkey = "" // the request's decision, whatever the descriptor
					}
					var d *evidence.Decision
					if !un.unknown {
						d = ls.unitDecision(i, dkey) // an unknown unit's decision cannot be told apart
					}
					if len(units) > 1 && uo == model.Rejected {
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
						uo, shadowVisible = model.ShadowRejected, true
					}
					if uo == model.Unknown && !ev.HasDecisions {
						uhi = max(uhi, ls.lastNs) // the RLS may count it late (zombie), unseen without its log
					}
				}
				if suspended {
					uo = model.Unknown
				}
				switch {
				case n == 0:
					tally = uo
				case tally == uo, tally == model.ShadowRejected && uo == model.Admitted:
				case tally == model.Admitted && uo == model.ShadowRejected:
					tally = uo
				default:
					tally = model.Unknown
				}
				eps := r.epochsOf(lo, uhi)
				if len(eps) > 1 {
					uo = model.Unknown // in flight across a state reset: either epoch
				}
				for _, e := range eps {
					ev := model.Event{ID: reqs.IDs.ID(i), Lo: lo, Hi: uhi, Key: un.key + e, Descriptors: descs, Vars: vars, Outcome: uo}
					if un.unknown {
						ev.Key, ev.Descriptors, ev.Vars, ev.KeyUnknown = "", nil, nil, true
					}
					groups[un.g].events = append(groups[un.g].events, ev)
					if ls.keys != nil {
						groups[un.g].idx = append(groups[un.g].idx, int32(i))
					}
				}
				rep.units++
			}
			if o == model.Rejected && !suspended {
				tally = model.Rejected // one of its counters rejected it
			}
			switch tally {
			case model.Admitted, model.ShadowRejected:
				rep.Admitted++
			case model.Rejected:
				rep.Rejected++
			default:
				rep.Unknown++
			}
		}
		if noKey > 0 {
			rep.Status = LimiterNotChecked
			rep.Detail = fmt.Sprintf("%d requests have no %s key (%s)", noKey, r.decl.Key, keyNeeds(r.decl.Key))
			continue
		}
		// RLS decisions that reached no request still counted (zombies).
		if r.decl.Stage == evidence.StageGlobal && ls.join != nil {
			for _, zi := range ls.join.zombieIdx {
				d := &ev.Decisions[zi]
				g, key, ok := r.zombieGroup(d)
				if !ok {
					continue
				}
				o := model.Admitted
				if d.Code == evidence.CodeOverLimit {
					o = model.Rejected
				}
				lo, hi := d.TimeNs, d.TimeNs+ls.join.res-1
				for _, e := range r.epochsOf(lo, hi) {
					groups[g].events = append(groups[g].events, model.Event{ID: zombieID(zi), Lo: lo, Hi: hi, Key: key + e, Outcome: o})
					if ls.keys != nil {
						groups[g].idx = append(groups[g].idx, -1)
					}
				}
				rep.Zombies++
			}
		}
		if rep.Offered == 0 {
			rep.Status, rep.Detail = LimiterNotChecked, "no request reached it"
			continue
		}
		if r.unknownKey > 0 {
			sort.Strings(unkHeaders)
			rep.UnknownKey, rep.UnknownKeyHeaders = r.unknownKey, unkHeaders
			if r.unknownKey == rep.Offered {
				rep.Status, rep.Detail = LimiterNotChecked, unknownKeyDetail(r.unknownKey, rep.Offered, unkHeaders)
				continue
			}
		}
		if rep.Suspended == rep.Offered {
			rep.Status, rep.Detail = LimiterSuspended, "every request lies in a fault window acting on it"
		}
		opts := model.Options{ShadowVisible: shadowVisible, Widen: time.Duration(r.decl.ClockSkewNs)}
		rep.Uncertainty.WidenNs = r.decl.ClockSkewNs
		widths := make([]int64, 0, rep.units+rep.Zombies)
		used := 0
		for _, g := range groups {
			if len(g.events) > 0 {
				used++
			}
		}
		for _, g := range groups {
			if len(g.events) == 0 {
				continue
			}
			res, err := model.Check(g.m, g.events, opts)
			if err != nil {
				rep.Status, rep.Detail = LimiterNotChecked, err.Error()
				break
			}
			rep.merge(res, used == 1)
			for _, e := range g.events {
				widths = append(widths, e.Hi-e.Lo)
			}
			if ls.keys != nil {
				ls.keys.route(k, g.m, g.events, g.idx)
			}
		}
		rep.Total.Offered = rep.units + rep.Zombies // a request across a state reset is an event of both epochs
		if rep.Zombies > 0 {
			// the model's "of the N offered" counts them: say so
			for f, why := range rep.Findings {
				if strings.HasSuffix(why, " offered") {
					rep.Findings[f] = why + fmt.Sprintf(" (%d requests' hits and %d RLS decisions that reached no request)", rep.units, rep.Zombies)
				}
			}
		}
		rep.Uncertainty.setWidths(widths)
		sort.Slice(rep.Buckets, func(a, b int) bool { return rep.Buckets[a].Bucket < rep.Buckets[b].Bucket })
		sort.SliceStable(rep.Windows, func(a, b int) bool {
			if rep.Windows[a].FromNs != rep.Windows[b].FromNs {
				return rep.Windows[a].FromNs < rep.Windows[b].FromNs
			}
			return rep.Windows[a].Bucket < rep.Windows[b].Bucket
		})
	}
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

func isZombieID(id string) bool { return strings.HasPrefix(id, "rls-decision#") }

// zombieGroup returns the model group and key of a late decision at r.
func (r *limiterRun) zombieGroup(d *evidence.Decision) (int, string, bool) {
	if !d.Applied() {
		return 0, "", false
	}
	if r.decl.Model != nil {
		if r.decl.Key == evidence.KeyShared {
			return 0, "all", true
		}
		return 0, "", false
	}
	if d.Domain != r.decl.RLS.Domain || len(d.Descriptor) == 0 || r.cfg == nil {
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

// epochsOf returns the epoch suffixes of an interval: "" before the first
// state reset, " after <fault>" after it; several when it straddles one.
func (r *limiterRun) epochsOf(lo, hi int64) []string {
	if len(r.resets) == 0 {
		return []string{""}
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

// merge adds one model.Check result to the report.
// single tells that it is the limiter's only model (its run-level finding
// is then the total check's).
func (rep *LimiterReport) merge(res *model.Result, single bool) {
	rep.MustAdmit += res.MustAdmit
	rep.MustReject += res.MustReject
	verdict := func(v model.Violation) RequestVerdict {
		return RequestVerdict{ID: v.ID, Model: v.Verdict.String(), Observed: v.Outcome.String(), Bucket: v.Bucket, Why: v.Why}
	}
	add := func(list *[]RequestVerdict, n *int, vs []model.Violation) {
		for _, v := range vs {
			if isZombieID(v.ID) {
				continue
			}
			*n++
			if len(*list) < SampleIDs {
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
	bound := func(b model.Bound) ModelBound {
		return ModelBound{Bucket: b.Bucket, FromNs: b.From, ToNs: b.To, Offered: b.Offered, Min: b.Min, Max: b.Max, Admitted: b.Admitted, Possible: b.Possible}
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

func (u *ModelUncertainty) setWidths(w []int64) {
	if len(w) == 0 {
		return
	}
	slices.Sort(w)
	n := len(w)
	u.MaxWidthNs, u.MedianWidthNs, u.P99WidthNs = w[n-1], w[n/2], w[min(n-1, n*99/100)]
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
func (ls *limiterSet) endToEnd(reqs *evidence.Requests) (b ModelBound, why string) {
	if ls == nil || len(ls.runs) == 0 {
		return ModelBound{}, "no limiter declared"
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
	var out ModelBound
	used := map[int]bool{}
	for t, k := range last {
		if k < 0 {
			return ModelBound{}, fmt.Sprintf("no declared limiter applies to target %s", reqs.Targets[t])
		}
		r := ls.runs[k]
		for t2, ok := range r.applies {
			if ok && last[t2] != k {
				return ModelBound{}, fmt.Sprintf("limiter %s is last on target %s but not on %s: the limiters do not partition the targets",
					r.report.Name, reqs.Targets[t], reqs.Targets[t2])
			}
		}
		if used[k] {
			continue
		}
		used[k] = true
		switch {
		case r.report.Status == LimiterSuspended:
			return ModelBound{}, fmt.Sprintf("limiter %s: every request lies in a fault window", r.report.Name)
		case r.report.Status != LimiterChecked:
			return ModelBound{}, fmt.Sprintf("limiter %s not checked: %s", r.report.Name, r.report.Detail)
		case r.unruled > 0:
			return ModelBound{}, fmt.Sprintf("limiter %s: %d requests matched no RLS rule", r.report.Name, r.unruled)
		case r.multi > 0:
			return ModelBound{}, fmt.Sprintf("limiter %s: %d requests hit several RLS rules", r.report.Name, r.multi)
		}
		tb := r.report.Total
		out.Offered += tb.Offered
		out.Min += tb.Min
		out.Max += tb.Max
		out.Admitted += tb.Admitted
		out.Possible += tb.Possible
	}
	if len(used) == 0 {
		return ModelBound{}, "no target"
	}
	return out, ""
}

// fmtNs renders a duration of ns for check texts.
func fmtNs(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() }
