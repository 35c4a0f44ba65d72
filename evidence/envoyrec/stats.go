package envoyrec

import (
	"fmt"
	"sort"
	"time"
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
	// Inexact lists, sorted, the Values keys whose value is not Envoy's
	// exactly: Prometheus text carries numbers as float64, which from
	// MaxExactPromValue (2^53) on no longer holds every whole number
	// (2^53+1 reads as 2^53; a value past 2^64−1 is stored as 2^64−1). A comparison reading one of them is
	// unknown. Absent for text and JSON input and in earlier evidence.
	Inexact []string `json:"inexact,omitempty"`
}

// MaxExactPromValue is 2^53: a counter read from Prometheus text (float64)
// below it is exact; from it on Snapshot.Inexact lists it.
const MaxExactPromValue = 1 << 53

// IsInexact reports whether Values[name] is listed in Inexact.
func (s *Snapshot) IsInexact(name string) bool {
	if s == nil {
		return false
	}
	i := sort.SearchStrings(s.Inexact, name)
	return i < len(s.Inexact) && s.Inexact[i] == name
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
