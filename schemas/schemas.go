// Package schemas embeds the JSON Schemas (draft 2020-12) of rlbench's JSON
// outputs, so tests and consumers validate against the same files that are
// published in this directory.
package schemas

import "embed"

// FS holds *.schema.json.
//
//go:embed *.schema.json
var FS embed.FS

// Report is the schema of `rlbench analyze --format json` (analyze.ReportSchema "rlbench.report/v1").
const Report = "report.v1.schema.json"

// Request is the schema of one requests.jsonl line (evidence.Request).
const Request = "request.v1.schema.json"

// Receipt is the schema of one receipts.jsonl line (evidence.Receipt).
const Receipt = "receipt.v1.schema.json"

// Scenario is the schema of scenario.json (evidence.Scenario, "rlbench.scenario/v1").
const Scenario = "scenario.v1.schema.json"
