package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	mn "github.com/rlbench/rlbench/internal/metricnames"
)

// evalSeconds is how long the synthetic run lasts: samples every second
// from 0 to evalSeconds.
const evalSeconds = 60

// fault window of the synthetic run, seconds: active on [faultFrom, faultTo).
const faultFrom, faultTo = 20, 40

// goldenReport reads analyze's golden report name (analyze/testdata/golden).
func goldenReport(t *testing.T, name string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "analyze", "testdata", "golden", name+".json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// sampled is one series of the synthetic run: its labels and its value at
// each second from 0 to evalSeconds.
type sampled struct {
	labels labels.Labels
	values [evalSeconds + 1]float64
}

// def returns a series named name with the labels (name, value pairs;
// run_id added when runID is set) and value v(second).
func def(name, runID string, v func(s int) float64, kv ...string) sampled {
	if runID != "" {
		kv = append(kv, mn.LabelRunID, runID)
	}
	out := sampled{labels: labels.FromStrings(append([]string{labels.MetricName, name}, kv...)...)}
	for s := range out.values {
		out.values[s] = v(s)
	}
	return out
}

// constant is a value held over the whole run.
func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

// loadRun returns the series of one run: the end-of-run families of rep as
// report.WritePrometheus writes them (held over the whole run), and, when
// live, the live series of every scenario as export/remotewrite pushes
// them, repeat label included (one target "a": admitted 2/s, local_429,
// global_429 and not_sent 1/s each, 3 in flight, pacing error quantiles, a
// fault window on [faultFrom, faultTo)). runID is added to every series
// unless empty (a textfile has none).
func loadRun(t *testing.T, rep *report.Report, runID string, live bool) []sampled {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WritePrometheus(&buf, rep); err != nil {
		t.Fatal(err)
	}
	textParser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := textParser.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var out []sampled
	for n, fam := range fams {
		for _, m := range fam.Metric {
			var kv []string
			for _, l := range m.Label {
				kv = append(kv, l.GetName(), l.GetValue())
			}
			switch fam.GetType() {
			case dto.MetricType_GAUGE:
				out = append(out, def(n, runID, constant(m.GetGauge().GetValue()), kv...))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out = append(out, def(n, runID, constant(q.GetValue()), append(slices.Clone(kv), mn.LabelQuantile, strconv.FormatFloat(q.GetQuantile(), 'f', -1, 64))...))
				}
				out = append(out, def(n+"_sum", runID, constant(s.GetSampleSum()), kv...),
					def(n+"_count", runID, constant(float64(s.GetSampleCount())), kv...))
			default:
				t.Fatalf("%s: type %s", n, fam.GetType())
			}
		}
	}
	if !live {
		return out
	}
	fault := func(s int) float64 {
		if s >= faultFrom && s < faultTo {
			return 1
		}
		return 0
	}
	for _, s := range rep.Scenarios {
		with := func(kv ...string) []string {
			return append([]string{mn.LabelScenario, s.Name, mn.LabelRepeat, strconv.Itoa(max(s.Repeat, 1))}, kv...)
		}
		for class, perSecond := range map[string]float64{evidence.ClassAdmitted.String(): 2, evidence.ClassLocal429.String(): 1,
			evidence.ClassGlobal429.String(): 1, mn.ClassNotSent: 1} {
			out = append(out, def(mn.RequestsTotal, runID, func(s int) float64 { return perSecond * float64(s) }, with(mn.LabelTarget, "a", mn.LabelClass, class)...))
		}
		out = append(out, def(mn.RequestsInFlight, runID, constant(3), with(mn.LabelTarget, "a")...),
			def(mn.PacingError, runID, constant(0.001), with(mn.LabelQuantile, "0.5")...),
			def(mn.PacingError, runID, constant(0.004), with(mn.LabelQuantile, "0.99")...),
			def(mn.FaultActive, runID, fault, with(mn.LabelFault, "rls-stopped")...))
	}
	return out
}

// memStore is an in-memory storage.Queryable of sampled series (a
// Prometheus TSDB would do, at the cost of its many dependencies).
type memStore struct{ series []storage.Series }

func newMemStore(defs []sampled) *memStore {
	st := &memStore{}
	for _, d := range defs {
		var ss []chunks.Sample
		for s, v := range d.values {
			ss = append(ss, fsample{t: int64(s) * 1000, f: v})
		}
		st.series = append(st.series, storage.NewListSeries(d.labels, ss))
	}
	slices.SortFunc(st.series, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
	return st
}

func (st *memStore) Querier(int64, int64) (storage.Querier, error) { return st, nil }

// Select returns the series all matchers match, sorted by labels.
func (st *memStore) Select(_ context.Context, _ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	var out []storage.Series
next:
	for _, s := range st.series {
		for _, m := range ms {
			if !m.Matches(s.Labels().Get(m.Name)) {
				continue next
			}
		}
		out = append(out, s)
	}
	return &sliceSet{series: out, i: -1}
}

func (st *memStore) LabelValues(context.Context, string, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, errors.New("not implemented")
}

func (st *memStore) LabelNames(context.Context, *storage.LabelHints, ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	return nil, nil, errors.New("not implemented")
}

func (st *memStore) Close() error { return nil }

// sliceSet is a storage.SeriesSet of a slice.
type sliceSet struct {
	series []storage.Series
	i      int
}

func (s *sliceSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *sliceSet) At() storage.Series                { return s.series[s.i] }
func (s *sliceSet) Err() error                        { return nil }
func (s *sliceSet) Warnings() annotations.Annotations { return nil }

// fsample is a float sample (chunks.Sample).
type fsample struct {
	t int64
	f float64
}

func (s fsample) T() int64                      { return s.t }
func (s fsample) ST() int64                     { return 0 }
func (s fsample) F() float64                    { return s.f }
func (s fsample) H() *histogram.Histogram       { return nil }
func (s fsample) FH() *histogram.FloatHistogram { return nil }
func (s fsample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fsample) Copy() chunks.Sample           { return s }

// evaluator runs the dashboard's expressions on a storage with Prometheus'
// own PromQL engine, at the end of the synthetic run.
type evaluator struct {
	t   *testing.T
	ng  *promql.Engine
	st  storage.Queryable
	end time.Time
}

func newEvaluator(t *testing.T, defs []sampled) *evaluator {
	st := newMemStore(defs)
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute})
	t.Cleanup(func() { ng.Close() })
	return &evaluator{t: t, ng: ng, st: st, end: time.Unix(evalSeconds, 0)}
}

// instant evaluates e (interpolated with vals) at the run's end.
func (ev *evaluator) instant(e Expr, vals map[string]string) promql.Vector {
	ev.t.Helper()
	s, err := Interpolate(e.PromQL, vals)
	if err != nil {
		ev.t.Fatal(err)
	}
	q, err := ev.ng.NewInstantQuery(context.Background(), ev.st, nil, s, ev.end)
	if err != nil {
		ev.t.Fatalf("%s: %v", e.Where, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		ev.t.Fatalf("%s: %q: %v", e.Where, s, res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		ev.t.Fatalf("%s: %v", e.Where, err)
	}
	return v
}

// rangeQuery evaluates e over the whole run, every second.
func (ev *evaluator) rangeQuery(e Expr, vals map[string]string) promql.Matrix {
	ev.t.Helper()
	s, err := Interpolate(e.PromQL, vals)
	if err != nil {
		ev.t.Fatal(err)
	}
	q, err := ev.ng.NewRangeQuery(context.Background(), ev.st, nil, s, time.Unix(0, 0), ev.end, time.Second)
	if err != nil {
		ev.t.Fatalf("%s: %v", e.Where, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		ev.t.Fatalf("%s: %q: %v", e.Where, s, res.Err)
	}
	m, err := res.Matrix()
	if err != nil {
		ev.t.Fatalf("%s: %v", e.Where, err)
	}
	return m
}

// dashboardExprs returns the built dashboard's expressions by Where.
func dashboardExprs(t *testing.T) ([]Expr, map[string]Expr) {
	t.Helper()
	d, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	exprs, err := Exprs(d)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Expr{}
	for _, e := range exprs {
		by[e.Where] = e
	}
	return exprs, by
}

// verdictCodes maps a verdict to the number the verdict panels show it as.
var verdictCodes = map[string]float64{evidence.Pass: codePass, evidence.NotRun: codeNotRun, evidence.Fail: codeFail}

// TestQueriesOnARun loads a run into a storage (the golden report
// "manual", with PASS, FAIL and NOT_RUN scenarios, as remote write would
// carry it, run_id included, and live series for every scenario) next to
// another run, and evaluates every expression of the dashboard with
// Prometheus' PromQL engine for the first run: each returns data, only of
// that run; the verdict panels show each scenario's verdict and the run's
// as the report has them; the variables list the run and its scenarios;
// the fault annotation covers exactly the fault window.
func TestQueriesOnARun(t *testing.T) {
	rep := goldenReport(t, "manual")
	other := goldenReport(t, "e06")
	ev := newEvaluator(t, append(loadRun(t, rep, "r1", true), loadRun(t, other, "r2", true)...))
	vals := map[string]string{VarDatasource: "prometheus", VarRunID: "r1", VarScenario: ".*"}
	exprs, by := dashboardExprs(t)
	for _, e := range exprs {
		if strings.HasPrefix(e.Where, "variable ") {
			continue
		}
		v := ev.instant(e, vals)
		if strings.HasPrefix(e.Where, "annotation ") {
			continue // the fault window is over at the run's end; checked below
		}
		if len(v) == 0 {
			t.Errorf("%s: %q returns no data for run r1", e.Where, e.PromQL)
		}
		for _, s := range v {
			if id := s.Metric.Get(mn.LabelRunID); id != "" && id != "r1" {
				t.Errorf("%s returns a series of run %s: %s", e.Where, id, s.Metric)
			}
		}
	}

	scenario := by["panel Verdict per scenario A"]
	got := map[string]float64{}
	for _, s := range ev.instant(scenario, vals) {
		got[s.Metric.Get(mn.LabelScenario)+"#"+s.Metric.Get(mn.LabelRepeat)] = s.F
	}
	if len(got) != len(rep.Scenarios) {
		t.Errorf("%d scenario verdicts, the report has %d: %v", len(got), len(rep.Scenarios), got)
	}
	for _, s := range rep.Scenarios {
		key := s.Name + "#" + strconv.Itoa(s.Repeat)
		if got[key] != verdictCodes[s.Status] {
			t.Errorf("scenario %s: the panel shows %v, the report %s (%v)", key, got[key], s.Status, verdictCodes[s.Status])
		}
	}
	runV := ev.instant(by["panel Run verdict A"], vals)
	if len(runV) != 1 || runV[0].F != verdictCodes[rep.Status] {
		t.Errorf("run verdict %v, the report %s (%v)", runV, rep.Status, verdictCodes[rep.Status])
	}

	// the variables: label_values of their selector
	for name, want := range map[string][]string{VarRunID: {"r1", "r2"}, VarScenario: nil} {
		e := by["variable "+name]
		seen := map[string]bool{}
		for _, s := range ev.instant(e, vals) {
			seen[s.Metric.Get(name)] = true
		}
		if want == nil {
			for _, s := range rep.Scenarios {
				want = append(want, s.Name)
			}
		}
		for _, w := range want {
			if !seen[w] {
				t.Errorf("variable %s does not list %s: %v", name, w, seen)
			}
		}
		if len(seen) != len(slices.Compact(slices.Sorted(slices.Values(want)))) {
			t.Errorf("variable %s lists %v, want %v", name, seen, want)
		}
	}

	// the fault annotation: a region per scenario on [faultFrom, faultTo)
	m := ev.rangeQuery(by["annotation Fault windows"], vals)
	if len(m) != len(rep.Scenarios) {
		t.Errorf("fault windows of %d scenarios, want %d", len(m), len(rep.Scenarios))
	}
	for _, s := range m {
		if len(s.Floats) != faultTo-faultFrom || s.Floats[0].T != faultFrom*1000 || s.Floats[len(s.Floats)-1].T != (faultTo-1)*1000 {
			t.Errorf("fault window of %s: %d points from %v to %v, want [%ds, %ds)", s.Metric, len(s.Floats), s.Floats[0].T, s.Floats[len(s.Floats)-1].T, faultFrom, faultTo)
		}
	}

	// the rates: 2/s admitted, 1/s local_429, global_429 and not_sent per
	// scenario, a share of 1/2 of the responses rejected (not_sent is no
	// response)
	for _, s := range ev.instant(by["panel Responses per class and target A"], vals) {
		want := 1.0
		if s.Metric.Get(mn.LabelClass) == evidence.ClassAdmitted.String() {
			want = 2
		}
		if s.F != want {
			t.Errorf("rate of %s = %v, want %v", s.Metric, s.F, want)
		}
	}
	for _, s := range ev.instant(by["panel Limiter rejections share A"], vals) {
		if s.F != 0.5 {
			t.Errorf("rejection share of %s = %v, want 0.5", s.Metric, s.F)
		}
	}
}

// TestQueriesOnATextfile loads the end-of-run series as a textfile
// collector exposes them (no run_id, no live series) and evaluates the
// dashboard with no run in the Run list (run_id=~""): every expression on
// end-of-run families only returns data, as the README promises.
func TestQueriesOnATextfile(t *testing.T) {
	rep := goldenReport(t, "manual")
	ev := newEvaluator(t, loadRun(t, rep, "", false))
	vals := map[string]string{VarDatasource: "prometheus", VarRunID: "", VarScenario: ".*"}
	exprs, _ := dashboardExprs(t)
	n := 0
	for _, e := range exprs {
		x, err := Parse(e, vals)
		if err != nil {
			t.Fatal(err)
		}
		live := false
		parser.Inspect(x, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				names, _ := SelectorNames(vs)
				for _, name := range names {
					if f, _ := mn.Lookup(name); f.Live {
						live = true
					}
				}
			}
			return nil
		})
		if live {
			continue
		}
		n++
		if v := ev.instant(e, vals); len(v) == 0 {
			t.Errorf("%s: %q returns no data from a textfile", e.Where, e.PromQL)
		}
	}
	if n < 10 {
		t.Errorf("only %d expressions use end-of-run families only", n)
	}
}
