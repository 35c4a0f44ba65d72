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
