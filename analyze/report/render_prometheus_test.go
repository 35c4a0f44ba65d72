package report

import (
	"bytes"
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rlbench/rlbench/evidence"
)

// TestPrometheusParsesBack parses the textfile with prometheus/common's
// text parser and finds the report's verdicts and figures in it.
func TestPrometheusParsesBack(t *testing.T) {
	for _, fx := range []string{"e06", "manual"} {
		rep := goldenReport(t, fx)
		var buf bytes.Buffer
		must(t, WritePrometheus(&buf, rep))
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(&buf)
		if err != nil {
			t.Fatalf("%s: the textfile does not parse: %v", fx, err)
		}
		value := func(name string, labels map[string]string) (float64, bool) {
			f := fams[name]
			if f == nil {
				return 0, false
			}
		next:
			for _, m := range f.Metric {
				got := map[string]string{}
				for _, l := range m.Label {
					got[l.GetName()] = l.GetValue()
				}
				for k, v := range labels {
					if got[k] != v {
						continue next
					}
				}
				switch f.GetType() {
				case dto.MetricType_GAUGE:
					return m.GetGauge().GetValue(), true
				case dto.MetricType_SUMMARY:
					return float64(m.GetSummary().GetSampleCount()), true
				}
			}
			return 0, false
		}
		if v, ok := value(MetricStatus, map[string]string{"status": rep.Status}); !ok || v != 1 {
			t.Errorf("%s: %s{status=%s} = %v %v", fx, MetricStatus, rep.Status, v, ok)
		}
		for _, s := range rep.Scenarios {
			sc := map[string]string{"scenario": s.Name, "repeat": strconv.Itoa(s.Repeat)}
			with := func(k, v string) map[string]string {
				m := map[string]string{k: v}
				for a, b := range sc {
					m[a] = b
				}
				return m
			}
			for _, st := range []string{evidence.Pass, evidence.Fail, evidence.NotRun} {
				want := 0.0
				if st == s.Status {
					want = 1
				}
				if v, ok := value(MetricScenarioStatus, with("status", st)); !ok || v != want {
					t.Errorf("%s/%s: status %s = %v %v, want %v", fx, s.Name, st, v, ok, want)
				}
			}
			if v, _ := value(MetricSent, sc); int(v) != s.Totals.Sent {
				t.Errorf("%s/%s: sent %v, report %d", fx, s.Name, v, s.Totals.Sent)
			}
			if v, _ := value(MetricAdmitted, sc); int(v) != s.Totals.N[evidence.ClassAdmitted] {
				t.Errorf("%s/%s: admitted %v, report %d", fx, s.Name, v, s.Totals.N[evidence.ClassAdmitted])
			}
			if o := s.OverAdmission; o != nil {
				if v, ok := value(MetricOverAdmission, with("bound", "min")); !ok || int(v) != o.Min {
					t.Errorf("%s/%s: over-admission %v, report %d", fx, s.Name, v, o.Min)
				}
			}
			if s.Bound != nil {
				if v, ok := value(MetricBound, sc); !ok || int(v) != s.Bound.Allowed {
					t.Errorf("%s/%s: bound %v, report %d", fx, s.Name, v, s.Bound.Allowed)
				}
			}
			if s.Latency != nil {
				for _, l := range s.Latency.Classes {
					if v, ok := value(MetricLatency, with("class", l.Class)); !ok || int(v) != l.Count {
						t.Errorf("%s/%s: latency count of %s %v, report %d", fx, s.Name, l.Class, v, l.Count)
					}
				}
			}
		}
	}
}
