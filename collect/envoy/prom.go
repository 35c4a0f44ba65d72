package envoy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/internal/promtext"
)

// Prometheus name patterns. Envoy renders a stat as
// "envoy_" + <tag-extracted name with '.' -> '_'> and the extracted tags as
// labels (well_known_names.cc; prometheus_stats.cc).
var (
	// After the tag extractor for the local limiter's stat prefix
	// (PR #21912/#23088, rule "$.http_local_rate_limit.**"):
	// envoy_http_local_rate_limit_<ctr>{envoy_local_http_ratelimit_prefix="<prefix>"}.
	rePromLocalNew = regexp.MustCompile(`^envoy_http_local_rate_limit_(enabled|ok|rate_limited|enforced)$`)
	// Before it: envoy_<prefix>_http_local_rate_limit_<ctr>{} (prefix sanitised, '.' -> '_').
	rePromLocalOld = regexp.MustCompile(`^envoy_(.+)_http_local_rate_limit_(enabled|ok|rate_limited|enforced)$`)
	// The old name as a reviewer of PR #21912 read the broken extractor:
	// envoy_http_local_rate_<prefix>_limit_<ctr>{} (unverified; parsed for safety).
	rePromLocalReviewer = regexp.MustCompile(`^envoy_http_local_rate_(.+)_limit_(enabled|ok|rate_limited|enforced)$`)
	// envoy_cluster_ratelimit_[<stat_prefix>_]<ctr>{envoy_cluster_name="<cluster>"}.
	rePromGlobal = regexp.MustCompile(`^envoy_cluster_ratelimit_(?:(.+)_)?(ok|over_limit|error|failure_mode_allowed)$`)
	// envoy_cluster_[internal_|external_]upstream_rq{,_xx,_completed}.
	rePromCodes = regexp.MustCompile(`^envoy_cluster_(?:(internal|external)_)?upstream_rq(_xx|_completed)?$`)
)

// clusterMarkerSuffix are dot-free per-cluster stats mapped back to
// cluster.<name>.<suffix> (they also identify known clusters, see GlobalRateLimit).
var clusterMarkerSuffix = map[string]bool{"membership_total": true, "membership_healthy": true, "upstream_rq_total": true, "upstream_cx_total": true}

const (
	labelCluster     = "envoy_cluster_name"
	labelLocalPrefix = "envoy_local_http_ratelimit_prefix"
	labelCode        = "envoy_response_code"
	labelCodeClass   = "envoy_response_code_class"
	labelTextValue   = "text_value"
)

// dottedPromName maps a Prometheus series back to Envoy's dotted stat name
// when the mapping is known; ok is false otherwise. Only series whose labels
// are exactly the ones consumed by the mapping are mapped.
func dottedPromName(name string, labels map[string]string) (string, bool) {
	has := func(keys ...string) bool {
		if len(labels) != len(keys) {
			return false
		}
		for _, k := range keys {
			if _, ok := labels[k]; !ok {
				return false
			}
		}
		return true
	}
	if m := rePromLocalNew.FindStringSubmatch(name); m != nil && has(labelLocalPrefix) && labels[labelLocalPrefix] != "" {
		return labels[labelLocalPrefix] + ".http_local_rate_limit." + m[1], true
	}
	if m := rePromLocalOld.FindStringSubmatch(name); m != nil && len(labels) == 0 {
		return m[1] + ".http_local_rate_limit." + m[2], true
	}
	if m := rePromLocalReviewer.FindStringSubmatch(name); m != nil && len(labels) == 0 {
		return m[1] + ".http_local_rate_limit." + m[2], true
	}
	if m := rePromGlobal.FindStringSubmatch(name); m != nil && has(labelCluster) && labels[labelCluster] != "" {
		mid := "cluster." + labels[labelCluster] + ".ratelimit."
		if m[1] != "" {
			mid += m[1] + "."
		}
		return mid + m[2], true
	}
	if suffix, ok := strings.CutPrefix(name, "envoy_cluster_"); ok && clusterMarkerSuffix[suffix] && has(labelCluster) && labels[labelCluster] != "" {
		return "cluster." + labels[labelCluster] + "." + suffix, true
	}
	if m := rePromCodes.FindStringSubmatch(name); m != nil {
		base := "cluster." + labels[labelCluster] + "."
		if m[1] != "" {
			base += m[1] + "."
		}
		switch m[2] {
		case "":
			if has(labelCluster, labelCode) && labels[labelCluster] != "" && isDigits(labels[labelCode]) && len(labels[labelCode]) == 3 {
				return base + "upstream_rq_" + labels[labelCode], true
			}
		case "_xx":
			c := labels[labelCodeClass]
			if has(labelCluster, labelCodeClass) && labels[labelCluster] != "" && len(c) == 1 && c[0] >= '1' && c[0] <= '5' {
				return base + "upstream_rq_" + c + "xx", true
			}
		case "_completed":
			if has(labelCluster) && labels[labelCluster] != "" {
				return base + "upstream_rq_completed", true
			}
		}
	}
	return "", false
}

// promKey renders name{k="v",...} with labels sorted by name (promtext.Key).
func promKey(name string, labels map[string]string) string { return promtext.Key(name, labels) }

func parsePrometheus(r io.Reader, name string, snap *envoyrec.Snapshot) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return lineErr(name, 0, "read: %v", err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return lineErr(name, pe.Line, "prometheus: %s", pe.Msg)
		}
		return lineErr(name, 0, "prometheus: %v", err)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, fname := range names {
		fam := fams[fname]
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if err := addPromMetric(snap, fname, fam.GetType(), labels, m); err != nil {
				return lineErr(name, promtext.Line(data, fname, labels), "prometheus series %s: %v", promKey(fname, labels), err)
			}
		}
	}
	return nil
}

func addPromMetric(snap *envoyrec.Snapshot, fname string, typ dto.MetricType, labels map[string]string, m *dto.Metric) error {
	switch typ {
	case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
		h := m.GetHistogram()
		out := envoyrec.Histogram{Buckets: []envoyrec.Bucket{}}
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), +1) {
				continue // equals the count
			}
			if ub := b.GetUpperBound(); math.IsNaN(ub) || math.IsInf(ub, -1) {
				return fmt.Errorf("bucket bound le=%q is not a number", strconv.FormatFloat(ub, 'g', -1, 64))
			}
			cu := b.GetCumulativeCount()
			if cu == 0 && b.GetCumulativeCountFloat() > 0 {
				cu = uint64(b.GetCumulativeCountFloat())
			}
			out.Buckets = append(out.Buckets, envoyrec.Bucket{UpperBound: b.GetUpperBound(), Cumulative: cu})
		}
		count := h.GetSampleCount()
		if count == 0 && h.GetSampleCountFloat() > 0 {
			count = uint64(h.GetSampleCountFloat())
		}
		sum := h.GetSampleSum()
		if math.IsNaN(sum) || math.IsInf(sum, 0) {
			return fmt.Errorf("histogram sum %g is not finite", sum)
		}
		out.Count, out.Sum = &count, &sum
		snap.Histograms[promKey(fname, labels)] = out
		return nil
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		out := envoyrec.Histogram{}
		for _, q := range s.GetQuantile() {
			if qq := q.GetQuantile(); !(qq >= 0 && qq <= 1) {
				return fmt.Errorf("quantile %g is not in [0, 1]", qq)
			}
			v := q.GetValue()
			var vp *float64
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				vp = &v
			}
			out.Quantiles = append(out.Quantiles, envoyrec.Quantile{Percent: q.GetQuantile() * 100, Cumulative: vp})
		}
		count, sum := s.GetSampleCount(), s.GetSampleSum()
		if math.IsNaN(sum) || math.IsInf(sum, 0) {
			return fmt.Errorf("summary sum %g is not finite", sum)
		}
		out.Count, out.Sum = &count, &sum
		snap.Histograms[promKey(fname, labels)] = out
		return nil
	}
	var v float64
	switch typ {
	case dto.MetricType_COUNTER:
		v = m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		v = m.GetGauge().GetValue()
	default:
		v = m.GetUntyped().GetValue()
	}
	if tv, ok := labels[labelTextValue]; ok && typ != dto.MetricType_COUNTER {
		rest := make(map[string]string, len(labels)-1)
		for k, val := range labels {
			if k != labelTextValue {
				rest[k] = val
			}
		}
		snap.TextReadouts[promKey(fname, rest)] = tv
		return nil
	}
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v != math.Trunc(v) {
		return fmt.Errorf("value %s is not an unsigned integer", strconv.FormatFloat(v, 'g', -1, 64))
	}
	key, ok := dottedPromName(fname, labels)
	if !ok {
		key = promKey(fname, labels)
	}
	if _, dup := snap.Values[key]; dup {
		return fmt.Errorf("maps to %q, which is already set", key)
	}
	if v >= envoyrec.MaxExactPromValue {
		// float64 at or past 2^53 (2^53+1 reads as 2^53): not Envoy's exact uint64 (and past 2^64-1
		// not one at all); kept, marked, and compared as unknown
		snap.Inexact = append(snap.Inexact, key)
		if v >= math.MaxUint64 {
			snap.Values[key] = math.MaxUint64
			return nil
		}
	}
	snap.Values[key] = uint64(v)
	return nil
}
