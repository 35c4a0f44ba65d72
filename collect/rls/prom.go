package rls

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/internal/promtext"
)

// RuleID names one rule series of the RLS built-in statsd_exporter mapping
// (src/stats/prom: ratelimit_service_rate_limit_<suffix>{domain,key1[,key2]}).
// Keys deeper than two are dropped by the mapper and their series merged.
type RuleID struct {
	Domain string `json:"domain"`
	Key1   string `json:"key1"`
	Key2   string `json:"key2,omitempty"`
}

// StatKey is the statsd-style key "<domain>.<key1>[.<key2>]".
func (id RuleID) StatKey() string {
	s := id.Domain + "." + id.Key1
	if id.Key2 != "" {
		s += "." + id.Key2
	}
	return s
}

// PromSnapshot is one parsed RLS /metrics page (USE_PROMETHEUS=true). The
// embedded evidence.RLSPrometheus is what rls/metrics.<label>.json records.
type PromSnapshot struct {
	evidence.RLSPrometheus
	// Families holds every metric family, keyed by name.
	Families map[string]*dto.MetricFamily `json:"-"`
	// Rules holds the mapped per-rule counters.
	Rules map[RuleID]evidence.RLSKeyCounters `json:"-"`
}

var (
	rePromRule     = regexp.MustCompile(`^ratelimit_service_rate_limit_(total_hits|within_limit|over_limit|near_limit|shadow_mode|over_limit_with_local_cache)$`)
	rePromNotFound = regexp.MustCompile(`^ratelimit_service_rate_limit_(.+)_domain_not_found$`)
)

// ParsePrometheus parses a Prometheus text exposition (the RLS /metrics page)
// with expfmt's TextParser (UTF-8 name validation) and extracts the RLS
// families. At most 64 MiB are read. A syntax error names name and the line;
// so does a value of an extracted family that is not a count (NaN, ±Inf or
// negative: promtext.CheckCount), with the series.
func ParsePrometheus(r io.Reader, name string) (*PromSnapshot, error) {
	data, err := boundedio.ReadAll(context.Background(), r, name, maxMetricsBody)
	if err != nil {
		return nil, err
	}
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %s", name, pe.Line, pe.Msg)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &PromSnapshot{RLSPrometheus: evidence.RLSPrometheus{
		Name: name, ShouldRateLimitErrors: map[string]float64{}, TotalRequests: map[string]float64{},
		DomainNotFound: map[string]float64{}, ResponseTime: map[string]evidence.RLSHistogram{}, RedisPool: map[string]float64{},
	}, Families: fams, Rules: map[RuleID]evidence.RLSKeyCounters{}}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	// count returns the value of m, or an error naming the series and its line.
	count := func(fname string, m *dto.Metric, v float64) (float64, error) {
		if err := promtext.CheckCount(v); err != nil {
			l := labels(m)
			return 0, fmt.Errorf("%s:%d: series %s: %v", name, promtext.Line(data, fname, l), promtext.Key(fname, l), err)
		}
		return v, nil
	}
	sum := func(fname string, f *dto.MetricFamily) (float64, error) {
		var t float64
		for _, m := range f.GetMetric() {
			v, err := count(fname, m, value(m))
			if err != nil {
				return 0, err
			}
			t += v
		}
		return t, nil
	}
	for _, fname := range names {
		f := fams[fname]
		switch {
		case rePromRule.MatchString(fname):
			suffix := rePromRule.FindStringSubmatch(fname)[1]
			for _, m := range f.GetMetric() {
				v, err := count(fname, m, value(m))
				if err != nil {
					return nil, err
				}
				l := labels(m)
				id := RuleID{Domain: l["domain"], Key1: l["key1"], Key2: l["key2"]}
				kc := s.Rules[id]
				setCounter(&kc, suffix, v, true)
				s.Rules[id] = kc
			}
		case rePromNotFound.MatchString(fname):
			d := rePromNotFound.FindStringSubmatch(fname)[1]
			v, err := sum(fname, f)
			if err != nil {
				return nil, err
			}
			s.DomainNotFound[d] += v
		case fname == "ratelimit_service_should_rate_limit_error", fname == "ratelimit_service_total_requests":
			dst, label := s.ShouldRateLimitErrors, "err_type"
			if fname == "ratelimit_service_total_requests" {
				dst, label = s.TotalRequests, "grpc_method"
			}
			for _, m := range f.GetMetric() {
				v, err := count(fname, m, value(m))
				if err != nil {
					return nil, err
				}
				dst[labels(m)[label]] += v
			}
		case fname == "ratelimit_service_config_load_success", fname == "ratelimit_service_config_load_error",
			fname == "ratelimit_service_global_shadow_mode", strings.HasPrefix(fname, "ratelimit_redis_pool_"):
			v, err := sum(fname, f)
			if err != nil {
				return nil, err
			}
			switch fname {
			case "ratelimit_service_config_load_success":
				s.ConfigLoadSuccess = v
			case "ratelimit_service_config_load_error":
				s.ConfigLoadError = v
			case "ratelimit_service_global_shadow_mode":
				s.GlobalShadowMode = v
			default:
				s.RedisPool[strings.TrimPrefix(fname, "ratelimit_redis_pool_")] = v
			}
		case fname == "ratelimit_service_response_time_seconds":
			for _, m := range f.GetMetric() {
				if h := m.GetHistogram(); h != nil {
					v, err := count(fname, m, h.GetSampleSum())
					if err != nil {
						return nil, err
					}
					s.ResponseTime[labels(m)["grpc_method"]] = evidence.RLSHistogram{Sum: v, Count: h.GetSampleCount()}
				}
			}
		}
	}
	return s, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// value returns a counter, gauge or untyped sample value.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// Value returns the value of the family's series whose labels equal want
// exactly (nil or empty for an unlabelled series) and whether it exists.
func (s *PromSnapshot) Value(family string, want map[string]string) (float64, bool) {
	f := s.Families[family]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		l := labels(m)
		if len(l) != len(want) {
			continue
		}
		eq := true
		for k, v := range want {
			if l[k] != v {
				eq = false
				break
			}
		}
		if eq {
			return value(m), true
		}
	}
	return 0, false
}

// FamilyNames returns the sorted family names.
func (s *PromSnapshot) FamilyNames() []string {
	out := make([]string, 0, len(s.Families))
	for k := range s.Families {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RLSCounters converts the snapshot to evidence.RLSCounters keyed "<domain>.<key1>[.<key2>]".
func (s *PromSnapshot) RLSCounters() *evidence.RLSCounters {
	c := newCounters(s.Name)
	for id, kc := range s.Rules {
		prev := c.Keys[id.StatKey()]
		for _, f := range []struct {
			n string
			v float64
		}{{"total_hits", kc.TotalHits}, {"within_limit", kc.WithinLimit}, {"over_limit", kc.OverLimit},
			{"near_limit", kc.NearLimit}, {"shadow_mode", kc.ShadowMode}, {"over_limit_with_local_cache", kc.OverLimitWithLocalCache}} {
			setCounter(&prev, f.n, f.v, true)
		}
		c.Keys[id.StatKey()] = prev
	}
	c.RedisErrors = s.ShouldRateLimitErrors["redis_error"]
	c.ServiceErrors = s.ShouldRateLimitErrors["service_error"]
	for _, v := range s.TotalRequests {
		c.TotalRequests += v
	}
	c.ConfigLoadSuccess, c.ConfigLoadError = s.ConfigLoadSuccess, s.ConfigLoadError
	for d, v := range s.DomainNotFound {
		c.DomainNotFound[d] = v
	}
	return c
}

// maxMetricsBody bounds what Fetch reads from /metrics.
const maxMetricsBody = 64 << 20

// Fetch GETs url (the RLS PROMETHEUS_ADDR + PROMETHEUS_PATH, default
// :9090/metrics) with client (http.DefaultClient if nil) and returns the raw
// body and its parse, named url redacted (evidence.RedactURL: the
// snapshot's Name). A non-200 status, a body over 64 MiB or a parse error is
// an error naming url, redacted too.
func Fetch(ctx context.Context, client *http.Client, rawURL string) ([]byte, *PromSnapshot, error) {
	if client == nil {
		client = http.DefaultClient
	}
	url := evidence.RedactURL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, evidence.RedactError(err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, evidence.RedactError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", url, err)
	}
	if len(body) > maxMetricsBody {
		return nil, nil, fmt.Errorf("%s: body larger than %d bytes", url, maxMetricsBody)
	}
	if resp.StatusCode != http.StatusOK {
		return body, nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	snap, err := ParsePrometheus(bytes.NewReader(body), url)
	if err != nil {
		return body, nil, err
	}
	return body, snap, nil
}
