// Package schemas embeds the JSON Schemas (draft 2020-12) of rlbench's JSON
// files: every JSON file of an evidence directory, the analyze report and
// the plan format. Tests and consumers validate against the same files that
// are published in this directory (README.md says which is which).
//
// The files are generated from the Go types by internal/cmd/schemagen (run
// `go generate ./...`); a test fails when they differ from the types.
package schemas

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:generate go run ../internal/cmd/schemagen

// FS holds *.schema.json.
//
//go:embed *.schema.json
var FS embed.FS

// BaseURL is the prefix of every schema's $id (BaseURL + file name).
const BaseURL = "https://github.com/rlbench/rlbench/schemas/"

// FileName returns the file name of the schema with ID "rlbench.<thing>/v<N>":
// "<thing>.v<N>.schema.json".
func FileName(id string) string {
	thing, version, _ := strings.Cut(strings.TrimPrefix(id, "rlbench."), "/")
	return thing + "." + version + ".schema.json"
}

// File names of the schemas, FileName of the schema IDs that evidence,
// analyze and runner own.
const (
	// Report is the schema of `rlbench analyze --format json` (analyze.ReportSchema "rlbench.report/v2").
	Report = "report.v2.schema.json"
	// ReportV1 is the schema of the reports of "rlbench.report/v1", as the
	// release that wrote them published it (Frozen: no longer generated).
	ReportV1 = "report.v1.schema.json"
	// Diff is the schema of `rlbench diff --format json` (report.DiffSchema "rlbench.diff/v1").
	Diff = "diff.v1.schema.json"
	// Matrix is the schema of the conformance matrix (report.MatrixSchema "rlbench.matrix/v1").
	Matrix = "matrix.v1.schema.json"
	// Plan is the schema of a plan's JSON form (runner.PlanSchema "rlbench.plan/v1").
	Plan = "plan.v1.schema.json"
	// Request is the schema of one requests.jsonl line (evidence.Request).
	Request = "request.v1.schema.json"
	// Receipt is the schema of one receipts.jsonl line (evidence.Receipt).
	Receipt = "receipt.v1.schema.json"
	// Fault is the schema of one faults.jsonl line (evidence.Fault).
	Fault = "fault.v1.schema.json"
	// Decision is the schema of one rls/decisions.jsonl line (evidence.Decision).
	Decision = "decision.v1.schema.json"
	// Scenario is the schema of scenario.json (evidence.Scenario, "rlbench.scenario/v1").
	Scenario = "scenario.v1.schema.json"
	// Attack is the schema of attack.json (evidence.Attack, "rlbench.attack/v2").
	Attack = "attack.v2.schema.json"
	// AttackV1 is the schema of attack.json files of "rlbench.attack/v1", in
	// both shapes that load (evidence.AttackSummary, evidence.Attack).
	AttackV1 = "attack.v1.schema.json"
	// Manifest is the schema of manifest.json (evidence.Manifest).
	Manifest = "manifest.v1.schema.json"
	// Merge is the schema of merge.json (evidence.MergeRecord, "rlbench.merge/v1").
	Merge = "merge.v1.schema.json"
	// Harness is the schema of harness.json (evidence.Harness, "rlbench.harness/v1").
	Harness = "harness.v1.schema.json"
	// EnvoyStats is the schema of stats/<proxy>.<label>.json (evidence/envoyrec.Snapshot).
	EnvoyStats = "envoy-stats.v1.schema.json"
	// RLSMetrics is the schema of rls/metrics.<label>.json (evidence.RLSMetrics, or a bare evidence.RLSCounters).
	RLSMetrics = "rls-metrics.v1.schema.json"
	// RLSLog is the schema of rls/log.json (collect/rls.Log).
	RLSLog = "rls-log.v1.schema.json"
	// Event is the schema of one line of the event stream (events.Event, "rlbench.event/v1").
	Event = "event.v1.schema.json"
	// FileState is the schema of a JSON Lines file's seal,
	// <file>.jsonl.state.json (evidence.FileState, "rlbench.jsonl-state/v1").
	FileState = "jsonl-state.v1.schema.json"
)

// Frozen are the schemas of earlier versions of a file, kept verbatim as
// their release published them so that files of that release still
// validate; the generator neither writes nor removes them.
var Frozen = []string{ReportV1}

// IsFrozen reports whether name is one of Frozen.
func IsFrozen(name string) bool {
	for _, f := range Frozen {
		if f == name {
			return true
		}
	}
	return false
}

var compiled sync.Map // file name -> *jsonschema.Schema

// Compile returns the compiled schema of the embedded file name (one of the
// constants), compiled once.
func Compile(name string) (*jsonschema.Schema, error) {
	if s, ok := compiled.Load(name); ok {
		return s.(*jsonschema.Schema), nil
	}
	f, err := FS.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(name)
	if err != nil {
		return nil, err
	}
	compiled.Store(name, s)
	return s, nil
}

// Validate validates one JSON document against the schema file name.
func Validate(name string, doc []byte) error {
	s, err := Compile(name)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// ValidateLines validates every non-blank line of JSON Lines data against
// the schema file name; the error names the first line that does not match.
func ValidateLines(name string, data []byte) error {
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := Validate(name, line); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return nil
}
