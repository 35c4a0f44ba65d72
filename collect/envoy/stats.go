// Package envoy collects and parses what an Envoy proxy exposes about rate
// limiting: the admin /stats endpoint in its three renderings (text,
// ?format=json, /stats/prometheus) and the /server_info document. The parsed
// records (envoyrec.Snapshot) and the access log codec are evidence/envoyrec's.
//
// The package is a library: it never prints or exits. Parsers take an
// io.Reader plus a source name that is used in errors of the form
// "<name>:<line>: <message>"; Fetch takes a context and an *http.Client.
//
// Stat names and their meaning follow Envoy's admin documentation
// (docs/root/operations/admin.rst), source/server/admin/stats_render.cc, the
// local rate limit filter (envoy.filters.http.local_ratelimit), the global
// rate limit filter (envoy.filters.http.ratelimit) and Envoy's tag extractors
// (source/common/config/well_known_names.cc) for the Prometheus names.
package envoy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// lineErr is a parse error of the source name at line.
func lineErr(name string, line int, format string, args ...any) *envoyrec.LineError {
	return &envoyrec.LineError{Source: name, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var promSampleLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+\S+`)

// DetectFormat guesses the rendering of a /stats body: FormatJSON when the
// first non-blank byte is '{'; FormatPrometheus when a "# TYPE " or "# HELP "
// line appears or the first non-comment line looks like a Prometheus sample
// ("name{...} value" or "name value" without ": "); FormatText otherwise
// (including empty input).
func DetectFormat(data []byte) envoyrec.Format {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return envoyrec.FormatJSON
	}
	sc := bufio.NewScanner(bytes.NewReader(trimmed))
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	firstChecked := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "# TYPE ") || strings.HasPrefix(line, "# HELP ") {
			return envoyrec.FormatPrometheus
		}
		if strings.HasPrefix(line, "#") || firstChecked {
			continue
		}
		firstChecked = true
		if !strings.Contains(line, ": ") && !strings.HasSuffix(line, ":") && promSampleLine.MatchString(line) {
			return envoyrec.FormatPrometheus
		}
	}
	return envoyrec.FormatText
}

// maxLine bounds one line of input (histogram lines can be long).
const maxLine = 16 << 20

// Parse parses one /stats response read from r. name identifies the source in
// errors ("<name>:<line>: ..."). format selects the rendering; "" means
// detect it with DetectFormat. At most MaxResponseBytes are read. A body
// with no stat at all (empty, or only blank and comment lines, or
// {"stats":[]}) is an error: every Envoy has server.* stats, so it is a
// broken capture, never a snapshot of zeros.
//
// Text (GET /stats): each line is split at the first ": " (stat names never
// contain ": " but may contain '.', '|', ':' and '/'); the value is an
// unsigned integer (counter/gauge), a double-quoted string (text readout),
// "No recorded values", a quantile summary "P0(i,c) P25(i,c) ..." (values
// may be "nan") or a bucket list "B0.5(i,c) ..."; "name:" followed by
// indented "totals=", "intervals=" and "summary=" lines is the detailed
// histogram form. Blank lines and lines starting with '#' (never emitted by
// Envoy, but common in annotated captures) are skipped. Any other line is an
// error; see ParseLenient to skip such lines instead.
//
// JSON (?format=json): {"stats":[...]} where each element is
// {"name":n,"value":number|string} or the single {"histograms":...} element
// (summary object with supported_quantiles/computed_quantiles, detailed object
// with supported_percentiles/details, or an array of {name,buckets} for
// cumulative/disjoint). Elements with neither shape are ignored. A top-level
// "histograms" key (the shape shown in admin.rst) is accepted too.
//
// Prometheus (/stats/prometheus, parsed with expfmt; errors carry expfmt's
// line number): these series are stored under their dotted Envoy names when
// their labels are exactly the ones listed (tag extractors of
// well_known_names.cc):
//
//	envoy_http_local_rate_limit_<ctr>{envoy_local_http_ratelimit_prefix="p"} -> p.http_local_rate_limit.<ctr>   (Envoy with PR #23088)
//	envoy_<p>_http_local_rate_limit_<ctr>{}                                 -> p.http_local_rate_limit.<ctr>   (older; p has '.' sanitised to '_')
//	envoy_http_local_rate_<p>_limit_<ctr>{}                                 -> p.http_local_rate_limit.<ctr>   (old name as a PR #21912 reviewer read the broken extractor; unverified)
//	envoy_cluster_ratelimit_[<sp>_]<ctr>{envoy_cluster_name="c"}            -> cluster.c.ratelimit.[<sp>.]<ctr>
//	envoy_cluster_[internal_|external_]upstream_rq{envoy_response_code="429",envoy_cluster_name="c"} -> cluster.c.[internal.|external.]upstream_rq_429
//	envoy_cluster_[..._]upstream_rq_xx{envoy_response_code_class="4",envoy_cluster_name="c"}         -> cluster.c.[...]upstream_rq_4xx
//	envoy_cluster_[..._]upstream_rq_completed{envoy_cluster_name="c"}        -> cluster.c.[...]upstream_rq_completed
//	envoy_cluster_{membership_total,membership_healthy,upstream_rq_total,upstream_cx_total}{envoy_cluster_name="c"} -> cluster.c.<suffix>
//
// where <ctr> is enabled|ok|rate_limited|enforced (local) or
// ok|over_limit|error|failure_mode_allowed (global). Other counters, gauges
// and untyped series go to Values under promKey form (name, or
// name{k="v",...} sorted); a gauge with a text_value label (?text_readouts)
// goes to TextReadouts; histograms and summaries go to Histograms. A counter
// or gauge value that is not an unsigned integer is an error. A Prometheus
// cluster name whose dots broke Envoy's cluster tag extraction (e.g. Istio's
// outbound|8081||ratelimit.default.svc.cluster.local without Istio's own tag
// rules) yields series that are kept unmapped.
//
// Local, Global and Upstream are then derived from the dotted names in Values.
func Parse(r io.Reader, name string, format envoyrec.Format) (*envoyrec.Snapshot, error) {
	snap, _, err := parse(r, name, format, false)
	return snap, err
}

// ParseLenient is Parse for captures that mix Envoy stats with other text
// (e.g. a terminal session, or a non-Envoy proxy that emulates Envoy stat
// names such as the osm-edge/Pipy sidecar): in the text rendering, lines that
// are not valid Envoy stat lines are skipped and returned as LineErrors
// instead of failing the parse. JSON and Prometheus input is parsed strictly,
// as by Parse. err is non-nil only for read errors or strict-format errors.
func ParseLenient(r io.Reader, name string, format envoyrec.Format) (snap *envoyrec.Snapshot, skipped []*envoyrec.LineError, err error) {
	return parse(r, name, format, true)
}

func parse(r io.Reader, name string, format envoyrec.Format, lenient bool) (*envoyrec.Snapshot, []*envoyrec.LineError, error) {
	r = boundedio.NewReader(context.Background(), r, name, MaxResponseBytes)
	if format == "" {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: read: %w", name, err)
		}
		format = DetectFormat(data)
		r = bytes.NewReader(data)
	}
	snap := newSnapshot(format)
	var skipped []*envoyrec.LineError
	var err error
	switch format {
	case envoyrec.FormatText:
		skipped, err = parseText(r, name, snap, lenient)
	case envoyrec.FormatJSON:
		err = parseJSON(r, name, snap)
	case envoyrec.FormatPrometheus:
		err = parsePrometheus(r, name, snap)
	default:
		return nil, nil, fmt.Errorf("%s: unknown stats format %q (want text, json or prometheus)", name, format)
	}
	if err != nil {
		return nil, skipped, err
	}
	if len(snap.Values)+len(snap.TextReadouts)+len(snap.Histograms) == 0 {
		// Envoy always has server.* stats: an empty body is a broken
		// capture, not a snapshot in which every counter is 0.
		return nil, skipped, lineErr(name, 0, "no stats in the %s body (empty, or only blank and comment lines): not an Envoy /stats response", format)
	}
	derive(snap)
	return snap, skipped, nil
}

func newSnapshot(format envoyrec.Format) *envoyrec.Snapshot {
	return &envoyrec.Snapshot{
		Schema:       envoyrec.SnapshotSchema,
		Format:       format,
		Values:       map[string]uint64{},
		TextReadouts: map[string]string{},
		Histograms:   map[string]envoyrec.Histogram{},
	}
}

var (
	reLocal = regexp.MustCompile(`^(.+)\.http_local_rate_limit\.(enabled|ok|rate_limited|enforced)$`)
	// reGlobal's group 1 is everything before ".ratelimit." up to the suffix;
	// splitting is done by splitGlobal.
	reGlobalSuffix = regexp.MustCompile(`^cluster\.(.+)\.(ok|over_limit|error|failure_mode_allowed)$`)
	reCode         = regexp.MustCompile(`^cluster\.(.+)\.upstream_rq_(\d{3}|[1-5]xx|completed)$`)
)

// clusterMarkers are per-cluster stat suffixes whose prefix unambiguously
// names a cluster; they are used to resolve dotted-name ambiguities.
var clusterMarkers = []string{".membership_total", ".upstream_rq_total", ".upstream_cx_total", ".upstream_rq_completed", ".membership_healthy"}

// derive fills Local, Global and Upstream from Values and normalises empty maps.
func derive(s *envoyrec.Snapshot) {
	sort.Strings(s.Inexact)
	known := map[string]bool{}
	for name := range s.Values {
		if !strings.HasPrefix(name, "cluster.") {
			continue
		}
		for _, m := range clusterMarkers {
			if strings.HasSuffix(name, m) {
				c := strings.TrimSuffix(strings.TrimPrefix(name, "cluster."), m)
				// cluster.<c>.internal.upstream_rq_completed names cluster <c>.
				if m == ".upstream_rq_completed" {
					if t, ok := strings.CutSuffix(c, ".internal"); ok && !known[c] {
						c = t
					} else if t, ok := strings.CutSuffix(c, ".external"); ok && !known[c] {
						c = t
					}
				}
				if c != "" {
					known[c] = true
				}
			}
		}
	}

	locals := map[string]*envoyrec.LocalRateLimit{}
	type gkey struct{ cluster, prefix string }
	globals := map[gkey]*envoyrec.GlobalRateLimit{}
	type ccounts struct{ plain, internal, external map[string]uint64 }
	codes := map[string]*ccounts{}

	for name, v := range s.Values {
		if m := reLocal.FindStringSubmatch(name); m != nil {
			l := locals[m[1]]
			if l == nil {
				l = &envoyrec.LocalRateLimit{Prefix: m[1]}
				locals[m[1]] = l
			}
			switch m[2] {
			case "enabled":
				l.Enabled = v
			case "ok":
				l.OK = v
			case "rate_limited":
				l.RateLimited = v
			case "enforced":
				l.Enforced = v
			}
			continue
		}
		if m := reGlobalSuffix.FindStringSubmatch(name); m != nil {
			if cluster, prefix, ok := splitGlobal(m[1], known); ok {
				k := gkey{cluster, prefix}
				g := globals[k]
				if g == nil {
					g = &envoyrec.GlobalRateLimit{Cluster: cluster, StatPrefix: prefix}
					globals[k] = g
				}
				switch m[2] {
				case "ok":
					g.OK = v
				case "over_limit":
					g.OverLimit = v
				case "error":
					g.Error = v
				case "failure_mode_allowed":
					g.FailureModeAllowed = v
				}
				continue
			}
		}
		if m := reCode.FindStringSubmatch(name); m != nil {
			cluster, scope := splitScope(m[1], known)
			if scope == "canary" || scope == "zone" {
				continue
			}
			c := codes[cluster]
			if c == nil {
				c = &ccounts{plain: map[string]uint64{}, internal: map[string]uint64{}, external: map[string]uint64{}}
				codes[cluster] = c
			}
			switch scope {
			case "internal":
				c.internal[m[2]] = v
			case "external":
				c.external[m[2]] = v
			default:
				c.plain[m[2]] = v
			}
		}
	}

	s.Local = s.Local[:0:0]
	for _, l := range locals {
		s.Local = append(s.Local, *l)
	}
	sort.Slice(s.Local, func(i, j int) bool { return s.Local[i].Prefix < s.Local[j].Prefix })

	s.Global = s.Global[:0:0]
	for _, g := range globals {
		s.Global = append(s.Global, *g)
	}
	sort.Slice(s.Global, func(i, j int) bool {
		if s.Global[i].Cluster != s.Global[j].Cluster {
			return s.Global[i].Cluster < s.Global[j].Cluster
		}
		return s.Global[i].StatPrefix < s.Global[j].StatPrefix
	})

	s.Upstream = s.Upstream[:0:0]
	for cluster, c := range codes {
		cc := envoyrec.ClusterCodes{Cluster: cluster, Codes: map[string]uint64{}}
		for k, v := range c.plain {
			cc.Codes[k] = v
		}
		for _, split := range []map[string]uint64{c.internal, c.external} {
			for k, v := range split {
				if _, ok := c.plain[k]; !ok {
					cc.Codes[k] += v
				}
			}
		}
		if len(c.internal) > 0 {
			cc.Internal = c.internal
		}
		if len(c.external) > 0 {
			cc.External = c.external
		}
		s.Upstream = append(s.Upstream, cc)
	}
	sort.Slice(s.Upstream, func(i, j int) bool { return s.Upstream[i].Cluster < s.Upstream[j].Cluster })

	if len(s.Local) == 0 {
		s.Local = nil
	}
	if len(s.Global) == 0 {
		s.Global = nil
	}
	if len(s.Upstream) == 0 {
		s.Upstream = nil
	}
}

// splitGlobal splits "<cluster>.ratelimit[.<prefix>]" (the part of a global
// rate limit stat between "cluster." and the counter name). See
// GlobalRateLimit for the ambiguity rule.
func splitGlobal(mid string, known map[string]bool) (cluster, prefix string, ok bool) {
	type cand struct{ cluster, prefix string }
	var cands []cand // from the last ".ratelimit" occurrence to the first
	if c, found := strings.CutSuffix(mid, ".ratelimit"); found && c != "" {
		cands = append(cands, cand{c, ""})
	}
	const sep = ".ratelimit."
	for end := len(mid); ; {
		i := strings.LastIndex(mid[:end], sep)
		if i <= 0 {
			break
		}
		if p := mid[i+len(sep):]; p != "" {
			cands = append(cands, cand{mid[:i], p})
		}
		end = i
	}
	if len(cands) == 0 {
		return "", "", false
	}
	for _, c := range cands {
		if known[c.cluster] {
			return c.cluster, c.prefix, true
		}
	}
	return cands[0].cluster, cands[0].prefix, true
}

var reZone = regexp.MustCompile(`^(.+)\.zone\.[^.]+\.[^.]+$`)

// splitScope splits "<cluster>[.internal|.external|.canary|.zone.<from>.<to>]"
// (Envoy's per-code cluster stats, see Envoy's cluster statistics docs). A
// cluster whose own name ends like a scope is recognised when it is known.
// canary and zone counters are subsets of the plain ones and are not reported.
func splitScope(mid string, known map[string]bool) (cluster, scope string) {
	if known[mid] {
		return mid, ""
	}
	if m := reZone.FindStringSubmatch(mid); m != nil {
		return m[1], "zone"
	}
	for _, sc := range []string{"internal", "external", "canary"} {
		if c, ok := strings.CutSuffix(mid, "."+sc); ok && c != "" {
			return c, sc
		}
	}
	return mid, ""
}
