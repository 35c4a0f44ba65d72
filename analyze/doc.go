// Package analyze reconciles the evidence of a rate-limit experiment — what
// clients saw (requests.jsonl), what the backend really received
// (receipts.jsonl), what the proxies counted (Envoy admin /stats snapshots),
// what the rate limit service decided and when faults happened — and judges
// each scenario PASS, FAIL or NOT_RUN.
//
// Analyze is evidence.Load followed by Judge; Judge reads no file and works
// on an evidence.Bundle, so evidence held in memory can be judged too. Each
// property is a named Checker of DefaultCheckers; Compose merges their
// results in the Jepsen checker model (fail over unknown over pass; a
// panicking checker is unknown; nothing checked is not PASS), and incomplete
// evidence is NOT_RUN whatever the checks say.
//
// The central checker replays each scenario's requests through a model of
// every limiter scenario.json declares (evidence.Limiter; package
// model): a request reached a limiter somewhere in [send,
// min(response, receipt)], and model.Check decides must admit, must reject
// or either for each one and bounds the admitted count per key, fixed window
// and limiter from below and above (Report.Scenarios[].Limiters). Admitted
// means passed the limiter (Classes.Passed), whatever the backend answered.
// Faults suspend the checks of the limiters they act on, inside their window
// and its measured recovery lag; RLS decisions are joined to their requests
// one by one (late ones are zombies); admissions the RLS did not decide
// without a fault, limits that never engage, shadow counts and rate-limit
// headers are findings of their own; a scenario that asks nothing is NOT_RUN.
//
// # Where things are
//
// analyze.go holds Analyze, Judge, JudgeScenario, Input, the sections
// table and the totals every section counts with; checker.go Checker, Result, Compose, the verdict and
// DefaultCheckers (in report order). The report types and their renderers
// are in analyze/report. Each family of checkers has one file holding the
// step that computes its report section from Input (a section: name,
// needs, compute) and its checkers:
//
//	receipts.go          the receipts (admitted, classes, receipts, receipts = admitted, receipts without id)
//	limiters.go          the limiters' model replay (limiter models); findings.go its findings (model bound,
//	                     fail-open leak, limit engaged, not limited, shadow); rlsjoin.go, shards.go, harness.go help it
//	rls.go               the RLS decisions (RLS 500s in fault windows, rls decisions, rls decisions logged, real rls);
//	                     rlsreal.go reconciles a real RLS's logs and metrics
//	nginxlog.go          the nginx access log join (nginx logs, admission timing)
//	ratelimitheaders.go  the rate-limit response headers (rate-limit headers)
//	flows.go             the per-flow and per-key tables (starved)
//	arrivals.go          the backend's arrival peaks (backend peak); forwards.go the limiters' forward times
//	accesslog.go         the Envoy access log join (access logs)
//	stats.go             the proxies' counters (proxy stats)
//	amplification.go     receipts per request (amplification)
//	intended.go          over-admission against the intended limit (intended limit)
//	bound.go, faults.go, latency.go  the configured bound, the fault windows, the latency (no checker of their own)
//
// vacuous.go tells the expectations that cannot fail (NOT_RUN, never a
// vacuous PASS), series.go computes the plots' time series, groups.go the
// report's scenario groups.
//
// Before the first checker runs, JudgeScenario computes every section in
// dependency order (sections; a section comes after those it needs), so a
// checker of another program added with Options.ExtraCheckers sees the
// whole report: Input.Report (every section), Input.Evidence (the
// requests' columns, receipts, decisions, stats snapshots, faults),
// Input.Scenario (the expectation and the limiters, with Options'
// overrides), Input.AccessLogs and Input.Received / ReceiptNs.
//
// The report is an API for dashboards: its JSON form is versioned by
// ReportSchema and described by schemas/report.v2.schema.json.
package analyze
