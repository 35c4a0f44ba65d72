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
// The report is an API for dashboards: its JSON form is versioned by
// ReportSchema and described by schemas/report.v2.schema.json.
package analyze
