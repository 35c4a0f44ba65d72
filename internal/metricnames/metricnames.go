// Package metricnames is the one list of the Prometheus series rlbench
// emits: the live ones that `run` and `attack` push by remote write while
// they run (defined here), and the end-of-run families of analyze/report's
// WritePrometheus (defined there, listed here). A dashboard or an
// integration test reads the names from here (All), never spells them.
//
// Names and labels follow Prometheus' naming conventions
// (https://prometheus.io/docs/practices/naming/): the rlbench_ prefix, base
// units (seconds), _total for counters. Every remote-written series carries
// LabelRunID.
package metricnames

import "github.com/rlbench/rlbench/analyze/report"

// Live series, pushed by remote write while a run or an attack goes
// (export/remotewrite). Each carries LabelRunID, LabelScenario and
// LabelRepeat (a scenario's repeat, "1" upwards; for `rlbench attack`,
// scenario is the attack's name and repeat "1").
const (
	// RequestsTotal counts the responses per target and response class
	// (labels target, class; class is an evidence.Class name:
	// no_response, admitted, local_429, ...), plus requests that never left
	// the client (class "not_sent"): a counter over the scenario (its
	// attack steps add up).
	RequestsTotal = "rlbench_requests_total"
	// RequestsInFlight is the number of requests whose first byte has left
	// and whose result is not recorded yet, per target (label target).
	RequestsInFlight = "rlbench_requests_in_flight"
	// PacingErrorSeconds is the pacing error so far of the current attack
	// step's paced flows (send time minus intended send time, seconds) at
	// quantiles 0.5, 0.9, 0.99 and 1 (label quantile); absent while nothing
	// paced was sent.
	PacingErrorSeconds = "rlbench_pacing_error_seconds"
	// FaultActive is 1 while a fault window is open, else 0 (label fault:
	// the fault step's name): windows as analyze/faults.go places them (a
	// stop or set opens one on its target that the next start or clear of
	// that target closes; a restart or exec is a window of its own length).
	// A sample is 1 when the window was open at any time since the
	// previous sample, so a window shorter than the push interval still
	// shows.
	FaultActive = "rlbench_fault_active"
)

// ClassNotSent is RequestsTotal's class for requests that never left the
// client (evidence.Request.NotSent): not a response class.
const ClassNotSent = "not_sent"

// Label names.
const (
	LabelRunID    = "run_id" // the run directory's name (<stamp>-<n>); for `attack`, the --out directory's
	LabelScenario = "scenario"
	LabelRepeat   = "repeat"
	LabelTarget   = "target"
	LabelClass    = "class"
	LabelQuantile = "quantile"
	LabelFault    = "fault"
	LabelStatus   = "status" // end of run: rlbench_status and rlbench_scenario_status
)

// Live lists the live series names, in the order above.
func Live() []string {
	return []string{RequestsTotal, RequestsInFlight, PacingErrorSeconds, FaultActive}
}

// EndOfRun lists the end-of-run family names of analyze/report's
// WritePrometheus, which also go out by remote write once `run` has
// judged the evidence (each with LabelRunID added). A summary family
// (report.MetricLatency) is the series of that name (label quantile) and
// its _sum and _count.
func EndOfRun() []string {
	return []string{report.MetricReportTimestamp, report.MetricStatus, report.MetricScenarioStatus, report.MetricSent,
		report.MetricAdmitted, report.MetricResponses, report.MetricReceipts, report.MetricIntendedLimit,
		report.MetricOverAdmission, report.MetricIntendedWindow, report.MetricBound, report.MetricDuration,
		report.MetricReconciliation, report.MetricLatency}
}

// All is Live then EndOfRun.
func All() []string { return append(Live(), EndOfRun()...) }
