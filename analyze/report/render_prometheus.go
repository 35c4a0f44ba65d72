package report

import (
	"io"
	"sort"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/rlbench/rlbench/evidence"
)

// Metric names of WritePrometheus. Every scenario series carries the labels
// scenario and repeat ("0" when the scenario is not repeated).
const (
	MetricReportTimestamp = "rlbench_report_timestamp_seconds"
	MetricStatus          = "rlbench_status"
	MetricScenarioStatus  = "rlbench_scenario_status"
	MetricSent            = "rlbench_scenario_sent"
	MetricAdmitted        = "rlbench_scenario_admitted"
	MetricResponses       = "rlbench_scenario_responses"
	MetricReceipts        = "rlbench_scenario_receipts"
	MetricIntendedLimit   = "rlbench_scenario_intended_limit"
	MetricOverAdmission   = "rlbench_scenario_over_admission"
	MetricIntendedWindow  = "rlbench_scenario_intended_limit_window_seconds"
	MetricBound           = "rlbench_scenario_bound"
	MetricDuration        = "rlbench_scenario_duration_seconds"
	MetricReconciliation  = "rlbench_scenario_reconciliation"
	MetricLatency         = "rlbench_scenario_latency_seconds"
)

// WritePrometheus writes the verdicts and key figures in the Prometheus text
// exposition format (version 0.0.4), for a node-exporter textfile collector:
//
//   - rlbench_report_timestamp_seconds: when the report was generated;
//   - rlbench_status{status}: 1 for the run's verdict, 0 for the others;
//   - rlbench_scenario_status{scenario,repeat,status}: the same per scenario run;
//   - rlbench_scenario_sent, _admitted, _receipts: counts;
//   - rlbench_scenario_responses{class}: responses per class;
//   - rlbench_scenario_intended_limit and rlbench_scenario_over_admission{bound="min"|"max"}
//     (admitted − intended, negative for under-admission), when the scenario has an intended limit;
//   - rlbench_scenario_intended_limit_window_seconds: the intended limit's window, when it has one
//     (evidence.IntendedLimit.Per): the limit is then per window and the over-admission the worst window's;
//   - rlbench_scenario_bound: the configured bound, when limits are described;
//   - rlbench_scenario_duration_seconds: first send to last response;
//   - rlbench_scenario_reconciliation{kind}: lost, leaked, duplicate,
//     phantom and without_id receipts, and sent_unknown ones when there are
//     any (a cut client record: Receipts.SentUnknown);
//   - rlbench_scenario_latency_seconds{class}: a summary of the client-side
//     latency (quantiles 0.5, 0.9, 0.99, 0.999 and 1, sum and count).
//
// Families are written in name order, series in scenario order.
func WritePrometheus(w io.Writer, rep *Report) error {
	for _, f := range PrometheusFamilies(rep) {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return err
		}
	}
	return nil
}

// PrometheusFamilies returns the families WritePrometheus writes, in name
// order (series in scenario order), for other outputs of the same figures
// (the remote write of export/remotewrite). The caller owns the result.
func PrometheusFamilies(rep *Report) []*dto.MetricFamily {
	fams := map[string]*dto.MetricFamily{}
	family := func(name, help string, t dto.MetricType) *dto.MetricFamily {
		f, ok := fams[name]
		if !ok {
			f = &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: t.Enum()}
			fams[name] = f
		}
		return f
	}
	labels := func(kv ...string) []*dto.LabelPair {
		var out []*dto.LabelPair
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, &dto.LabelPair{Name: proto.String(kv[i]), Value: proto.String(kv[i+1])})
		}
		return out
	}
	gauge := func(name, help string, v float64, kv ...string) {
		f := family(name, help, dto.MetricType_GAUGE)
		f.Metric = append(f.Metric, &dto.Metric{Label: labels(kv...), Gauge: &dto.Gauge{Value: proto.Float64(v)}})
	}
	oneOf := func(name, help, status string, kv ...string) {
		for _, st := range []string{evidence.Pass, evidence.Fail, evidence.NotRun} {
			v := 0.0
			if st == status {
				v = 1
			}
			gauge(name, help, v, append(append([]string{}, kv...), "status", st)...)
		}
	}
	if t, err := time.Parse(time.RFC3339, rep.GeneratedAt); err == nil {
		gauge(MetricReportTimestamp, "When the rlbench report was generated, unix seconds.", float64(t.Unix()))
	}
	oneOf(MetricStatus, "The run's verdict: 1 for its status, 0 for the others.", rep.Status)
	for _, s := range rep.Scenarios {
		sc := []string{"scenario", s.Name, "repeat", strconv.Itoa(s.Repeat)}
		with := func(kv ...string) []string { return append(append([]string{}, sc...), kv...) }
		oneOf(MetricScenarioStatus, "A scenario run's verdict: 1 for its status, 0 for the others.", s.Status, sc...)
		gauge(MetricSent, "Requests sent.", float64(s.Totals.Sent), sc...)
		gauge(MetricAdmitted, "Requests admitted (2xx).", float64(s.Totals.N[evidence.ClassAdmitted]), sc...)
		for cl := evidence.Class(0); cl < evidence.NumClasses; cl++ {
			n, _ := s.Totals.Get(cl.String())
			gauge(MetricResponses, "Responses by class.", float64(n), with("class", cl.String())...)
		}
		gauge(MetricReceipts, "Backend receipts.", float64(s.Receipts.Total), sc...)
		if o := s.OverAdmission; o != nil {
			gauge(MetricIntendedLimit, "The admissions meant for the whole backend.", float64(o.Intended), sc...)
			gauge(MetricOverAdmission, "Admitted minus the intended limit (negative: under-admission); min and max differ by the requests without a response.", float64(o.Min), with("bound", "min")...)
			gauge(MetricOverAdmission, "Admitted minus the intended limit (negative: under-admission); min and max differ by the requests without a response.", float64(o.Max), with("bound", "max")...)
			if o.PerNs > 0 {
				gauge(MetricIntendedWindow, "The intended limit's window, seconds: the limit and the over-admission are then per window, the worst window's.",
					time.Duration(o.PerNs).Seconds(), sc...)
			}
		}
		if s.Bound != nil {
			gauge(MetricBound, "The most admissions the configured limiters allow over the attack's duration.", float64(s.Bound.Allowed), sc...)
		}
		gauge(MetricDuration, "First send to last response, seconds.", time.Duration(max(s.EndNs-s.StartNs, 0)).Seconds(), sc...)
		rc := s.Receipts
		kinds := []struct {
			kind string
			n    int
		}{{"lost", rc.AdmittedWithoutReceipt}, {"leaked", rc.RejectedWithReceipt}, {"duplicate", rc.Duplicates}, {"phantom", rc.Phantom}, {"without_id", rc.WithoutID}}
		if rc.SentUnknown > 0 { // only after a cut client record (Receipts.SentUnknown)
			kinds = append(kinds, struct {
				kind string
				n    int
			}{"sent_unknown", rc.SentUnknown})
		}
		for _, k := range kinds {
			gauge(MetricReconciliation, "Receipt reconciliation anomalies by kind.", float64(k.n), with("kind", k.kind)...)
		}
		if s.Latency != nil {
			f := family(MetricLatency, "Client-side latency by response class, seconds.", dto.MetricType_SUMMARY)
			for _, l := range s.Latency.Classes {
				var qs []*dto.Quantile
				for _, q := range []struct {
					q  float64
					ns int64
				}{{0.5, l.P50Ns}, {0.9, l.P90Ns}, {0.99, l.P99Ns}, {0.999, l.P999Ns}, {1, l.MaxNs}} {
					qs = append(qs, &dto.Quantile{Quantile: proto.Float64(q.q), Value: proto.Float64(time.Duration(q.ns).Seconds())})
				}
				f.Metric = append(f.Metric, &dto.Metric{Label: labels(with("class", l.Class)...), Summary: &dto.Summary{
					SampleCount: proto.Uint64(uint64(l.Count)), SampleSum: proto.Float64(time.Duration(l.MeanNs).Seconds() * float64(l.Count)), Quantile: qs}})
			}
		}
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*dto.MetricFamily, 0, len(names))
	for _, n := range names {
		out = append(out, fams[n])
	}
	return out
}
