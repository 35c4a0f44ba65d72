package schemagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/haproxyrec"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/model"
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// specs lists every schema file: each JSON file of an evidence directory
// (status.txt is text and the raw Envoy, nginx and RLS pages and logs are
// theirs, not rlbench's: they have none), the analyze report and the plan.
func specs() []spec {
	return []spec{
		{id: evidence.RequestSchema, what: "one line of requests.jsonl (attack.Run)", root: typeOf[evidence.Request]()},
		{id: evidence.ReceiptSchema, what: "one line of receipts.jsonl (the backend)", root: typeOf[evidence.Receipt]()},
		{id: evidence.FaultSchema, what: "one line of faults.jsonl", root: typeOf[evidence.Fault]()},
		{id: evidence.DecisionSchema, what: "one line of rls/decisions.jsonl", root: typeOf[evidence.Decision]()},
		{id: evidence.ScenarioSchema, what: "scenario.json", root: typeOf[evidence.Scenario](),
			consts: map[string]string{"Scenario": evidence.ScenarioSchema}, ranges: rangeAny},
		{id: evidence.AttackSchema, what: "attack.json", root: typeOf[evidence.Attack](),
			consts: map[string]string{"Attack": evidence.AttackSchema, "AttackSummary": evidence.AttackSummarySchema}},
		{id: evidence.AttackSummarySchema, what: "attack.json as written before rlbench.attack/v2 (a bare summary of `rlbench attack`, or the runner's phases), and one attack's summary",
			oneOf:  []reflect.Type{typeOf[evidence.AttackSummary](), typeOf[evidence.Attack]()},
			consts: map[string]string{"Attack": evidence.AttackSummarySchema, "AttackSummary": evidence.AttackSummarySchema}},
		{id: evidence.ManifestSchema, what: "manifest.json of a run directory", root: typeOf[evidence.Manifest](),
			consts: map[string]string{"Manifest": evidence.ManifestSchema}},
		{id: envoyrec.SnapshotSchema, what: "stats/<proxy>.<label>.json, a parsed Envoy admin /stats snapshot", root: typeOf[envoyrec.Snapshot](),
			consts: map[string]string{"Snapshot": envoyrec.SnapshotSchema}},
		{id: evidence.RLSMetricsSchema, what: "rls/metrics.<label>.json, one scrape of the real RLS's /metrics (or the bare counters an older collect wrote)",
			oneOf:  []reflect.Type{typeOf[evidence.RLSMetrics](), typeOf[evidence.RLSCounters]()},
			consts: map[string]string{"RLSMetrics": evidence.RLSMetricsSchema}},
		{id: evidence.RLSLogSchema, what: "rls/log.json, the real RLS's log parsed by `rlbench collect rls-log`", root: typeOf[rls.Log]()},
		{id: evidence.StateSchema, what: "<file>.jsonl.state.json, the seal of a JSON Lines file: open until its writer closed it, then closed with its lines and bytes, or the write error",
			root: typeOf[evidence.FileState](), consts: map[string]string{"FileState": evidence.StateSchema}},
		{id: evidence.MergeSchema, what: "merge.json of a scenario directory written by `rlbench merge` (the shards of one attack joined)",
			root: typeOf[evidence.MergeRecord](), consts: map[string]string{"MergeRecord": evidence.MergeSchema}},
		{id: evidence.HarnessSchema, what: "harness.json of a scenario directory: what rlbench measured of its own host while the scenario ran (steal, load, wake-up stalls)",
			root: typeOf[evidence.Harness](), consts: map[string]string{"Harness": evidence.HarnessSchema}},
		{id: evidence.NginxAccessSchema, what: "one line of nginx/<proxy>/access.jsonl", root: typeOf[nginxrec.AccessRecord]()},
		{id: evidence.NginxLimitReqSchema, what: "one line of nginx/<proxy>/limit_req.jsonl", root: typeOf[nginxrec.ErrorEntry]()},
		{id: evidence.NginxStubStatusSchema, what: "nginx/<proxy>/stub_status.<label>.json", root: typeOf[nginxrec.StubStatus]()},
		{id: evidence.HAProxyLogSchema, what: "one line of haproxy/<proxy>/log.jsonl", root: typeOf[haproxyrec.LogRecord]()},
		{id: report.ReportSchema, what: "the report of `rlbench analyze --format json` (and `rlbench run --format json`)",
			root: typeOf[report.Report](), consts: map[string]string{"Report": report.ReportSchema}},
		{id: report.DiffSchema, what: "the comparison of two runs, `rlbench diff A B --format json`",
			root: typeOf[report.Diff](), consts: map[string]string{"Diff": report.DiffSchema}},
		{id: events.Schema, what: "one line of the event stream (`rlbench run --events`, `rlbench attack --events`)", root: typeOf[events.Event](),
			consts: map[string]string{"Event": events.Schema}},
		{id: report.MatrixSchema, what: "the conformance matrix of `rlbench conformance --format json`, also the matrix of a report whose scenarios carry labels (limiter × shape: verdicts, admissions against the model, forwards' smoothness, why)",
			root: typeOf[report.Matrix](), consts: map[string]string{"Matrix": report.MatrixSchema}},
		{id: runner.PlanSchema, what: "a plan (`rlbench run PLAN.yaml`), in the JSON form of its YAML", root: typeOf[runner.Plan](),
			ranges: rangePlan, plan: true},
	}
}

// rangeMode is how a file writes evidence.Range.
type rangeMode int

const (
	// rangeObject: {min, max}, as rlbench writes it (reports).
	rangeObject rangeMode = iota
	// rangeAny: every form evidence.Range reads: N, "N", "MIN..MAX", {min, max}.
	rangeAny
	// rangePlan: rangeAny with non-negative counts, as plans must have.
	rangePlan
)

// Patterns of the string forms of the custom types. They accept every
// string the Go parser accepts (FuzzPatterns); bounds a regular expression
// cannot check (MIN <= MAX, a positive duration, overflow) are left to the
// loader.
const (
	// rangePattern is evidence.ParseRange's syntax: N or MIN..MAX.
	rangePattern = `^\s*([+-]?[0-9]+|-?[0-9]+\s*\.\.\s*-?[0-9]+)\s*$`
	// planRangePattern is rangePattern without negative counts.
	planRangePattern = `^\s*(\+?[0-9]+|-0+|([0-9]+|-0+)\s*\.\.\s*-?[0-9]+)\s*$`
	// durationPattern is time.ParseDuration's syntax.
	durationPattern = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// latencyPattern is backend.ParseLatency's syntax: DURATION,
	// uniform:MIN..MAX, exp:MEAN or normal:MEAN,STDDEV.
	latencyPattern = `^\s*(` + durationBody + `|uniform:\s*` + durationBody + `\s*\.\.\s*` + durationBody +
		`|exp:\s*` + durationBody + `|normal:\s*` + durationBody + `\s*,\s*` + durationBody + `)\s*$`
	// latencyBoundPattern is evidence.ParseLatencyBound's syntax: an
	// operator and a duration.
	latencyBoundPattern = `^\s*(<=|>=|<|>)\s*` + durationBody + `\s*$`
	// ratioBoundPattern is evidence.ParseRatioBound's syntax: an operator
	// and a decimal number, optionally a percentage.
	ratioBoundPattern = `^\s*(<=|>=|<|>)\s*\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?\s*%?\s*$`
	durationBody      = `[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)`
	// intendedPattern is evidence.ParseIntendedLimit's syntax: N/DURATION
	// or N/UNIT, spaces allowed around the slash.
	intendedPattern = `^\s*(\+?[0-9]+|-0+)\s*/\s*([-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+|\.?(ns|us|µs|μs|ms|s|m|h))\s*$`
	// ratePattern is attack.ParseRate's syntax: "", "0", "infinity", N,
	// N/DURATION or N/UNIT.
	ratePattern = `^\s*(0|infinity|\+?[0-9]+(/(\+?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+|\.?(ns|us|µs|μs|ms|s|m|h)))?)?\s*$`
)

// special returns the definition (and its name) of a type whose JSON form
// is its own (custom UnmarshalJSON), or nil for other types.
func (g *gen) special(t reflect.Type, mode rangeMode) (*jsonschema.Schema, string) {
	switch t {
	case typeOf[evidence.Range]():
		return g.rangeDef(t, mode), "Range"
	case typeOf[evidence.IntendedLimit]():
		return g.intendedDef(t, mode), "IntendedLimit"
	case typeOf[evidence.AdmittedExpectation]():
		return &jsonschema.Schema{Description: g.comment(t, ""),
			OneOf: []*jsonschema.Schema{{Ref: "#/$defs/Range"}, {Type: "string", Const: evidence.AdmittedModel}}}, "AdmittedExpectation"
	case typeOf[proxy.Duration]():
		return &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: g.comment(t, "") +
			"\n\nThe syntax of time.ParseDuration: a sequence of decimal numbers with units ns, us (or µs), ms, s, m, h, e.g. \"300ms\", \"1h30m\"; \"0\" is zero.",
			Examples: []any{"1h", "20ms"}}, "Duration"
	case typeOf[backend.Latency]():
		return &jsonschema.Schema{Type: "string", Pattern: latencyPattern, Description: g.comment(t, "") +
			"\n\nA Go duration (\"20ms\", fixed), \"uniform:MIN..MAX\", \"exp:MEAN\" or \"normal:MEAN,STDDEV\".",
			Examples: []any{"20ms", "uniform:10ms..50ms"}}, "Latency"
	case typeOf[model.Duration]():
		return &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: g.comment(t, ""),
			Examples: []any{"1s", "500ms"}}, "ModelDuration"
	case typeOf[evidence.LatencyBound]():
		return &jsonschema.Schema{Type: "string", Pattern: latencyBoundPattern, Description: g.comment(t, "") +
			"\n\nAn operator (<, <=, >, >=) and a Go duration >= 0, e.g. \"<= 50ms\".", Examples: []any{"<= 50ms", "< 1s"}}, "LatencyBound"
	case typeOf[evidence.RatioBound]():
		return &jsonschema.Schema{Type: "string", Pattern: ratioBoundPattern, Description: g.comment(t, "") +
			"\n\nAn operator (<, <=, >, >=) and a percentage (\"0.1%\") or a fraction (\"0.001\") in 0..1.", Examples: []any{"< 0.1%", "<= 0.001"}}, "RatioBound"
	case typeOf[model.Spec]():
		return g.modelSpecDef(t), "Spec"
	case typeOf[evidence.PeakExpectations]():
		one := &jsonschema.Schema{Ref: "#/$defs/PeakExpectation"}
		return &jsonschema.Schema{Description: g.comment(t, ""),
			OneOf: []*jsonschema.Schema{one, {Type: "array", Items: one}}}, "PeakExpectations"
	case typeOf[report.Classes]():
		return g.classesDef(t), "Classes"
	case typeOf[runner.LuaArg]():
		return &jsonschema.Schema{Description: g.comment(t, ""),
			OneOf: []*jsonschema.Schema{{Type: "string"}, {Type: "number"}}}, "LuaArg"
	case typeOf[runner.Rate]():
		return &jsonschema.Schema{Description: g.comment(t, "") +
			"\n\nA string N/DURATION (\"100/1s\", \"10/100ms\"), N/UNIT (\"60/m\"), N (per second), or \"\", \"0\" or \"infinity\" for no pacing; or an integer N per second (0: no pacing). N and DURATION must be positive.",
			OneOf: []*jsonschema.Schema{{Type: "string", Pattern: ratePattern}, {Type: "integer", Minimum: "0"}}}, "Rate"
	}
	return nil, ""
}

// intendedDef is evidence.IntendedLimit's definition: a number (per run;
// >= 0 in a plan), the object {requests, per} or the string N/DURATION.
func (g *gen) intendedDef(t reflect.Type, mode rangeMode) *jsonschema.Schema {
	num := &jsonschema.Schema{Type: "integer", Description: "Admissions per run (the form of every intended limit before units)."}
	if mode == rangePlan {
		num.Minimum = "0"
	}
	props := jsonschema.NewProperties()
	props.Set("requests", &jsonschema.Schema{Type: "integer", Minimum: "0", Description: g.comment(t, "Requests")})
	props.Set("per", &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: g.comment(t, "Per") +
		fmt.Sprintf(" Within %s .. %s.", evidence.ShortDuration(evidence.MinIntendedPer), evidence.ShortDuration(evidence.MaxIntendedPer))})
	obj := &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"requests"}, AdditionalProperties: jsonschema.FalseSchema}
	str := &jsonschema.Schema{Type: "string", Pattern: intendedPattern, Description: "N/DURATION, e.g. \"5/1m\": N per window of DURATION."}
	return &jsonschema.Schema{Description: g.comment(t, ""), OneOf: []*jsonschema.Schema{num, obj, str},
		Examples: []any{5, map[string]any{"requests": 5, "per": "1m"}, "5/1m"}}
}

// specFields is model.Spec without its methods: its fields as JSON sees them.
type specFields model.Spec

// modelSpecDef is model.Spec's definition: one shape per kind, each with
// "kind" and the fields that kind takes (model.KindFields), as Spec's strict
// UnmarshalJSON reads it; values are checked by Spec.Validate.
func (g *gen) modelSpecDef(t reflect.Type) *jsonschema.Schema {
	r := &jsonschema.Reflector{Anonymous: true, DoNotReference: true, AllowAdditionalProperties: false,
		Mapper: func(ft reflect.Type) *jsonschema.Schema {
			if ft == typeOf[model.Duration]() {
				return &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: g.comment(ft, "")}
			}
			return nil
		}}
	all := r.ReflectFromType(typeOf[specFields]())
	byJSON := map[string]string{} // json name -> Go field name, for the doc comments
	st := typeOf[model.Spec]()
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		byJSON[name] = st.Field(i).Name
	}
	def := &jsonschema.Schema{Description: g.comment(t, "")}
	for _, kind := range model.Kinds() {
		props := jsonschema.NewProperties()
		props.Set("kind", &jsonschema.Schema{Const: kind, Description: g.comment(t, "Kind")})
		for _, f := range model.KindFields(kind) {
			p, ok := all.Properties.Get(f)
			if !ok {
				continue
			}
			c := *p
			if d := g.comment(t, byJSON[f]); d != "" {
				c.Description = d
			}
			props.Set(f, &c)
		}
		def.OneOf = append(def.OneOf, &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"kind"},
			AdditionalProperties: jsonschema.FalseSchema})
	}
	return def
}

// specialNeeds lists, per special type, the struct types its definition
// refers to (they are reflected into the same file).
var specialNeeds = map[reflect.Type][]reflect.Type{
	typeOf[evidence.PeakExpectations]():    {typeOf[evidence.PeakExpectation]()},
	typeOf[evidence.AdmittedExpectation](): {typeOf[evidence.Range]()},
}

// rangeDef is evidence.Range's definition in a file of the given mode.
func (g *gen) rangeDef(t reflect.Type, mode rangeMode) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	min := &jsonschema.Schema{Type: "integer", Description: "The smallest value in the range."}
	max := &jsonschema.Schema{Type: "integer", Description: "The largest value in the range."}
	props.Set("min", min)
	props.Set("max", max)
	obj := &jsonschema.Schema{Type: "object", Properties: props, Required: []string{"min", "max"}, AdditionalProperties: jsonschema.FalseSchema}
	desc := g.comment(t, "")
	switch mode {
	case rangeObject:
		obj.Description = desc + "\n\nWritten as {min, max} with min <= max."
		return obj
	case rangePlan:
		min.Minimum = "0"
		return &jsonschema.Schema{Description: desc + "\n\nCounts in a plan are >= 0; min <= max is checked when the plan is loaded.",
			OneOf: []*jsonschema.Schema{{Type: "integer", Minimum: "0"}, {Type: "string", Pattern: planRangePattern}, obj}}
	}
	return &jsonschema.Schema{Description: desc + "\n\nmin <= max is checked when the file is read.",
		OneOf: []*jsonschema.Schema{{Type: "integer"}, {Type: "string", Pattern: rangePattern}, obj}}
}

// v11Classes describes the class counts added in v1.1; it is the doc
// comment of the named fields Classes had before its counts were keyed by
// evidence.Class (report.Classes.N), kept so the schema did not change.
const v11Classes = "Backend4xx, Backend429, Backend5xx and CircuitBreaker are the classes added in v1.1 " +
	"(absent from earlier reports, where a backend's 4xx/5xx counted as other_4xx/other_5xx)."

// classesDef is report.Classes' definition, read off its MarshalJSON: the
// keys of a Classes with every count 1, in the order written, are its
// properties (integers >= 0); those of the zero Classes are required (the
// others are the classes added in v1.1 and not_sent, written only when not
// zero).
func (g *gen) classesDef(t reflect.Type) *jsonschema.Schema {
	var all report.Classes
	all.Sent, all.Passed, all.NotSent = 1, 1, 1
	for i := range all.N {
		all.N[i] = 1
	}
	required := map[string]bool{}
	for _, k := range jsonKeys(report.Classes{}) {
		required[k] = true
	}
	def := &jsonschema.Schema{Type: "object", Properties: jsonschema.NewProperties(),
		AdditionalProperties: jsonschema.FalseSchema, Description: g.comment(t, "")}
	for _, k := range jsonKeys(all) {
		p := &jsonschema.Schema{Type: "integer", Minimum: "0"}
		switch {
		case k == "passed":
			p.Description = g.comment(t, "Passed")
		case k == "not_sent":
			p.Description = g.comment(t, "NotSent")
		case !required[k]:
			p.Description = v11Classes
		}
		def.Properties.Set(k, p)
		if required[k] {
			def.Required = append(def.Required, k)
		}
	}
	return def
}

// jsonKeys lists the keys of the JSON object v encodes to, in order; it
// panics when v's encoding is not an object (a bug of the Go type).
func jsonKeys(v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		panic(fmt.Sprintf("%T encodes to %s, not an object", v, b))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			panic(err)
		}
	}
	return keys
}
