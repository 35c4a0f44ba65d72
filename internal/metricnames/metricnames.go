// Package metricnames is the one list of the Prometheus series rlbench
// emits: the live series a run or an attack pushes by remote write while it
// runs, and the end-of-run families of analyze/report's WritePrometheus
// (whose names stay owned by analyze/report: the constants here refer to
// them). Dashboards, alert rules and tests that name rlbench's series take
// them from here (Families), so that a series renamed in one place is
// renamed for all of them.
//
// The live series are what export/remotewrite's Pusher writes, with the
// labels listed here (its tests check each pushed series against
// Families). Names follow the Prometheus naming conventions
// (https://prometheus.io/docs/practices/naming/): the rlbench_ prefix, base
// units (seconds), a _total suffix on counters. Every remote-written series
// carries the label run_id (LabelRunID): one run is one run_id.
package metricnames

import "github.com/rlbench/rlbench/analyze/report"

// Live series: pushed by remote write (export/remotewrite) every interval
// while a run or an attack goes, from the attack's live counters
// (attack.Progress.Snapshot). Each carries run_id, scenario and repeat
// (for `rlbench attack`: scenario "attack", repeat "1").
const (
	// RequestsTotal is a counter of the requests per target and class over
	// a scenario run (its attack steps add up), labels run_id, scenario,
	// repeat, target and class: a response class (evidence.Class's String:
	// admitted, local_429, global_429, no_response, ..., as the scenario's
	// classify: rules classify it), or ClassNotSent for requests that never
	// left the client.
	RequestsTotal = "rlbench_requests_total"
	// RequestsInFlight is a gauge of the requests whose send began and
	// that have no result yet, labels run_id, scenario, repeat and target.
	RequestsInFlight = "rlbench_requests_in_flight"
	// PacingError is a gauge per quantile of the current attack step's
	// pacing error so far, seconds: how much later than its intended
	// instant each paced request left (0 when on time), at the quantiles
	// "0.5", "0.9", "0.99" and "1" (the maximum); labels run_id, scenario,
	// repeat and quantile. It is the live figure of attack.json's
	// pacing.error_ns (evidence.AttackPacing); absent while nothing paced
	// was sent. A gauge with a quantile label, not a summary: there is no
	// _sum or _count.
	PacingError = "rlbench_pacing_error_seconds"
	// FaultActive is a gauge, 1 while a fault window (a plan's fault:
	// RLS down, Redis stopped, ...) is open and 0 otherwise; labels run_id,
	// scenario, repeat and fault (the fault step's name, else "<action>
	// <target>"). Windows are placed as analyze/faults.go places them (a
	// stop or set opens one on its target that the next start or clear of
	// that target closes; a restart or exec is a window of its own length);
	// a sample is 1 when the window was open at any time since the previous
	// sample, so a window shorter than the push interval still shows.
	FaultActive = "rlbench_fault_active"
)

// ClassNotSent is RequestsTotal's class for requests that never left the
// client (evidence.Request.NotSent): not a response class.
const ClassNotSent = "not_sent"

// End-of-run families, written once per scenario run when it is judged
// (and in the textfile of `rlbench report DIR --prometheus FILE`). Their names and
// meanings are analyze/report's (WritePrometheus documents each); every
// scenario series carries the labels scenario and repeat.
const (
	// ReportTimestamp is report.MetricReportTimestamp: when the report was generated, unix seconds (gauge).
	ReportTimestamp = report.MetricReportTimestamp

	// Status is report.MetricStatus: the run's verdict, 1 for its status label and 0 for the others (gauge).
	Status = report.MetricStatus

	// ScenarioStatus is report.MetricScenarioStatus: a scenario run's verdict, 1 for its status label and 0 for the others (gauge).
	ScenarioStatus = report.MetricScenarioStatus

	// Sent is report.MetricSent: the requests a scenario run sent (gauge).
	Sent = report.MetricSent

	// Admitted is report.MetricAdmitted: the requests admitted, 2xx (gauge).
	Admitted = report.MetricAdmitted

	// Responses is report.MetricResponses: the responses per class (gauge).
	Responses = report.MetricResponses

	// Receipts is report.MetricReceipts: the backend's receipts (gauge).
	Receipts = report.MetricReceipts

	// IntendedLimit is report.MetricIntendedLimit: the admissions meant for the whole backend, when the scenario has an intended limit (gauge).
	IntendedLimit = report.MetricIntendedLimit

	// OverAdmission is report.MetricOverAdmission: admitted minus the intended limit, bound="min" and bound="max" (gauge; negative: under-admission).
	OverAdmission = report.MetricOverAdmission

	// IntendedWindow is report.MetricIntendedWindow: the intended limit's window, seconds, when the limit is per window (gauge).
	IntendedWindow = report.MetricIntendedWindow

	// Bound is report.MetricBound: the most admissions the configured limiters allow over the attack's duration: the limiter model's bound (gauge).
	Bound = report.MetricBound

	// Duration is report.MetricDuration: first send to last response, seconds (gauge).
	Duration = report.MetricDuration

	// Reconciliation is report.MetricReconciliation: receipt reconciliation anomalies per kind: lost, leaked, duplicate, phantom, without_id, sent_unknown (gauge).
	Reconciliation = report.MetricReconciliation

	// Latency is report.MetricLatency: the client-side latency per class, seconds (summary: quantiles 0.5, 0.9, 0.99, 0.999 and 1, _sum and _count).
	Latency = report.MetricLatency
)

// Label names of rlbench's series.
const (
	// LabelRunID names one run (every remote-written series has it).
	LabelRunID = "run_id"
	// LabelScenario is the scenario's name in the plan.
	LabelScenario = "scenario"
	// LabelRepeat is a scenario run's 1-based repeat ("1" for a scenario
	// that is not repeated; the end-of-run families of evidence without a
	// repeat, e.g. `rlbench attack`'s, say "0").
	LabelRepeat = "repeat"
	// LabelTarget is the attack target's name (attack.Target.Name, as in
	// evidence.Request.Target: e.g. "envoy-a", or the URL's host:port).
	LabelTarget = "target"
	// LabelClass is a response class (evidence.Class's String).
	LabelClass = "class"
	// LabelStatus is a verdict: PASS, FAIL or NOT_RUN (evidence.Pass,
	// evidence.Fail, evidence.NotRun).
	LabelStatus = "status"
	// LabelFault is a fault window's name.
	LabelFault = "fault"
	// LabelQuantile is a summary's quantile (Prometheus' own label name).
	LabelQuantile = "quantile"
	// LabelBound tells the two over-admission bounds apart: min or max.
	LabelBound = "bound"
	// LabelKind is a receipt reconciliation anomaly's kind.
	LabelKind = "kind"
)

// Type is a family's Prometheus metric type, as the exposition format's
// TYPE line names it.
type Type string

// Metric types of rlbench's families.
const (
	Counter Type = "counter"
	Gauge   Type = "gauge"
	// Summary families have, besides the series named as the family (one
	// per quantile label value), the series <name>_sum and <name>_count.
	Summary Type = "summary"
)

// Family is one metric family rlbench emits.
type Family struct {
	// Name is the family's name (the series' __name__ for counters and
	// gauges, the quantile series' for summaries).
	Name string
	// Type is its metric type.
	Type Type
	// Live is true for the series written while a run goes (remote write
	// only, by export/remotewrite), false for the end-of-run families.
	Live bool
	// Labels are the label names of its series. LabelRunID is among them
	// (every remote-written series has it) although a textfile's series
	// lack it; a Summary's quantile series have LabelQuantile and its _sum
	// and _count series do not.
	Labels []string
}

// SeriesNames returns the __name__ values of the family's series: Name,
// and for a Summary also Name_sum and Name_count.
func (f Family) SeriesNames() []string {
	if f.Type == Summary {
		return []string{f.Name, f.Name + "_sum", f.Name + "_count"}
	}
	return []string{f.Name}
}

// SeriesLabels returns the label names of the series named series, one
// of f.SeriesNames(): f.Labels, without LabelQuantile for a Summary's _sum
// and _count.
func (f Family) SeriesLabels(series string) []string {
	if series == f.Name {
		return f.Labels
	}
	var out []string
	for _, l := range f.Labels {
		if l != LabelQuantile {
			out = append(out, l)
		}
	}
	return out
}

// Families returns every family rlbench emits, the live ones first, each in
// the order of the constants above. The slice is new at every call.
func Families() []Family {
	scen := func(l ...string) []string { return append([]string{LabelRunID, LabelScenario, LabelRepeat}, l...) }
	live := scen
	return []Family{
		{RequestsTotal, Counter, true, live(LabelTarget, LabelClass)},
		{RequestsInFlight, Gauge, true, live(LabelTarget)},
		{PacingError, Gauge, true, live(LabelQuantile)},
		{FaultActive, Gauge, true, live(LabelFault)},
		{ReportTimestamp, Gauge, false, []string{LabelRunID}},
		{Status, Gauge, false, []string{LabelRunID, LabelStatus}},
		{ScenarioStatus, Gauge, false, scen(LabelStatus)},
		{Sent, Gauge, false, scen()},
		{Admitted, Gauge, false, scen()},
		{Responses, Gauge, false, scen(LabelClass)},
		{Receipts, Gauge, false, scen()},
		{IntendedLimit, Gauge, false, scen()},
		{OverAdmission, Gauge, false, scen(LabelBound)},
		{IntendedWindow, Gauge, false, scen()},
		{Bound, Gauge, false, scen()},
		{Duration, Gauge, false, scen()},
		{Reconciliation, Gauge, false, scen(LabelKind)},
		{Latency, Summary, false, scen(LabelClass, LabelQuantile)},
	}
}

// Lookup returns the family of the series named series (a family's name,
// or a Summary's name with _sum or _count), and whether there is one.
func Lookup(series string) (Family, bool) {
	for _, f := range Families() {
		for _, n := range f.SeriesNames() {
			if n == series {
				return f, true
			}
		}
	}
	return Family{}, false
}

// SeriesNames returns the __name__ of every series rlbench emits (each
// family's Family.SeriesNames), as a set.
func SeriesNames() map[string]bool {
	out := map[string]bool{}
	for _, f := range Families() {
		for _, n := range f.SeriesNames() {
			out[n] = true
		}
	}
	return out
}
