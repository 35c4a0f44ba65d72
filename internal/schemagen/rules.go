package schemagen

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/invopop/jsonschema"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/runner"
)

// A rule constrains the schema of a property or a definition.
type rule func(*jsonschema.Schema)

// fieldRules constrain properties, keyed "<package>.<Type>.<Field>" (Go
// names). Closed sets are enums of the constants that own them; a field
// added with a closed set of values gets its rule here. Generate fails when
// a key names no field of the schemas.
var fieldRules = map[string]rule{
	// the event stream
	"events.Event.Type":             enum(events.Types...),
	"events.Event.Time":             format("date-time"),
	"events.Event.Seq":              minimum(1),
	"events.TargetProgress.Classes": keys(evidence.ClassNames()...),
	"events.Verdict.Status":         enum(evidence.Pass, evidence.Fail, evidence.NotRun),
	"events.Finished.Status":        enum(evidence.Pass, evidence.Fail, evidence.NotRun),
	"events.Finished.ExitCode":      minimum(0),
	"events.Fault.Action":           enum(faultActions...),
	// evidence records
	"evidence.Request.Code":                 between(0, 999),
	"evidence.Receipt.RecvTime":             format("date-time"),
	"evidence.Fault.Action":                 enum(faultActions...),
	"evidence.Decision.Code":                enum(decisionCodes...),
	"evidence.LimitSpec.Kind":               enum(evidence.LimitTokenBucket, evidence.LimitFixedWindow),
	"evidence.LimitSpec.WindowStart":        enum(evidence.WindowAligned, evidence.WindowFirstHit),
	"evidence.Expectation.Classes":          keys(classNames()...),
	"evidence.Expectation.Ratios":           keys(evidence.RatioNames()...),
	"evidence.LatencyThreshold.Class":       enum(evidence.ClassNames()...),
	"evidence.AttackSummary.Start":          format("date-time"),
	"evidence.AttackSummary.End":            format("date-time"),
	"evidence.AttackSummary.CodesByTarget":  values(keyPattern(`^[0-9]+$`)),
	"evidence.AttackFlow.CodesByTarget":     values(keyPattern(`^[0-9]+$`)),
	"evidence.Request.Proto":                enum("HTTP/1.1", "HTTP/2.0"),
	"evidence.AttackConfig.Protocol":        enum("h2", "h2c"),
	"evidence.AttackShard.IDSetDigest":      pattern(`^sha256:[0-9a-f]{64}$`),
	"evidence.AttackShard.Digest":           pattern(`^sha256:[0-9a-f]{64}$`),
	"evidence.AttackShardFlow.IDSetDigest":  pattern(`^sha256:[0-9a-f]{64}$`),
	"evidence.AttackShardFlow.ConfigDigest": pattern(`^sha256:[0-9a-f]{64}$`),
	"evidence.AttackStartAt.At":             format("date-time"),
	"evidence.Manifest.Start":               format("date-time"),
	"evidence.Manifest.End":                 format("date-time"),
	"evidence.Manifest.PlanDigest":          pattern(`^sha256:[0-9a-f]{64}$`),
	"evidence.Manifest.ScenarioDirs":        maxItems(evidence.MaxRunScenarios),
	"evidence.Scenario.Proxies":             maxItems(evidence.MaxScenarioProxies),
	"envoyrec.Snapshot.Format":              enum(string(envoyrec.FormatText), string(envoyrec.FormatJSON), string(envoyrec.FormatPrometheus)),
	"evidence.FileState.State":              enum(evidence.StateOpen, evidence.StateClosed),
	"evidence.FileState.Records":            minimum(0),
	"evidence.FileState.Bytes":              minimum(0),
	"evidence.Harness.CPUs":                 minimum(1),
	"evidence.Harness.StealNs":              minimum(-1),
	"evidence.Harness.Load1Start":           minimum(-1),
	"evidence.Harness.Load1End":             minimum(-1),
	"evidence.HarnessProbe.IntervalNs":      minimum(0),
	"evidence.HarnessProbe.Samples":         minimum(0),
	"evidence.HarnessProbe.MaxLateNs":       minimum(0),
	"evidence.HarnessProbe.P99LateNs":       minimum(0),
	"evidence.HarnessProbe.Stalls":          maxItems(evidence.HarnessMaxStalls),
	"evidence.HarnessStall.LateNs":          minimum(0),
	"evidence.Decision.RecvNs":              minimum(0),

	// nginx evidence
	"nginxrec.AccessRecord.Line":           minimum(1),
	"nginxrec.AccessRecord.Status":         between(0, 999),
	"nginxrec.AccessRecord.TimeMs":         minimum(0),
	"nginxrec.AccessRecord.RequestTimeMs":  minimum(0),
	"nginxrec.AccessRecord.LimitReqStatus": enum(nginxrec.LimitReqPassed, nginxrec.LimitReqDelayed, nginxrec.LimitReqRejected, nginxrec.LimitReqDelayedDryRun, nginxrec.LimitReqRejectedDryRun),
	"nginxrec.AccessRecord.Connection":     minimum(0),
	"nginxrec.UpstreamTry.Status":          between(0, 999),
	"nginxrec.UpstreamTry.ResponseTimeMs":  minimum(0),
	"nginxrec.UpstreamTry.Group":           minimum(0),
	"nginxrec.ErrorEntry.Line":             minimum(1),
	"nginxrec.ErrorEntry.Conn":             minimum(0),
	"nginxrec.LimitEvent.Action":           enum(nginxrec.LimitActionReject, nginxrec.LimitActionDelay, nginxrec.LimitActionNoMemory),
	"nginxrec.LimitEvent.ExcessMilli":      minimum(0),

	// the report
	"report.Report.GeneratedAt":    format("date-time"),
	"report.Report.Status":         enum(verdicts...),
	"report.ScenarioReport.Status": enum(verdicts...),
	"report.Group.Status":          enum(verdicts...),
	"report.Matrix.Status":         enum(verdicts...),
	"report.MatrixCell.Status":     enum(verdicts...),
	"report.MatrixCell.Repeats":    minimum(1),
	"report.Check.Status":          enum(report.CheckPass, report.CheckFail, report.CheckUnknown, report.CheckNotChecked),
	"report.ProxyStats.Status":     enum(report.StatsOK, report.StatsMissing, report.StatsReset),
	"report.RLSCheck.ByCode":       keys(decisionCodes...),
	"report.RealDecision.Code":     enum(decisionCodes...),
	"report.RealIdentity.Status":   enum(rls.IdentityPass, analyze.IdentityExplained, rls.IdentityFail, analyze.IdentityUnknown),
	"report.Group.Repeats":         minimum(0),
	"report.TargetReport.Receipts": minimum(0),
	"report.FaultWindow.Receipts":  minimum(0),
	"report.RLSCheck.Decisions":    minimum(0),
	"report.ScenarioReport.Repeat": minimum(0),

	// the diff of two runs (rlbench diff)
	"report.DiffInput.Kind":       enum(report.DiffRun, report.DiffScenario, report.DiffSaved),
	"report.DiffInput.Status":     enum(verdicts...),
	"report.DiffInput.PlanDigest": pattern(`^sha256:[0-9a-f]{64}$`),
	"report.ScenarioRef.Status":   enum(verdicts...),
	"report.VerdictFlip.A":        enum(verdicts...),
	"report.VerdictFlip.B":        enum(verdicts...),
	"report.VerdictFlip.Change":   enum(report.ChangeWorse, report.ChangeBetter),
	"report.ScenarioDiff.A":       enum(verdicts...),
	"report.ScenarioDiff.B":       enum(verdicts...),
	"report.ScenarioDiff.Change":  enum(report.ChangeSame, report.ChangeWorse, report.ChangeBetter),
	"report.ConfigChange.Source":  enum(report.DigestRecorded, report.DigestComputed),
	"report.ConfigChange.A":       pattern(`^(sha256:[0-9a-f]{64})?$`),
	"report.ConfigChange.B":       pattern(`^(sha256:[0-9a-f]{64})?$`),

	// the plan: what runner.ParsePlan checks, where a schema can say it
	"runner.ScenarioPlan.Name":                          minLength(1),
	"runner.ConformancePlan.Limiters":                   minItems(1),
	"runner.ConformancePlan.Shapes":                     minItems(1),
	"runner.ConformanceLimiter.Name":                    minLength(1),
	"runner.ConformanceShape.Name":                      minLength(1),
	"runner.ConformanceShape.Repeat":                    between(0, runner.MaxRepeat),
	"runner.ConformanceLimiter.Skip":                    items(enum(runner.SkippableExpectations...)),
	"evidence.Labels.Limiter":                           minLength(1),
	"evidence.Labels.Shape":                             minLength(1),
	"runner.AttackPlan.IDs":                             between(1, attack.MaxIDs),
	"runner.AttackPlan.Flows":                           minItems(1),
	"runner.FlowPlan.Name":                              minLength(1),
	"runner.FlowPlan.IDs":                               between(1, attack.MaxIDs),
	"proxy.LocalRateLimit.MaxTokens":                    minimum(1),
	"proxy.LocalRateLimit.FilterEnabled":                between(0, 100),
	"proxy.LocalRateLimit.FilterEnforced":               between(0, 100),
	"proxy.GlobalFilter.Domain":                         minLength(1),
	"runner.GlobalPlan.Descriptors":                     minItems(1),
	"runner.RLSPlan.Kind":                               enum(runner.RLSLab, runner.RLSReal),
	"runner.RLSPlan.Config":                             minLength(1),
	"runner.RLSPlan.WindowStart":                        enum(evidence.WindowAligned, evidence.WindowFirstHit),
	"runner.ExternalPlan.Proxies":                       itemsBetween(1, evidence.MaxScenarioProxies),
	"runner.FaultPlan.Action":                           enum(faultActions...),
	"backend.Faults.ErrorProbability":                   between(0, 1),
	"backend.Faults.ResetProbability":                   between(0, 1),
	"backend.Faults.MaxConcurrent":                      minimum(0),
	"backend.Faults.OverCapacity":                       enum(backend.OverCapacity503, backend.OverCapacityRefuse),
	"descriptor.GenericKeyAction.DescriptorValue":       minLength(1),
	"descriptor.HeaderValueMatchAction.DescriptorValue": minLength(1),
	"descriptor.RequestHeadersAction.HeaderName":        minLength(1),
	"descriptor.RequestHeadersAction.DescriptorKey":     minLength(1),
	"descriptor.RateLimitEntry.Actions":                 minItems(1),
	"descriptor.HeaderMatcher.Name":                     minLength(1),
	"runner.ExternalProxy.Name":                         pattern(`^[A-Za-z0-9_-]{1,100}$`), // evidence.CheckName
	"runner.ScenarioPlan.Repeat":                        between(0, runner.MaxRepeat),
	"runner.LabPlan.Proxies":                            minimum(0),
	"runner.AttackPlan.Concurrency":                     minimum(0),
	"runner.FlowPlan.Concurrency":                       minimum(0),
}

// planRequired lists the plan fields runner.ParsePlan requires ("<package>.<Type>.<Field>").
var planRequired = map[string]bool{
	"runner.ScenarioPlan.Name":                          true,
	"runner.ConformancePlan.Limiters":                   true,
	"runner.ConformancePlan.Shapes":                     true,
	"runner.ConformanceLimiter.Name":                    true,
	"runner.ConformanceShape.Name":                      true,
	"evidence.Labels.Limiter":                           true,
	"evidence.Labels.Shape":                             true,
	"runner.FlowPlan.Name":                              true,
	"proxy.LocalRateLimit.MaxTokens":                    true,
	"proxy.GlobalFilter.Domain":                         true,
	"runner.RLSPlan.Config":                             true,
	"runner.ExternalPlan.Proxies":                       true,
	"runner.FaultPlan.Action":                           true,
	"descriptor.GenericKeyAction.DescriptorValue":       true,
	"descriptor.HeaderValueMatchAction.DescriptorValue": true,
	"descriptor.RequestHeadersAction.HeaderName":        true,
	"descriptor.RequestHeadersAction.DescriptorKey":     true,
	"descriptor.RateLimitEntry.Actions":                 true,
	"descriptor.HeaderMatcher.Name":                     true,
}

// addedLater lists fields added to a record after files of its schema
// version had been written ("<package>.<Type>.<Field>"): rlbench writes
// them, but files of earlier releases lack them and still load, so the
// schema does not require them. A field added without omitempty to a type
// of a published schema version belongs here (TestPreviousReleaseMatchesSchemas
// in analyze fails on the previous release's evidence until it is).
var addedLater = map[string]bool{
	// issue 10 and issue 14 (attack.json of rlbench.attack/v1 and its phases in v2)
	"evidence.AttackSummary.NotSent":   true,
	"evidence.AttackSummary.LatencyNs": true,
}

// typeRules constrain definitions, keyed "<package>.<Type>".
var typeRules = map[string]rule{
	// Event: the object of its type, and no other (events.Sink.Emit).
	"events.Event": func(s *jsonschema.Schema) {
		objs := map[string]string{events.TypeStarted: "started", events.TypeProgress: "progress", events.TypeFaultBegin: "fault",
			events.TypeFaultEnd: "fault", events.TypeVerdict: "verdict", events.TypeFinished: "finished"}
		for _, t := range events.Types {
			props := map[string]*jsonschema.Schema{"type": {Const: t}}
			for _, o := range []string{"started", "progress", "fault", "verdict", "finished"} {
				if o != objs[t] {
					props[o] = &jsonschema.Schema{Not: &jsonschema.Schema{}}
				}
			}
			s.OneOf = append(s.OneOf, withProps(props, "type", objs[t]))
		}
	},
	"nginxrec.StubStatus": allMinimum(0),
	"report.RealWindow":   allMinimum(0, "key", "epoch"),
	"report.RealErrors":   allMinimum(0),
	"report.Receipts":     allMinimum(0),
	"runner.ScenarioPlan": scenarioPlanShape,
	// Plan: scenarios, or a conformance section whose pairs are its scenarios.
	"runner.Plan": func(s *jsonschema.Schema) {
		s.AnyOf = []*jsonschema.Schema{nonEmpty("scenarios"), required("conformance")}
	},
	// ConformanceLimiter: exactly one of lab or external.
	"runner.ConformanceLimiter": func(s *jsonschema.Schema) {
		s.OneOf = []*jsonschema.Schema{required("lab"), required("external")}
	},
	// ConformanceShape: attack or steps, not both.
	"runner.ConformanceShape": func(s *jsonschema.Schema) {
		s.AllOf = []*jsonschema.Schema{{AnyOf: []*jsonschema.Schema{required("attack"), required("steps")}}, {Not: required("attack", "steps")}}
	},
	// AttackPlan: a single flow (ids) or flows.
	"runner.AttackPlan": func(s *jsonschema.Schema) { s.OneOf = []*jsonschema.Schema{required("ids"), required("flows")} },
	// FlowPlan: ids or duration (with a rate).
	"runner.FlowPlan": func(s *jsonschema.Schema) {
		s.OneOf = []*jsonschema.Schema{required("ids"), required("duration", "rate")}
	},
	// GatewayPlan (lab.gateway): exactly one limiter.
	"runner.GatewayPlan": func(s *jsonschema.Schema) {
		s.OneOf = []*jsonschema.Schema{required("lua"), required("gcra"), required("xrate")}
	},
	// Step: exactly one of attack or fault.
	"runner.Step": func(s *jsonschema.Schema) { s.OneOf = []*jsonschema.Schema{required("attack"), required("fault")} },
	// FaultPlan: stop, start and restart act on rls or redis; exec runs a command.
	"runner.FaultPlan": func(s *jsonschema.Schema) {
		s.AllOf = []*jsonschema.Schema{
			{If: actionIn(evidence.ActionStop, evidence.ActionStart, evidence.ActionRestart),
				Then: withProps(map[string]*jsonschema.Schema{"target": {Enum: anys("rls", "redis")}}, "target")},
			{If: actionIn(evidence.ActionExec), Then: withProps(map[string]*jsonschema.Schema{"command": {MinLength: uptr(1)}}, "command")},
			// set and clear act on the lab backend; set installs faults, clear takes none.
			{If: actionIn(evidence.ActionSet, evidence.ActionClear),
				Then: withProps(map[string]*jsonschema.Schema{"target": {Enum: anys("backend")}}, "target")},
			{If: actionIn(evidence.ActionSet), Then: required("faults")},
			{If: actionIn(evidence.ActionClear), Then: &jsonschema.Schema{Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{required("faults"), required("for")}}}},
		}
	},
	// GlobalPlan: at least one action, in descriptors or in rate_limits.
	"runner.GlobalPlan": func(s *jsonschema.Schema) {
		s.AnyOf = []*jsonschema.Schema{nonEmpty("descriptors"), nonEmpty("rate_limits")}
	},
	// LocalRateLimit (a plan's lab.local): the default bucket needs a fill_interval unless descriptors carry the buckets.
	"proxy.LocalRateLimit": func(s *jsonschema.Schema) {
		s.AnyOf = []*jsonschema.Schema{required("fill_interval"), nonEmpty("descriptors")}
	},
	// descriptor.RateLimitAction (a descriptors or rate_limits action): exactly one action.
	"descriptor.RateLimitAction": func(s *jsonschema.Schema) { s.MinProperties, s.MaxProperties = uptr(1), uptr(1) },
}

// scenarioPlanShape: exactly one of lab or external; attack or steps, not both.
func scenarioPlanShape(s *jsonschema.Schema) {
	s.AllOf = []*jsonschema.Schema{
		{OneOf: []*jsonschema.Schema{required("lab"), required("external")}},
		{AnyOf: []*jsonschema.Schema{required("attack"), required("steps")}},
		{Not: required("attack", "steps")},
	}
}

var (
	faultActions  = []string{evidence.ActionStop, evidence.ActionStart, evidence.ActionRestart, evidence.ActionExec, evidence.ActionSet, evidence.ActionClear}
	verdicts      = []string{evidence.Pass, evidence.Fail, evidence.NotRun}
	decisionCodes = []string{evidence.CodeOK, evidence.CodeOverLimit, evidence.CodeError, evidence.CodeUnknown}
)

// classNames are the names an expectation may bound: every evidence.Class and "sent".
func classNames() []string { return evidence.ExpectClassNames() }

func anys(vs ...string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

func uptr(n uint64) *uint64 { return &n }

func num(n int) json.Number { return json.Number(strconv.Itoa(n)) }

func enum(vs ...string) rule { return func(s *jsonschema.Schema) { s.Enum = anys(vs...) } }

// keys constrains the keys of a map property to vs.
func keys(vs ...string) rule {
	return func(s *jsonschema.Schema) { s.PropertyNames = &jsonschema.Schema{Enum: anys(vs...)} }
}

func keyPattern(p string) rule {
	return func(s *jsonschema.Schema) { s.PropertyNames = &jsonschema.Schema{Pattern: p} }
}

// values applies r to the schema of a map property's values.
// items applies r to the schema of an array's items.
func items(r rule) rule { return func(s *jsonschema.Schema) { r(s.Items) } }

func values(r rule) rule { return func(s *jsonschema.Schema) { r(s.AdditionalProperties) } }

func format(f string) rule   { return func(s *jsonschema.Schema) { s.Format = f } }
func pattern(p string) rule  { return func(s *jsonschema.Schema) { s.Pattern = p } }
func minimum(n int) rule     { return func(s *jsonschema.Schema) { s.Minimum = num(n) } }
func minItems(n uint64) rule { return func(s *jsonschema.Schema) { s.MinItems = uptr(n) } }
func maxItems(n uint64) rule { return func(s *jsonschema.Schema) { s.MaxItems = uptr(n) } }
func itemsBetween(lo, hi uint64) rule {
	return func(s *jsonschema.Schema) { s.MinItems, s.MaxItems = uptr(lo), uptr(hi) }
}
func minLength(n uint64) rule {
	return func(s *jsonschema.Schema) { s.MinLength = uptr(n) }
}

func between(lo, hi int) rule {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = num(lo), num(hi) }
}

// allMinimum sets a minimum on every integer property but the named ones.
func allMinimum(n int, except ...string) rule {
	return func(s *jsonschema.Schema) {
		skip := map[string]bool{}
		for _, e := range except {
			skip[e] = true
		}
		for name, p := range s.Properties.FromOldest() {
			if p.Type == "integer" && !skip[name] {
				p.Minimum = num(n)
			}
		}
	}
}

func required(names ...string) *jsonschema.Schema { return &jsonschema.Schema{Required: names} }

// nonEmpty is {properties: {name: {minItems: 1}}, required: [name]}.
func nonEmpty(name string) *jsonschema.Schema {
	return withProps(map[string]*jsonschema.Schema{name: {MinItems: uptr(1)}}, name)
}

func actionIn(actions ...string) *jsonschema.Schema {
	return withProps(map[string]*jsonschema.Schema{"action": {Enum: anys(actions...)}}, "action")
}

// withProps is {properties: props, required: req} (props in key order).
func withProps(props map[string]*jsonschema.Schema, req ...string) *jsonschema.Schema {
	p := jsonschema.NewProperties()
	for _, k := range sortedKeys(props) {
		p.Set(k, props[k])
	}
	return &jsonschema.Schema{Properties: p, Required: req}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
