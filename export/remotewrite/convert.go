package remotewrite

import (
	"math"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/prompb"
)

// FromFamilies converts families (as analyze/report.PrometheusFamilies
// returns them) to remote write series with one sample each at tsMs (unix
// ms), every series with the extra labels added (run_id): a gauge, counter
// or untyped metric is one series of the family's name; a summary is one
// series per quantile (label quantile) plus NAME_sum and NAME_count; a
// histogram is NAME_bucket per bound (label le, +Inf included), NAME_sum
// and NAME_count, as the text exposition format spells them. A metric's
// own label wins over an extra one of the same name. Labels are sorted by
// name, as the remote write spec requires.
func FromFamilies(fams []*dto.MetricFamily, extra map[string]string, tsMs int64) []prompb.TimeSeries {
	var out []prompb.TimeSeries
	for _, f := range fams {
		name := f.GetName()
		for _, m := range f.Metric {
			base := map[string]string{}
			for k, v := range extra {
				base[k] = v
			}
			for _, l := range m.Label {
				base[l.GetName()] = l.GetValue()
			}
			add := func(n string, v float64, kv ...string) {
				ls := make(map[string]string, len(base)+1)
				for k, x := range base {
					ls[k] = x
				}
				for i := 0; i+1 < len(kv); i += 2 {
					ls[kv[i]] = kv[i+1]
				}
				out = append(out, Series(n, ls, v, tsMs))
			}
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m.GetUntyped().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.Quantile {
					add(name, q.GetValue(), model.QuantileLabel, formatFloat(q.GetQuantile()))
				}
				add(name+"_sum", s.GetSampleSum())
				add(name+"_count", float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				inf := false
				for _, b := range h.Bucket {
					inf = inf || math.IsInf(b.GetUpperBound(), +1)
					add(name+"_bucket", float64(b.GetCumulativeCount()), model.BucketLabel, formatFloat(b.GetUpperBound()))
				}
				if !inf {
					add(name+"_bucket", float64(h.GetSampleCount()), model.BucketLabel, "+Inf")
				}
				add(name+"_sum", h.GetSampleSum())
				add(name+"_count", float64(h.GetSampleCount()))
			}
		}
	}
	return out
}

// Series returns the series name{labels} with one sample (value v at tsMs,
// unix ms), its labels sorted by name with __name__ among them.
func Series(name string, labels map[string]string, v float64, tsMs int64) prompb.TimeSeries {
	ls := make([]prompb.Label, 0, len(labels)+1)
	ls = append(ls, prompb.Label{Name: model.MetricNameLabel, Value: name})
	for k, x := range labels {
		if k != model.MetricNameLabel {
			ls = append(ls, prompb.Label{Name: k, Value: x})
		}
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return prompb.TimeSeries{Labels: ls, Samples: []prompb.Sample{{Value: v, Timestamp: tsMs}}}
}

// formatFloat spells a quantile or bucket bound as the text format does
// (0.5, 0.99, 1, +Inf).
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
