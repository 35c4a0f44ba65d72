package lint

import (
	"fmt"
	"github.com/rlbench/rlbench/internal/istio"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	lrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	netlrlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/local_ratelimit/v3"
	upstreamhttpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/rlbench/rlbench/model"
)

// linter accumulates findings over the files of one Lint call.
type linter struct {
	opts     Options
	findings []Finding
	// filters are the ratelimit filters seen, for the domain cross-check.
	filters []filterUse
	// descs are the descriptors routes can produce, for the RLS cross-check.
	descs []descUse
}

// fileState is the per-file decoding state.
type fileState struct {
	name  string
	lines *lineIndex
	// droppedParents holds the parent paths (String) of fields dropped for
	// a decode error, to suppress the "value is required" cascade.
	droppedParents map[string]bool
	// failureModeAllow holds the paths (String) of ratelimit filter configs
	// that carried failure_mode_allow.
	failureModeAllow map[string]bool
}

// filterUse is one envoy.filters.http.ratelimit filter.
type filterUse struct {
	file   string
	line   int
	path   string
	domain string
}

// entryT is one descriptor entry a rate limit action produces. Variable
// entries take a value from the request (client address, header, ...).
type entryT struct {
	key      string
	value    string
	variable bool
	// what describes a variable value, e.g. "<value of header x-tenant>".
	what string
}

func (e entryT) String() string {
	if e.variable {
		return e.key + "=" + e.what
	}
	return fmt.Sprintf("%s=%q", e.key, e.value)
}

// descUse is one descriptor (one route.v3.RateLimit) a route can send.
type descUse struct {
	file    string
	line    int
	path    string
	domain  string
	entries []entryT
}

func (l *linter) add(f *fileState, p path, code string, level Level, msg string) {
	l.findings = append(l.findings, Finding{Code: code, Level: level, File: f.name, Line: f.lines.line(p), Path: p.String(), Message: msg})
}

func (l *linter) addAt(file string, line int, p string, code string, level Level, msg string) {
	l.findings = append(l.findings, Finding{Code: code, Level: level, File: file, Line: line, Path: p, Message: msg})
}

// file lints one bootstrap.
func (l *linter) file(name string, data []byte) {
	if istio.Kind(data) != "" {
		l.istioFile(name, data)
		return
	}
	f := &fileState{name: name, lines: newLineIndex(), failureModeAllow: map[string]bool{}, droppedParents: map[string]bool{}}
	bs := l.decodeFile(f, data)
	if bs == nil {
		return
	}
	l.validate(f, bs, nil)
	var anys []anyNode
	collectAnys(bs.ProtoReflect(), nil, &anys)
	for _, a := range anys {
		l.validate(f, a.msg, a.path)
	}
	if len(bs.GetStaticResources().GetListeners()) == 0 && bs.GetDynamicResources().GetLdsConfig() == nil && bs.GetDynamicResources().GetLdsResourcesLocator() == "" {
		l.add(f, nil, CodeNoListeners, LevelError, "the bootstrap has no listener: neither static_resources.listeners nor LDS (dynamic_resources.lds_config); an Envoy started with it serves no traffic, so nothing is rate limited. Is this the Envoy configuration you meant?")
	}
	c := &checker{l: l, f: f, bs: bs, anys: anys}
	c.run()
}

// checker runs the rate limit checks on one decoded bootstrap.
type checker struct {
	l    *linter
	f    *fileState
	bs   *bootstrapv3.Bootstrap
	anys []anyNode
}

func (c *checker) run() {
	perRouteLocal := false
	for _, a := range c.anys {
		if _, ok := a.msg.(*lrlv3.LocalRateLimit); ok && !a.path.endsWith("http_filters", "typed_config") {
			perRouteLocal = true
		}
	}
	for _, a := range c.anys {
		switch m := a.msg.(type) {
		case *lrlv3.LocalRateLimit:
			c.bucket(m.GetTokenBucket(), a.path.field("token_bucket"))
			for i, d := range m.GetDescriptors() {
				c.bucket(d.GetTokenBucket(), a.path.field("descriptors").index(i).field("token_bucket"))
			}
			c.local(m, a.path, a.path.endsWith("http_filters", "typed_config"), perRouteLocal)
		case *netlrlv3.LocalRateLimit:
			c.bucket(m.GetTokenBucket(), a.path.field("token_bucket"))
		case *hcmv3.HttpConnectionManager:
			c.hcm(m, a.path)
		}
	}
}

// fraction returns a FractionalPercent as a fraction of 1 (capped at 1).
func fraction(fp *typev3.FractionalPercent) float64 {
	if fp == nil {
		return 0
	}
	den := 100.0
	switch fp.GetDenominator() {
	case typev3.FractionalPercent_TEN_THOUSAND:
		den = 10000
	case typev3.FractionalPercent_MILLION:
		den = 1000000
	}
	return min(float64(fp.GetNumerator())/den, 1)
}

func pct(f float64) string { return fmt.Sprintf("%g%%", f*100) }

func runtimeNote(r *corev3.RuntimeFractionalPercent) string {
	if k := r.GetRuntimeKey(); k != "" {
		return fmt.Sprintf(" (runtime key %q can change it)", k)
	}
	return ""
}

// bucket checks one token bucket at p as Envoy validates it
// (model.CheckEnvoyBucket): refusals are E_LOCAL_BUCKET, tokens_per_fill
// above max_tokens W_LOCAL_BUCKET_OVERFILL. What the generated validation
// already reports as E_VALIDATE (tokens_per_fill 0, fill_interval absent
// or not above 0) is not repeated; a nil bucket has nothing to check.
func (c *checker) bucket(tb *typev3.TokenBucket, p path) {
	if tb == nil {
		return
	}
	var tpf *uint32
	if w := tb.GetTokensPerFill(); w != nil {
		v := w.GetValue()
		tpf = &v
	}
	fill := tb.GetFillInterval().AsDuration()
	for _, is := range model.CheckEnvoyBucket(tb.GetMaxTokens(), tpf, fill) {
		switch {
		case !is.Refused:
			c.l.add(c.f, p.field(is.Field), CodeLocalBucketOverfill, LevelWarning, is.Error())
		case is.Field == "tokens_per_fill", is.Field == "fill_interval" && (tb.GetFillInterval() == nil || fill <= 0):
			// E_VALIDATE (token_bucket.proto's generated rules) reports it
		default:
			c.l.add(c.f, p.field(is.Field), CodeLocalBucket, LevelError, "Envoy refuses this token bucket: "+is.Error())
		}
	}
}

// local checks one LocalRateLimit (HTTP filter level or per-route).
// Semantics: envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit,
// filter_enabled/filter_enforced "Defaults to 0% of requests for safety".
func (c *checker) local(m *lrlv3.LocalRateLimit, p path, filterLevel, perRouteInFile bool) {
	rp := p.trimTypedConfig()
	hasLimits := m.GetTokenBucket() != nil || len(m.GetDescriptors()) > 0 || len(m.GetRateLimits()) > 0
	if !hasLimits {
		if filterLevel && !perRouteInFile {
			c.l.add(c.f, rp, CodeLocalNoBucket, LevelWarning, "local rate limit has no token_bucket, descriptors or rate_limits and no per-route typed_per_filter_config in this file: it limits nothing")
		}
		return
	}
	en := m.GetFilterEnabled()
	switch {
	case en == nil:
		c.l.add(c.f, rp, CodeLocalNotEnabled, LevelError, "local rate limit without filter_enabled: Envoy defaults it to 0% of requests, so the filter never evaluates a request (a no-op; no http_local_rate_limit.enabled/ok/rate_limited stats). Set filter_enabled.default_value to 100/HUNDRED")
		return
	case fraction(en.GetDefaultValue()) == 0:
		c.l.add(c.f, p.field("filter_enabled"), CodeLocalNotEnabled, LevelError, "filter_enabled.default_value is 0%: the local rate limit never evaluates a request (a no-op)"+runtimeNote(en))
		return
	case fraction(en.GetDefaultValue()) < 1:
		c.l.add(c.f, p.field("filter_enabled"), CodeLocalPartial, LevelWarning, fmt.Sprintf("filter_enabled is %s: only that share of requests is counted against the bucket%s", pct(fraction(en.GetDefaultValue())), runtimeNote(en)))
	}
	enf := m.GetFilterEnforced()
	switch {
	case enf == nil:
		c.l.add(c.f, rp, CodeLocalShadow, LevelWarning, "local rate limit without filter_enforced: Envoy defaults it to 0%, so requests over the limit are only counted (http_local_rate_limit.rate_limited) and still admitted; no 429 is sent (shadow mode)")
	case fraction(enf.GetDefaultValue()) < 1:
		c.l.add(c.f, p.field("filter_enforced"), CodeLocalShadow, LevelWarning, fmt.Sprintf("filter_enforced is %s: the other requests over the limit are admitted (shadow)%s", pct(fraction(enf.GetDefaultValue())), runtimeNote(enf)))
	}
}

// hcm checks the ratelimit filters of one HTTP connection manager.
func (c *checker) hcm(h *hcmv3.HttpConnectionManager, p path) {
	for i, hf := range h.GetHttpFilters() {
		if hf.GetTypedConfig() == nil {
			continue
		}
		cfg, err := hf.GetTypedConfig().UnmarshalNew()
		if err != nil {
			continue
		}
		if rl, ok := cfg.(*rlv3.RateLimit); ok {
			c.global(h, p, hf.GetName(), rl, p.field("http_filters").index(i))
		}
	}
}

// global checks one envoy.filters.http.ratelimit filter (fp is its
// http_filters[i] path). Semantics: rate_limit.proto of go-control-plane v1.40.
func (c *checker) global(h *hcmv3.HttpConnectionManager, hp path, name string, rl *rlv3.RateLimit, fp path) {
	tp := fp.field("typed_config")
	c.l.filters = append(c.l.filters, filterUse{file: c.f.name, line: c.f.lines.line(fp), path: fp.String(), domain: rl.GetDomain()})
	// A missing rate_limit_service is an E_VALIDATE finding (required in v1.40).
	if svc := rl.GetRateLimitService(); svc != nil {
		if v := svc.GetTransportApiVersion(); v != corev3.ApiVersion_V3 {
			c.l.add(c.f, tp.field("rate_limit_service"), CodeRLSTransport, LevelError, fmt.Sprintf("rate_limit_service.transport_api_version is %s: current Envoy rejects V2 and AUTO (\"V2 (and AUTO) xDS transport protocol versions are deprecated\"); set transport_api_version: V3", v))
		}
		if eg := svc.GetGrpcService().GetEnvoyGrpc(); eg != nil {
			c.rlsCluster(eg.GetClusterName(), fp)
		}
	}
	if rl.GetTimeout() == nil {
		consequence := "which are admitted (fail-open: failure_mode_deny is not set)"
		if rl.GetFailureModeDeny() {
			consequence = "which are answered with status_on_error (failure_mode_deny is set)"
		}
		c.l.add(c.f, fp, CodeRLSTimeoutDefault, LevelWarning, "ratelimit filter without timeout: Envoy waits only 20 ms for the RLS, so a burst or a slow Redis turns into RLS errors (ratelimit.error), "+consequence)
	}
	if !c.f.failureModeAllow[tp.String()] {
		switch {
		case rl.GetFailureModeDenyPercent() != nil && fraction(rl.GetFailureModeDenyPercent().GetDefaultValue()) < 1:
			c.l.add(c.f, tp.field("failure_mode_deny_percent"), CodeFailOpen, LevelWarning, fmt.Sprintf("partly fail-open: when the RLS is unreachable only %s of requests are denied, the rest are admitted%s", pct(fraction(rl.GetFailureModeDenyPercent().GetDefaultValue())), runtimeNote(rl.GetFailureModeDenyPercent())))
		case rl.GetFailureModeDenyPercent() != nil:
		case !rl.GetFailureModeDeny():
			c.l.add(c.f, fp, CodeFailOpen, LevelWarning, "fail-open: failure_mode_deny is false (Envoy's default), so when the RLS is unreachable or times out every request is admitted (counted as ratelimit.failure_mode_allowed)")
		}
	}
	if e := rl.GetFilterEnabled(); e != nil && fraction(e.GetDefaultValue()) < 1 {
		c.l.add(c.f, tp.field("filter_enabled"), CodeGlobalPartial, LevelWarning, fmt.Sprintf("filter_enabled is %s: the other requests are not sent to the RLS%s", pct(fraction(e.GetDefaultValue())), runtimeNote(e)))
	}
	if e := rl.GetFilterEnforced(); e != nil && fraction(e.GetDefaultValue()) < 1 {
		c.l.add(c.f, tp.field("filter_enforced"), CodeGlobalPartial, LevelWarning, fmt.Sprintf("filter_enforced is %s: the other over-limit decisions are not enforced (shadow)%s", pct(fraction(e.GetDefaultValue())), runtimeNote(e)))
	}
	c.descriptors(h, hp, name, rl, fp)
}

// rlsCluster checks that the RLS gRPC cluster exists statically and speaks HTTP/2.
func (c *checker) rlsCluster(name string, fp path) {
	for i, cl := range c.bs.GetStaticResources().GetClusters() {
		if cl.GetName() != name {
			continue
		}
		if ok, why := clusterHTTP2(cl); !ok {
			c.l.add(c.f, path{}.field("static_resources").field("clusters").index(i), CodeRLSClusterNotHTTP2, LevelError,
				fmt.Sprintf("cluster %q is the rate limit service's gRPC cluster but %s; Envoy then sends the gRPC calls over HTTP/1.1 and every RLS call fails (ratelimit.error). Add typed_extension_protocol_options[\"envoy.extensions.upstreams.http.v3.HttpProtocolOptions\"].explicit_http_config.http2_protocol_options: {}", name, why))
		}
		return
	}
	if c.bs.GetDynamicResources().GetCdsConfig() != nil || c.bs.GetDynamicResources().GetCdsResourcesLocator() != "" {
		c.l.add(c.f, fp, CodeRLSClusterMissing, LevelWarning, fmt.Sprintf("rate limit service cluster %q is not a static cluster; it must come from CDS (not checked for HTTP/2)", name))
		return
	}
	c.l.add(c.f, fp, CodeRLSClusterMissing, LevelError, fmt.Sprintf("rate limit service cluster %q does not exist in static_resources.clusters (Envoy refuses the config: unknown gRPC client cluster)", name))
}

const httpProtocolOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// clusterHTTP2 reports whether cl explicitly uses HTTP/2 upstream, and why not.
func clusterHTTP2(cl *clusterv3.Cluster) (bool, string) {
	if cl.GetHttp2ProtocolOptions() != nil {
		return true, ""
	}
	a, ok := cl.GetTypedExtensionProtocolOptions()[httpProtocolOptionsKey]
	if !ok {
		return false, "it has no http2_protocol_options (typed_extension_protocol_options[\"" + httpProtocolOptionsKey + "\"] is absent)"
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return false, "its HttpProtocolOptions do not decode"
	}
	o, ok := m.(*upstreamhttpv3.HttpProtocolOptions)
	if !ok {
		return false, "its HttpProtocolOptions entry has type " + string(a.MessageName())
	}
	switch {
	case o.GetExplicitHttpConfig().GetHttp2ProtocolOptions() != nil:
		return true, ""
	case o.GetExplicitHttpConfig() != nil:
		return false, "its explicit_http_config selects HTTP/1.1"
	case o.GetAutoConfig() != nil && cl.GetTransportSocket() != nil:
		return true, "" // ALPN over TLS can negotiate h2
	case o.GetAutoConfig() != nil:
		return false, "it uses auto_config without TLS, which means HTTP/1.1 (no ALPN)"
	case o.GetUseDownstreamProtocolConfig() != nil:
		return false, "it uses use_downstream_protocol_config, which has no downstream for gRPC client calls"
	}
	return false, "its HttpProtocolOptions select no upstream protocol (HTTP/1.1 by default)"
}

// rlUse is one route.v3.RateLimit that a ratelimit filter evaluates.
type rlUse struct {
	rl     *routev3.RateLimit
	path   path
	domain string
	// cluster is the route's target cluster, "" when unknown (virtual host level).
	cluster string
}

// descriptors collects the rate limits the filter evaluates and records the
// descriptors they produce. Envoy semantics (rate_limit.proto v1.40): the
// filter-level rate_limits, when set, replace the virtual host and route ones;
// otherwise VirtualHost.rate_limits and RouteAction.rate_limits with the
// filter's stage apply; a RateLimitPerRoute in typed_per_filter_config may add
// rate_limits and override the domain.
func (c *checker) descriptors(h *hcmv3.HttpConnectionManager, hp path, name string, rl *rlv3.RateLimit, fp path) {
	var uses []rlUse
	otherStage := 0
	stageOK := func(r *routev3.RateLimit) bool {
		if r.GetStage().GetValue() == rl.GetStage() {
			return true
		}
		otherStage++
		return false
	}
	if len(rl.GetRateLimits()) > 0 {
		for i, r := range rl.GetRateLimits() {
			uses = append(uses, rlUse{rl: r, path: fp.field("typed_config").field("rate_limits").index(i), domain: rl.GetDomain()})
		}
	} else {
		if h.GetRds() != nil {
			c.l.add(c.f, fp, CodeRDSNotChecked, LevelInfo, "routes come from RDS: the descriptors they produce are not checked")
			return
		}
		rc := h.GetRouteConfig()
		rcp := hp.field("route_config")
		for vi, vh := range rc.GetVirtualHosts() {
			vp := rcp.field("virtual_hosts").index(vi)
			for i, r := range vh.GetRateLimits() {
				if stageOK(r) {
					uses = append(uses, rlUse{rl: r, path: vp.field("rate_limits").index(i), domain: rl.GetDomain()})
				}
			}
			uses = append(uses, perRoute(vh.GetTypedPerFilterConfig(), name, vp, rl.GetDomain(), "")...)
			for ri, rt := range vh.GetRoutes() {
				rp := vp.field("routes").index(ri)
				cluster := rt.GetRoute().GetCluster()
				for i, r := range rt.GetRoute().GetRateLimits() {
					if stageOK(r) {
						uses = append(uses, rlUse{rl: r, path: rp.field("route").field("rate_limits").index(i), domain: rl.GetDomain(), cluster: cluster})
					}
				}
				uses = append(uses, perRoute(rt.GetTypedPerFilterConfig(), name, rp, rl.GetDomain(), cluster)...)
			}
		}
	}
	if len(uses) == 0 {
		msg := fmt.Sprintf("no route, virtual host or filter rate_limits at stage %d: no descriptor is produced, so Envoy never calls the RLS and nothing is limited", rl.GetStage())
		if otherStage > 0 {
			msg += fmt.Sprintf(" (%d rate_limits have another stage)", otherStage)
		}
		c.l.add(c.f, fp, CodeNoDescriptors, LevelWarning, msg)
		return
	}
	useRemote := h.GetUseRemoteAddress().GetValue()
	for _, u := range uses {
		var entries []entryT
		checkable := true
		for ai, a := range u.rl.GetActions() {
			ap := u.path.field("actions").index(ai)
			e, ok := c.action(a, ap, u.cluster, useRemote)
			if !ok {
				checkable = false
				continue
			}
			entries = append(entries, e)
		}
		if checkable && len(entries) > 0 {
			c.l.descs = append(c.l.descs, descUse{file: c.f.name, line: c.f.lines.line(u.path), path: u.path.String(), domain: u.domain, entries: entries})
		}
	}
}

// perRoute returns the rate_limits of a RateLimitPerRoute config for filter
// name found in a typed_per_filter_config map (possibly wrapped in
// envoy.config.route.v3.FilterConfig).
func perRoute(tpfc map[string]*anypb.Any, name string, p path, domain, cluster string) []rlUse {
	a, ok := tpfc[name]
	if !ok {
		return nil
	}
	cp := p.field("typed_per_filter_config").key(name)
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil
	}
	if fc, ok := m.(*routev3.FilterConfig); ok {
		if m, err = fc.GetConfig().UnmarshalNew(); err != nil {
			return nil
		}
		cp = cp.field("config")
	}
	pr, ok := m.(*rlv3.RateLimitPerRoute)
	if !ok {
		return nil
	}
	if pr.GetDomain() != "" {
		domain = pr.GetDomain()
	}
	var out []rlUse
	for i, r := range pr.GetRateLimits() {
		out = append(out, rlUse{rl: r, path: cp.field("rate_limits").index(i), domain: domain, cluster: cluster})
	}
	return out
}

// action returns the descriptor entry one rate limit action produces
// (route.v3.RateLimit.Action semantics), reporting client-controlled values.
// ok is false for actions whose entry cannot be modelled (extensions).
func (c *checker) action(a *routev3.RateLimit_Action, ap path, cluster string, useRemote bool) (entryT, bool) {
	or := func(k, def string) string {
		if k == "" {
			return def
		}
		return k
	}
	switch {
	case a.GetGenericKey() != nil:
		g := a.GetGenericKey()
		return entryT{key: or(g.GetDescriptorKey(), "generic_key"), value: g.GetDescriptorValue()}, true
	case a.GetHeaderValueMatch() != nil:
		g := a.GetHeaderValueMatch()
		return entryT{key: or(g.GetDescriptorKey(), "header_match"), value: g.GetDescriptorValue()}, true
	case a.GetQueryParameterValueMatch() != nil:
		g := a.GetQueryParameterValueMatch()
		return entryT{key: or(g.GetDescriptorKey(), "query_match"), value: g.GetDescriptorValue()}, true
	case a.GetRemoteAddressMatch() != nil:
		g := a.GetRemoteAddressMatch()
		return entryT{key: or(g.GetDescriptorKey(), "remote_address_match"), value: g.GetDescriptorValue()}, true
	case a.GetRemoteAddress() != nil, a.GetMaskedRemoteAddress() != nil:
		key := "remote_address"
		if a.GetMaskedRemoteAddress() != nil {
			key = "masked_remote_address"
		}
		if !useRemote {
			c.l.add(c.f, ap, CodeRemoteAddressXFF, LevelWarning, key+" descriptor in a connection manager without use_remote_address: true: Envoy takes the client address from x-forwarded-for, which the client sets, so each forged address gets its own quota")
		}
		return entryT{key: key, variable: true, what: "<client address>"}, true
	case a.GetRequestHeaders() != nil:
		g := a.GetRequestHeaders()
		c.l.add(c.f, ap, CodeClientHeader, LevelWarning, fmt.Sprintf("descriptor %s takes its value from request header %q, which the client controls: a client gets fresh quota by changing the header (or no limit by omitting it%s), unless a trusted proxy in front sets or strips it", g.GetDescriptorKey(), g.GetHeaderName(), map[bool]string{true: ", skip_if_absent", false: ""}[g.GetSkipIfAbsent()]))
		return entryT{key: g.GetDescriptorKey(), variable: true, what: fmt.Sprintf("<header %s>", g.GetHeaderName())}, true
	case a.GetQueryParameters() != nil:
		g := a.GetQueryParameters()
		c.l.add(c.f, ap, CodeClientHeader, LevelWarning, fmt.Sprintf("descriptor %s takes its value from query parameter %q, which the client controls: a client gets fresh quota by changing it", g.GetDescriptorKey(), g.GetQueryParameterName()))
		return entryT{key: g.GetDescriptorKey(), variable: true, what: fmt.Sprintf("<query %s>", g.GetQueryParameterName())}, true
	case a.GetDestinationCluster() != nil:
		if cluster != "" {
			return entryT{key: "destination_cluster", value: cluster}, true
		}
		return entryT{key: "destination_cluster", variable: true, what: "<route cluster>"}, true
	case a.GetSourceCluster() != nil:
		if n := c.bs.GetNode().GetCluster(); n != "" {
			return entryT{key: "source_cluster", value: n}, true
		}
		return entryT{key: "source_cluster", variable: true, what: "<--service-cluster>"}, true
	case a.GetDynamicMetadata() != nil:
		return entryT{key: a.GetDynamicMetadata().GetDescriptorKey(), variable: true, what: "<dynamic metadata>"}, true
	case a.GetMetadata() != nil:
		return entryT{key: a.GetMetadata().GetDescriptorKey(), variable: true, what: "<metadata>"}, true
	}
	return entryT{}, false
}

// describe renders entries as "(k=v, k2=v2)".
func describe(es []entryT) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
