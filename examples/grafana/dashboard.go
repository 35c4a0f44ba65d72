// Package grafana builds rlbench's Grafana dashboard with Grafana's
// foundation SDK (github.com/grafana/grafana-foundation-sdk/go), so that it
// follows Grafana's dashboard schema as the SDK moves with it. The generated
// JSON, File, is committed; regenerate it with
//
//	go generate ./examples/grafana
//
// (a test fails while the committed file differs from a fresh generation).
// Every query names series from internal/metricnames, the one list of the
// series rlbench emits.
package grafana

//go:generate go run ./gen -o rlbench-dashboard.json

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/rlbench/rlbench/evidence"
	mn "github.com/rlbench/rlbench/internal/metricnames"
)

// File is the generated dashboard's file name, in examples/grafana.
const File = "rlbench-dashboard.json"

// UID is the dashboard's uid: importing the file again replaces the
// dashboard rather than adding a copy.
const UID = "rlbench"

// Template variable names (used in queries as $name).
const (
	// VarDatasource selects the Prometheus data source.
	VarDatasource = "datasource"
	// VarRunID selects the runs (label run_id); several may be compared.
	VarRunID = "run_id"
	// VarScenario selects the scenarios (label scenario), all by default.
	VarScenario = "scenario"
)

// Verdict codes: the numbers the verdict panels map back to PASS,
// NOT_RUN and FAIL (worse is larger, so max over repeats is the worst).
const (
	codePass   = 1
	codeNotRun = 2
	codeFail   = 3
)

// ds is the data source reference of every panel, query and annotation:
// the one the datasource variable selects.
func ds() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + VarDatasource + "}")}
}

// sel returns the selector of name restricted to the selected runs and
// scenarios, with the extra matchers given (e.g. `class="admitted"`).
func sel(name string, extra ...string) string {
	m := append([]string{mn.LabelRunID + `=~"$` + VarRunID + `"`, mn.LabelScenario + `=~"$` + VarScenario + `"`}, extra...)
	return name + "{" + strings.Join(m, ", ") + "}"
}

// runSel is sel for run-level series, which have no scenario label.
func runSel(name string, extra ...string) string {
	m := append([]string{mn.LabelRunID + `=~"$` + VarRunID + `"`}, extra...)
	return name + "{" + strings.Join(m, ", ") + "}"
}

// eq returns the matcher label="value".
func eq(label, value string) string { return label + `="` + value + `"` }

// by returns the grouping clause "by (labels)".
func by(labels ...string) string { return "by (" + strings.Join(labels, ", ") + ")" }

// verdictCode encodes a verdict family (one series per status, 1 for the
// verdict, 0 otherwise) as one number per group: codePass, codeNotRun or
// codeFail (the largest when several series fall in a group).
func verdictCode(selector func(name string, extra ...string) string, name string, groups ...string) string {
	term := func(status string, code int) string {
		return fmt.Sprintf("%s * %d", selector(name, eq(mn.LabelStatus, status)), code)
	}
	return fmt.Sprintf("max %s (%s or %s or %s)", by(groups...),
		term(evidence.Pass, codePass), term(evidence.NotRun, codeNotRun), term(evidence.Fail, codeFail))
}

// verdictMappings maps the verdict codes, and the status label's values,
// to the verdict's name and color.
func verdictMappings() []dashboard.ValueMapping {
	res := func(text, color string) dashboard.ValueMappingResult {
		return dashboard.ValueMappingResult{Text: cog.ToPtr(text), Color: cog.ToPtr(color)}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: map[string]dashboard.ValueMappingResult{
		fmt.Sprint(codePass): res(evidence.Pass, "green"), fmt.Sprint(codeNotRun): res(evidence.NotRun, "orange"), fmt.Sprint(codeFail): res(evidence.Fail, "red"),
		evidence.Pass: res(evidence.Pass, "green"), evidence.NotRun: res(evidence.NotRun, "orange"), evidence.Fail: res(evidence.Fail, "red"),
	}}}}
}

// query returns a Prometheus query of the selected data source.
func query(ref, expr, legend string) *prometheus.DataqueryBuilder {
	q := prometheus.NewDataqueryBuilder().Datasource(ds()).RefId(ref).Expr(expr).EditorMode(prometheus.QueryEditorModeCode)
	if legend != "" {
		q = q.LegendFormat(legend)
	}
	return q
}

// instantTable returns an instant query in table format (one row per series).
func instantTable(ref, expr string) *prometheus.DataqueryBuilder {
	return query(ref, expr, "").Instant().Format(prometheus.PromQueryFormatTable)
}

// organize is Grafana's "organize fields" transformation: it hides the
// named fields and renames others.
func organize(hide []string, rename map[string]string) dashboard.DataTransformerConfig {
	ex := map[string]bool{}
	for _, h := range hide {
		ex[h] = true
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{"excludeByName": ex, "renameByName": rename}}
}

// merge is Grafana's "merge" transformation: the tables of several
// queries become one, rows with equal label values joined (so __name__,
// which differs between the queries, is dropped before).
func merge() dashboard.DataTransformerConfig {
	return dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}
}

// newTable returns a table panel builder with Grafana's default footer
// (hidden, reducer sum): the SDK's default leaves the footer's required
// reducer null, which its own strict decoder rejects.
func newTable() *table.PanelBuilder {
	return table.NewPanelBuilder().
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}).CountRows(false))
}

// legendTable is a table legend under the graph with the given reductions.
func legendTable(calcs ...string) *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).Calcs(calcs)
}

// thresholds returns absolute thresholds: base color, then value/color pairs.
func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Value: nil, Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		ts = append(ts, dashboard.Threshold{Value: cog.ToPtr(steps[i].(float64)), Color: steps[i+1].(string)})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// Build returns rlbench's dashboard:
//
//   - Verdicts: the run's verdict (rlbench_status), each scenario's verdict
//     over time (rlbench_scenario_status, a state timeline) and as a table;
//   - Admitted against the model's bounds: sent, admitted, the bound the
//     configured limiters allow (rlbench_scenario_bound), the intended
//     limit and the over-admission per scenario, and the admitted count
//     growing live (rlbench_requests_total{class="admitted"}) against them;
//   - Traffic: the request rate per response class and target
//     (rate of rlbench_requests_total), the requests in flight and the
//     pacer's lateness (rlbench_pacing_error_seconds);
//   - Latency and receipts: the client-side latency quantiles per class
//     (rlbench_scenario_latency_seconds) and the receipt reconciliation's
//     anomalies (rlbench_scenario_reconciliation).
//
// Fault windows (rlbench_fault_active) are annotations (regions while the
// fault is active). The template variables are datasource, run_id and
// scenario. Errors are the SDK's build errors.
func Build() (dashboard.Dashboard, error) {
	id := uint32(0)
	next := func() uint32 { id++; return id }
	run, scn := mn.LabelRunID, mn.LabelScenario
	perScenario := []string{run, scn, mn.LabelRepeat}

	b := dashboard.NewDashboardBuilder("rlbench: rate limit verdicts and traffic").
		Uid(UID).
		Description("Verdicts, admissions against the limiters' bounds, traffic per response class and target, pacing error and fault windows of rlbench runs (https://github.com/rlbench/rlbench, examples/grafana). Data: a Prometheus receiving rlbench's remote write (live series) or scraping its textfile (end-of-run series).").
		Tags([]string{"rlbench", "rate-limiting"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("10s").
		Time("now-30m", "now").
		Timezone(common.TimeZoneBrowser)

	// template variables
	runNames := mn.RequestsTotal + "|" + mn.ScenarioStatus
	b = b.WithVariable(dashboard.NewDatasourceVariableBuilder(VarDatasource).Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder(VarRunID).Label("Run").
			Description("The runs shown (label run_id, one per rlbench run; newest first). Series without run_id (a textfile) match when no run exists.").
			Datasource(ds()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(fmt.Sprintf(`label_values({__name__=~"%s"}, %s)`, runNames, run))}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalDesc).
			Multi(true)).
		WithVariable(dashboard.NewQueryVariableBuilder(VarScenario).Label("Scenario").
			Description("The scenarios shown (label scenario).").
			Datasource(ds()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(fmt.Sprintf(`label_values({__name__=~"%s", %s=~"$%s"}, %s)`, runNames, run, VarRunID, scn))}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).IncludeAll(true).AllValue(".*"))

	// annotations
	b = b.Annotation(dashboard.NewAnnotationQueryBuilder().Name("Fault windows").Datasource(ds()).Enable(true).IconColor("red").
		Expr(fmt.Sprintf("max %s (%s) > 0", by(run, scn, mn.LabelFault), sel(mn.FaultActive))).
		Step("1s").
		TitleFormat("fault {{" + mn.LabelFault + "}}").
		TextFormat("{{" + scn + "}} (run {{" + run + "}})").
		TagKeys(strings.Join([]string{run, scn, mn.LabelFault}, ",")))

	// Verdicts
	b = b.WithRow(dashboard.NewRowBuilder("Verdicts").Id(next())).
		WithPanel(stat.NewPanelBuilder().Id(next()).Title("Run verdict").
			Description("The run's verdict (" + mn.Status + "): PASS, FAIL or NOT_RUN (inconclusive: the harness did not deliver a check's premise). One value per selected run.").
			Datasource(ds()).Span(4).Height(7).
			WithTarget(query("A", verdictCode(runSel, mn.Status, run), "{{"+run+"}}").Instant()).
			Mappings(verdictMappings()).
			Thresholds(thresholds("text")).
			ColorMode(common.BigValueColorModeBackground).
			Orientation(common.VizOrientationAuto).
			GraphMode(common.BigValueGraphModeNone).
			ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false))).
		WithPanel(statetimeline.NewPanelBuilder().Id(next()).Title("Verdict per scenario").
			Description("Each scenario run's verdict (" + mn.ScenarioStatus + ") from the moment it is judged.").
			Datasource(ds()).Span(20).Height(7).
			WithTarget(query("A", verdictCode(sel, mn.ScenarioStatus, perScenario...), "{{"+scn+"}} #{{"+mn.LabelRepeat+"}} {{"+run+"}}")).
			Mappings(verdictMappings()).
			Thresholds(thresholds("text")).
			ShowValue(common.VisibilityModeAuto).
			MergeValues(true).
			AlwaysSpanNulls()).
		WithPanel(newTable().Id(next()).Title("Verdicts").
			Description("The latest verdict of each scenario run ("+mn.ScenarioStatus+" == 1).").
			Datasource(ds()).Span(24).Height(6).
			WithTarget(instantTable("A", sel(mn.ScenarioStatus)+" == 1")).
			WithTransformation(organize([]string{"Time", "Value", "__name__"}, nil)).
			Mappings(verdictMappings()).
			OverrideByName(mn.LabelStatus, []dashboard.DynamicConfigValue{{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}}}))

	// Admitted against the model's bounds
	b = b.WithRow(dashboard.NewRowBuilder("Admitted against the model's bounds").Id(next())).
		WithPanel(newTable().Id(next()).Title("Admitted, bound and over-admission per scenario").
			Description("Sent and admitted (2xx) requests; bound: the most admissions the configured limiters allow over the attack's duration (the limiter model, "+mn.Bound+"); intended limit and over-admission (admitted − intended; min and max differ by the requests without a response; a positive max is over-admission).").
			Datasource(ds()).Span(24).Height(8).
			WithTarget(instantTable("A", sel(mn.Sent))).
			WithTarget(instantTable("B", sel(mn.Admitted))).
			WithTarget(instantTable("C", sel(mn.Bound))).
			WithTarget(instantTable("D", sel(mn.IntendedLimit))).
			WithTarget(instantTable("E", fmt.Sprintf("max without (%s) (%s)", mn.LabelBound, sel(mn.OverAdmission, eq(mn.LabelBound, "min"))))).
			WithTarget(instantTable("F", fmt.Sprintf("max without (%s) (%s)", mn.LabelBound, sel(mn.OverAdmission, eq(mn.LabelBound, "max"))))).
			WithTransformation(organize([]string{"Time", "__name__"}, nil)).
			WithTransformation(merge()).
			WithTransformation(organize(nil, map[string]string{
				"Value #A": "sent", "Value #B": "admitted", "Value #C": "bound (model)", "Value #D": "intended limit",
				"Value #E": "over-admission (min)", "Value #F": "over-admission (max)"})).
			OverrideByName("over-admission (max)", []dashboard.DynamicConfigValue{
				{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
				{Id: "thresholds", Value: map[string]any{"mode": "absolute", "steps": []any{
					map[string]any{"value": nil, "color": "green"}, map[string]any{"value": 1, "color": "red"}}}},
			})).
		WithPanel(timeseries.NewPanelBuilder().Id(next()).Title("Admitted so far against the bound").
			Description("The admitted (2xx) responses counted live ("+mn.RequestsTotal+"{class=\"admitted\"}, all targets) and, once the scenario is judged, the model's bound and the intended limit.").
			Datasource(ds()).Span(24).Height(8).
			WithTarget(query("A", fmt.Sprintf("sum %s (%s)", by(run, scn), sel(mn.RequestsTotal, eq(mn.LabelClass, evidence.ClassAdmitted.String()))), "admitted {{"+scn+"}} {{"+run+"}}")).
			WithTarget(query("B", fmt.Sprintf("max %s (%s)", by(run, scn), sel(mn.Bound)), "bound {{"+scn+"}} {{"+run+"}}")).
			WithTarget(query("C", fmt.Sprintf("max %s (%s)", by(run, scn), sel(mn.IntendedLimit)), "intended {{"+scn+"}} {{"+run+"}}")).
			Min(0).
			Legend(legendTable("lastNotNull", "max")).
			OverrideByRegexp("^(bound|intended) .*", []dashboard.DynamicConfigValue{
				{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
				{Id: "custom.showPoints", Value: "always"},
			}))

	// Traffic
	rate := func(extra ...string) string {
		return fmt.Sprintf("rate(%s[$__rate_interval])", sel(mn.RequestsTotal, extra...))
	}
	rejected := evidence.ClassLocal429.String() + "|" + evidence.ClassGlobal429.String()
	b = b.WithRow(dashboard.NewRowBuilder("Traffic").Id(next())).
		WithPanel(timeseries.NewPanelBuilder().Id(next()).Title("Responses per class and target").
			Description("Responses per second by response class (admitted, local_429, global_429, no_response, ...: rlbench's classification; " + mn.ClassNotSent + ": requests that never left the client) and target (" + mn.RequestsTotal + ").").
			Datasource(ds()).Span(12).Height(9).Unit("reqps").Min(0).
			WithTarget(query("A", fmt.Sprintf("sum %s (%s)", by(run, scn, mn.LabelTarget, mn.LabelClass), rate()), "{{"+mn.LabelClass+"}} {{"+mn.LabelTarget+"}} {{"+scn+"}}")).
			Legend(legendTable("mean", "max"))).
		WithPanel(timeseries.NewPanelBuilder().Id(next()).Title("Limiter rejections share").
			Description("The share of responses that were a limiter's 429 (local_429: a proxy's own limiter; global_429: an RLS OVER_LIMIT), per target; requests that never left the client (class " + mn.ClassNotSent + ") are not responses.").
			Datasource(ds()).Span(12).Height(9).Unit("percentunit").Min(0).Max(1).
			WithTarget(query("A", fmt.Sprintf("sum %s (%s) / sum %s (%s)",
				by(run, scn, mn.LabelTarget), rate(mn.LabelClass+`=~"`+rejected+`"`), by(run, scn, mn.LabelTarget), rate(mn.LabelClass+`!="`+mn.ClassNotSent+`"`)),
				"{{"+mn.LabelTarget+"}} {{"+scn+"}}")).
			Legend(legendTable("mean", "max"))).
		WithPanel(timeseries.NewPanelBuilder().Id(next()).Title("In flight").
			Description("Requests whose send began and that have no result yet, per target (" + mn.RequestsInFlight + ").").
			Datasource(ds()).Span(12).Height(8).Min(0).
			WithTarget(query("A", fmt.Sprintf("sum %s (%s)", by(run, scn, mn.LabelTarget), sel(mn.RequestsInFlight)), "{{"+mn.LabelTarget+"}} {{"+scn+"}}")).
			Legend(legendTable("mean", "max"))).
		WithPanel(timeseries.NewPanelBuilder().Id(next()).Title("Pacing error").
			Description("How late the pacer sent requests against their planned instants, quantiles (" + mn.PacingError + "). A large error means the harness, not the limiter, may explain a verdict: such checks are NOT_RUN.").
			Datasource(ds()).Span(12).Height(8).Unit("s").Min(0).
			WithTarget(query("A", fmt.Sprintf("max %s (%s)", by(run, scn, mn.LabelQuantile), sel(mn.PacingError)), "q{{"+mn.LabelQuantile+"}} {{"+scn+"}}")).
			Legend(legendTable("mean", "max")))

	// Latency and receipts
	quantile := func(q string) string {
		return fmt.Sprintf("max without (%s) (%s)", mn.LabelQuantile, sel(mn.Latency, eq(mn.LabelQuantile, q)))
	}
	b = b.WithRow(dashboard.NewRowBuilder("Latency and receipts (end of run)").Id(next())).
		WithPanel(newTable().Id(next()).Title("Client-side latency per class").
			Description("Latency quantiles per response class of each scenario run ("+mn.Latency+"), and the mean (_sum / _count).").
			Datasource(ds()).Span(16).Height(8).Unit("s").
			WithTarget(instantTable("A", quantile("0.5"))).
			WithTarget(instantTable("B", quantile("0.9"))).
			WithTarget(instantTable("C", quantile("0.99"))).
			WithTarget(instantTable("D", quantile("1"))).
			WithTarget(instantTable("E", fmt.Sprintf("%s / %s", sel(mn.Latency+"_sum"), sel(mn.Latency+"_count")))).
			WithTarget(instantTable("F", sel(mn.Latency+"_count"))).
			WithTransformation(organize([]string{"Time", "__name__"}, nil)).
			WithTransformation(merge()).
			WithTransformation(organize(nil, map[string]string{
				"Value #A": "p50", "Value #B": "p90", "Value #C": "p99", "Value #D": "max", "Value #E": "mean", "Value #F": "count"})).
			OverrideByName("count", []dashboard.DynamicConfigValue{{Id: "unit", Value: "short"}})).
		WithPanel(newTable().Id(next()).Title("Receipt reconciliation anomalies").
			Description("Backend receipts that do not match the client's record (" + mn.Reconciliation + "): lost (admitted without a receipt), leaked (rejected with a receipt), duplicate, phantom, without_id. Only non-zero kinds are listed.").
			Datasource(ds()).Span(8).Height(8).
			WithTarget(instantTable("A", sel(mn.Reconciliation)+" > 0")).
			WithTransformation(organize([]string{"Time", "__name__"}, map[string]string{"Value": "receipts"})).
			NoValue("none"))

	return b.Build()
}

// JSON returns the dashboard as indented JSON with a final newline: the
// content of File.
func JSON() ([]byte, error) {
	d, err := Build()
	if err != nil {
		return nil, fmt.Errorf("build the grafana dashboard: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep PromQL's > and < readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("encode the grafana dashboard: %w", err)
	}
	return buf.Bytes(), nil
}
