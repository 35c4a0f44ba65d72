// Package envoy collects and parses what an Envoy proxy exposes about rate
// limiting: the admin /stats endpoint in its three renderings (text,
// ?format=json, /stats/prometheus), the /server_info document, and access
// logs (Envoy's default text format, Istio's default text format and JSON
// access logs).
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
	"time"

	"github.com/rlbench/rlbench/internal/boundedio"
)

// Format names one rendering of Envoy's admin /stats endpoint.
type Format string

// The three renderings of Envoy's admin stats.
const (
	// FormatText is GET /stats: one "name: value" line per stat.
	FormatText Format = "text"
	// FormatJSON is GET /stats?format=json: {"stats":[...]}.
	FormatJSON Format = "json"
	// FormatPrometheus is GET /stats/prometheus (== /stats?format=prometheus),
	// Prometheus text exposition format 0.0.4.
	FormatPrometheus Format = "prometheus"
)

// SnapshotSchema is the value of Snapshot.Schema written by this package.
const SnapshotSchema = "rlbench.envoy-stats/v1"

// Snapshot is one parsed /stats response. Its JSON form is written to
// stats/<proxy>.<label>.json in an evidence directory.
type Snapshot struct {
	// Schema is always SnapshotSchema ("rlbench.envoy-stats/v1").
	Schema string `json:"schema"`
	// Proxy names the Envoy instance (set by the caller).
	Proxy string `json:"proxy,omitempty"`
	// Label is the moment of the snapshot, e.g. "before" or "after" (set by the caller).
	Label string `json:"label,omitempty"`
	// Admin is the admin base URL the snapshot came from (set by Fetch).
	Admin string `json:"admin,omitempty"`
	// Format is the rendering that was parsed.
	Format Format `json:"format"`
	// TakenNs is the unix time in ns at which the response was received (set by Fetch).
	TakenNs int64 `json:"taken_ns,omitempty"`
	// Values holds counters and gauges by Envoy's dotted stat name (text and
	// JSON renderings cannot tell counters from gauges). For Prometheus input,
	// series whose dotted name is known (see Parse) are stored under that
	// dotted name; every other series under its Prometheus name, followed by
	// its labels as {k="v",...} sorted by label name when it has any.
	Values map[string]uint64 `json:"values"`
	// TextReadouts holds text readouts (text: name: "str"; JSON: string
	// values; Prometheus ?text_readouts: gauge with a text_value label).
	TextReadouts map[string]string `json:"text_readouts,omitempty"`
	// Histograms holds histograms by dotted name (text/JSON) or Prometheus
	// series key (Prometheus).
	Histograms map[string]Histogram `json:"histograms,omitempty"`
	// Local lists local rate limit filter counters, sorted by Prefix.
	Local []LocalRateLimit `json:"local_rate_limit,omitempty"`
	// Global lists global rate limit filter counters, sorted by Cluster then StatPrefix.
	Global []GlobalRateLimit `json:"global_rate_limit,omitempty"`
	// Upstream lists per-cluster response code counters, sorted by Cluster.
	Upstream []ClusterCodes `json:"upstream,omitempty"`
}

// UptimeStat is Envoy's server.uptime gauge, "current server uptime in
// seconds" (docs/root/configuration/observability/statistics.rst).
// source/server/server.cc sets it to time(nullptr) − original_start_time_
// when it flushes stats (every stats_flush_interval, or on each admin
// request with stats_flush_on_admin), so it lags the true uptime by up to
// a flush interval plus the whole-second rounding, and it keeps counting
// across a hot restart (original_start_time_ is the first epoch's), whose
// counters carry over too. A full restart starts it again from 0.
const UptimeStat = "server.uptime"

// promUptime is UptimeStat's Prometheus name (Envoy's /stats/prometheus
// renders dotted names with '_' and the envoy_ prefix).
const promUptime = "envoy_server_uptime"

// DefaultStatsFlushInterval is Envoy's bootstrap stats_flush_interval when
// not configured (api/envoy/config/bootstrap/v3/bootstrap.proto): the most
// UptimeStat lags behind the true uptime on a default configuration.
const DefaultStatsFlushInterval = 5 * time.Second

// Uptime returns the snapshot's UptimeStat in seconds, from any rendering
// (Values["server.uptime"], or "envoy_server_uptime" for Prometheus input);
// ok is false when the snapshot has none.
func (s *Snapshot) Uptime() (seconds uint64, ok bool) {
	if v, ok := s.Values[UptimeStat]; ok {
		return v, true
	}
	v, ok := s.Values[promUptime]
	return v, ok
}

// Histogram is one Envoy histogram as rendered by /stats. Which fields are set
// depends on the rendering and on the ?histogram_buckets= query parameter
// (stats_render.cc):
//   - unset/summary: Quantiles ("P0(i,c) P25(i,c) ..." in text,
//     computed_quantiles in JSON);
//   - cumulative/disjoint: Buckets ("B0.5(i,c) B1(i,c) ..." in text, "buckets"
//     in JSON); whether the counts are cumulative or disjoint is decided by the
//     query used, not visible in the output;
//   - detailed: Totals, Intervals and Quantiles;
//   - Prometheus: Buckets (cumulative counts, no interval), Count and Sum.
//
// NoValues is true for "name: No recorded values" (histogram never used).
type Histogram struct {
	NoValues  bool       `json:"no_values,omitempty"`
	Quantiles []Quantile `json:"quantiles,omitempty"`
	Buckets   []Bucket   `json:"buckets,omitempty"`
	// Totals and Intervals are the detailed buckets (lower_bound, width, count),
	// over the process lifetime and over the last stats flush interval.
	Totals    []DetailBucket `json:"totals,omitempty"`
	Intervals []DetailBucket `json:"intervals,omitempty"`
	// Count and Sum are the Prometheus _count and _sum of the series (nil otherwise).
	Count *uint64  `json:"count,omitempty"`
	Sum   *float64 `json:"sum,omitempty"`
}

// Quantile is one computed quantile of a histogram. Percent is in 0..100
// (P99.5 -> 99.5). Interval covers the last stats flush interval
// (stats_flush_interval, default 5 s), Cumulative the process lifetime. Both
// are in the histogram's unit (e.g. ms for *_time stats). A nil pointer means
// Envoy rendered nan (text) or null (JSON): no samples in that period.
type Quantile struct {
	Percent    float64  `json:"percent"`
	Interval   *float64 `json:"interval"`
	Cumulative *float64 `json:"cumulative"`
}

// Bucket is one histogram bucket with its upper bound (in the histogram's
// unit). Interval is nil for Prometheus input, which has no interval view.
type Bucket struct {
	UpperBound float64 `json:"upper_bound"`
	Interval   *uint64 `json:"interval,omitempty"`
	Cumulative uint64  `json:"cumulative"`
}

// DetailBucket is one bucket of ?histogram_buckets=detailed output:
// samples in [LowerBound, LowerBound+Width) counted Count times.
type DetailBucket struct {
	LowerBound float64 `json:"lower_bound"`
	Width      float64 `json:"width"`
	Count      uint64  `json:"count"`
}

// LocalRateLimit holds the counters of one HTTP local rate limit filter
// instance, <stat_prefix>.http_local_rate_limit.{enabled,ok,rate_limited,enforced}
// (envoy.filters.http.local_ratelimit): Enabled = requests evaluated
// (= OK + RateLimited), OK = token available, RateLimited = no token
// (enforced or not), Enforced = 429 actually sent. A counter absent from the
// source stays 0.
type LocalRateLimit struct {
	Prefix      string `json:"prefix"`
	Enabled     uint64 `json:"enabled"`
	OK          uint64 `json:"ok"`
	RateLimited uint64 `json:"rate_limited"`
	Enforced    uint64 `json:"enforced"`
}

// GlobalRateLimit holds the counters of the HTTP global rate limit filter
// (envoy.filters.http.ratelimit) charged to the route's target cluster:
// cluster.<cluster>.ratelimit[.<stat_prefix>].{ok,over_limit,error,failure_mode_allowed}.
// They count RLS calls, not requests. StatPrefix is "" unless the filter's
// stat_prefix (Envoy >= ~1.29) is set.
//
// A dotted cluster name together with a stat_prefix is ambiguous in text:
// "cluster.a.ratelimit.b.ratelimit.ok" may be cluster "a" with prefix
// "b.ratelimit" or cluster "a.ratelimit.b" without prefix. Parse resolves it
// by preferring a split whose cluster is otherwise known in the snapshot
// (it has a membership_total, upstream_rq_total, upstream_cx_total or
// upstream_rq_completed stat), and otherwise the split at the LAST
// ".ratelimit." (the shortest prefix, so a dot-free prefix when there is one).
type GlobalRateLimit struct {
	Cluster            string `json:"cluster"`
	StatPrefix         string `json:"stat_prefix,omitempty"`
	OK                 uint64 `json:"ok"`
	OverLimit          uint64 `json:"over_limit"`
	Error              uint64 `json:"error"`
	FailureModeAllowed uint64 `json:"failure_mode_allowed"`
}

// ClusterCodes holds cluster.<cluster>.[internal.|external.]upstream_rq_<x>
// counters, x being a 3-digit code ("429"), a class ("4xx") or "completed".
// Codes holds the plain counters (Envoy's plain counter already covers
// internal and external requests); when only internal/external counters exist
// for a key, Codes holds their sum. Internal and External keep the split
// counters as found. Remember that the global rate limit filter charges its
// 429s to these counters although the backend never saw those requests.
type ClusterCodes struct {
	Cluster  string            `json:"cluster"`
	Codes    map[string]uint64 `json:"codes"`
	Internal map[string]uint64 `json:"internal,omitempty"`
	External map[string]uint64 `json:"external,omitempty"`
}

// LineError is a parse error located in a named source. Its text is
// "<Source>:<Line>: <Msg>" (Line 0 omits the line).
type LineError struct {
	Source string
	Line   int
	Msg    string
}

// Error returns "<Source>:<Line>: <Msg>", or "<Source>: <Msg>" when Line is 0.
func (e *LineError) Error() string {
	if e.Line <= 0 {
		return fmt.Sprintf("%s: %s", e.Source, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg)
}

func lineErr(name string, line int, format string, args ...any) *LineError {
	return &LineError{Source: name, Line: line, Msg: fmt.Sprintf(format, args...)}
}

var promSampleLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+\S+`)

// DetectFormat guesses the rendering of a /stats body: FormatJSON when the
// first non-blank byte is '{'; FormatPrometheus when a "# TYPE " or "# HELP "
// line appears or the first non-comment line looks like a Prometheus sample
// ("name{...} value" or "name value" without ": "); FormatText otherwise
// (including empty input).
func DetectFormat(data []byte) Format {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return FormatJSON
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
			return FormatPrometheus
		}
		if strings.HasPrefix(line, "#") || firstChecked {
			continue
		}
		firstChecked = true
		if !strings.Contains(line, ": ") && !strings.HasSuffix(line, ":") && promSampleLine.MatchString(line) {
			return FormatPrometheus
		}
	}
	return FormatText
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
func Parse(r io.Reader, name string, format Format) (*Snapshot, error) {
	snap, _, err := parse(r, name, format, false)
	return snap, err
}

// ParseLenient is Parse for captures that mix Envoy stats with other text
// (e.g. a terminal session, or a non-Envoy proxy that emulates Envoy stat
// names such as the osm-edge/Pipy sidecar): in the text rendering, lines that
// are not valid Envoy stat lines are skipped and returned as LineErrors
// instead of failing the parse. JSON and Prometheus input is parsed strictly,
// as by Parse. err is non-nil only for read errors or strict-format errors.
func ParseLenient(r io.Reader, name string, format Format) (snap *Snapshot, skipped []*LineError, err error) {
	return parse(r, name, format, true)
}

func parse(r io.Reader, name string, format Format, lenient bool) (*Snapshot, []*LineError, error) {
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
	var skipped []*LineError
	var err error
	switch format {
	case FormatText:
		skipped, err = parseText(r, name, snap, lenient)
	case FormatJSON:
		err = parseJSON(r, name, snap)
	case FormatPrometheus:
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
	snap.derive()
	return snap, skipped, nil
}

func newSnapshot(format Format) *Snapshot {
	return &Snapshot{
		Schema:       SnapshotSchema,
		Format:       format,
		Values:       map[string]uint64{},
		TextReadouts: map[string]string{},
		Histograms:   map[string]Histogram{},
	}
}

// Value returns the counter or gauge stored under name (a dotted Envoy stat
// name, or a Prometheus series key for unmapped Prometheus series) and
// whether it exists. A nil Snapshot has no values.
func (s *Snapshot) Value(name string) (uint64, bool) {
	if s == nil {
		return 0, false
	}
	v, ok := s.Values[name]
	return v, ok
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
func (s *Snapshot) derive() {
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

	locals := map[string]*LocalRateLimit{}
	type gkey struct{ cluster, prefix string }
	globals := map[gkey]*GlobalRateLimit{}
	type ccounts struct{ plain, internal, external map[string]uint64 }
	codes := map[string]*ccounts{}

	for name, v := range s.Values {
		if m := reLocal.FindStringSubmatch(name); m != nil {
			l := locals[m[1]]
			if l == nil {
				l = &LocalRateLimit{Prefix: m[1]}
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
					g = &GlobalRateLimit{Cluster: cluster, StatPrefix: prefix}
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
		cc := ClusterCodes{Cluster: cluster, Codes: map[string]uint64{}}
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
