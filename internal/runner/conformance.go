package runner

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/model"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// MaxConformanceScenarios bounds a conformance plan's expansion: its
// limiters times its shapes (each is a scenario, each repeat a fresh lab).
const MaxConformanceScenarios = 256

// ConformanceSeparator joins a limiter's and a shape's names into the name
// of their scenario: "<limiter> × <shape>".
const ConformanceSeparator = " × "

// ConformancePlan declares limiters once and traffic shapes once; the plan
// runs every shape against every limiter (issue 23: "which of these
// limiters does what it claims, on the same traffic?"). Each pair is a
// scenario named "<limiter> × <shape>" whose labels (evidence.Labels) are
// the two names; the report groups them into a matrix (report.Matrix).
//
// Shapes are absolute (ids, rates, durations): one shape is the same
// traffic for every limiter, so limiters compared side by side are
// declared with the same nominal capacity and rate (the example plan's
// are 10 at once and 10 per second). Their expectations are
// model-relative (admitted: model, backend_peak: {model: true}), so one
// shape fits every limiter: each is judged by its own model.
// StandardShapes builds the five shapes for a capacity and a rate.
type ConformancePlan struct {
	// Limiters are the limiters under test (at least one), each a lab
	// section or external targets.
	Limiters []ConformanceLimiter `json:"limiters"`
	// Shapes are the traffic shapes (at least one).
	Shapes []ConformanceShape `json:"shapes"`
}

// ConformanceLimiter is one limiter under test: exactly one of Lab (any
// lab section: local, global with rls, nginx, and the sections later
// releases add) and External, with what a scenario of it needs besides.
type ConformanceLimiter struct {
	// Name names the limiter: the matrix row and its scenarios' labels.limiter.
	Name string `json:"name"`
	// Description says what it is (copied into each scenario's description).
	Description string `json:"description,omitempty"`
	// Lab is the scenario's lab section, copied whole into each of its scenarios.
	Lab *LabPlan `json:"lab,omitempty"`
	// External is the scenario's external section (targets rlbench does not start).
	External *ExternalPlan `json:"external,omitempty"`
	// Classify are the scenario's classification rules (ScenarioPlan.Classify).
	Classify []evidence.ClassRule `json:"classify,omitempty"`
	// Limiters declare the limiters for the model checker (ScenarioPlan.Limiters);
	// needed for external targets, whose model rlbench cannot know.
	Limiters []evidence.Limiter `json:"limiters,omitempty"`
	// IntendedLimit is the scenario's intended limit (ScenarioPlan.IntendedLimit).
	IntendedLimit *evidence.IntendedLimit `json:"intended_limit,omitempty"`
	// Skip names expectations of the shapes this limiter's scenarios leave
	// out (SkippableExpectations): those its model cannot judge (rlbench
	// has no peak bound of an RLS's fixed windows: backend_peak with
	// model: true would be inconclusive, NOT_RUN, in every cell). The
	// matrix then shows "-" for them; say why in the plan.
	Skip []string `json:"skip,omitempty"`
}

// SkippableExpectations are the expectation keys a conformance limiter may
// skip (ConformanceLimiter.Skip).
var SkippableExpectations = []string{"backend_peak", "limit_req_status", "classes"}

// skipExpect clears the expectations named by skip from e.
func skipExpect(e *ExpectPlan, skip []string) {
	for _, k := range skip {
		switch k {
		case "backend_peak":
			e.BackendPeak = nil
		case "limit_req_status":
			e.LimitReqStatus = nil
		case "classes":
			e.Classes = nil
		}
	}
}

// ConformanceShape is one traffic shape: a scenario's steps and
// expectation, without its parts.
type ConformanceShape struct {
	// Name names the shape: the matrix column and its scenarios' labels.shape.
	Name string `json:"name"`
	// Description says what the traffic is.
	Description string `json:"description,omitempty"`
	// Repeat runs each of the shape's scenarios K times (ScenarioPlan.Repeat).
	Repeat int `json:"repeat,omitempty"`
	// Attack is shorthand for a single attack step.
	Attack *AttackPlan `json:"attack,omitempty"`
	// Steps run in order: attacks and faults (an exec fault "sleep 1" is a pause).
	Steps []Step `json:"steps,omitempty"`
	// Expect is what every limiter must show; give it model-relative
	// (admitted: model, backend_peak: {model: true}).
	Expect ExpectPlan `json:"expect"`
}

// conformanceOrigin is where an expanded scenario came from: the indexes of
// its limiter and shape in the conformance section.
type conformanceOrigin struct{ limiter, shape int }

// expandConformance checks the conformance section and appends its
// scenarios to p.Scenarios, limiter by limiter, each with every shape in
// order, then drops the section (p.Conformance is nil: the scenarios, with
// their labels, are the plan, and its JSON form parses to the same plan);
// origins maps each appended scenario's index to its origin. Each
// scenario gets its own copy of the limiter's and the shape's sections
// (cloneJSON: the copy goes through the sections' JSON form, so a lab
// section of any kind is copied whole). Errors are planErrors at the
// conformance section's paths.
func (p *Plan) expandConformance() (map[int]conformanceOrigin, error) {
	c := p.Conformance
	if c == nil {
		return nil, nil
	}
	const cp = "conformance"
	if len(c.Limiters) == 0 {
		return nil, at(cp, cp, "conformance.limiters is empty")
	}
	if len(c.Shapes) == 0 {
		return nil, at(cp, cp, "conformance.shapes is empty")
	}
	if n := len(c.Limiters) * len(c.Shapes); n > MaxConformanceScenarios {
		return nil, at(cp, cp, "%d limiters × %d shapes make %d scenarios, more than %d", len(c.Limiters), len(c.Shapes), n, MaxConformanceScenarios)
	}
	check := func(path, what, name string, seen map[string]bool) error {
		l := evidence.Labels{Limiter: name, Shape: name}
		if err := l.Check(what); err != nil {
			return at(path+".name", cp, "%s", strings.Replace(err.Error(), what+".limiter", what+".name", 1))
		}
		if strings.Contains(name, strings.TrimSpace(ConformanceSeparator)) {
			return at(path+".name", cp, "%s.name %q: must not contain %q (it joins the scenario names)", what, name, strings.TrimSpace(ConformanceSeparator))
		}
		if seen[slug(name)] {
			return at(path+".name", cp, "%s.name %q: duplicate", what, name)
		}
		seen[slug(name)] = true
		return nil
	}
	seen := map[string]bool{}
	for i := range c.Limiters {
		l := &c.Limiters[i]
		lp := fmt.Sprintf("%s.limiters[%d]", cp, i)
		if err := check(lp, fmt.Sprintf("conformance.limiters[%d]", i), l.Name, seen); err != nil {
			return nil, err
		}
		if (l.Lab == nil) == (l.External == nil) {
			return nil, at(lp, cp, "conformance.limiters[%d] (%s): exactly one of lab or external is required", i, l.Name)
		}
		for k, e := range l.Skip {
			if !slices.Contains(SkippableExpectations, e) {
				return nil, at(fmt.Sprintf("%s.skip[%d]", lp, k), cp, "conformance.limiters[%d] (%s): skip %q: want one of %s", i, l.Name, e, strings.Join(SkippableExpectations, ", "))
			}
		}
	}
	seen = map[string]bool{}
	for j := range c.Shapes {
		s := &c.Shapes[j]
		if err := check(fmt.Sprintf("%s.shapes[%d]", cp, j), fmt.Sprintf("conformance.shapes[%d]", j), s.Name, seen); err != nil {
			return nil, err
		}
	}
	origins := map[int]conformanceOrigin{}
	for i := range c.Limiters {
		l := &c.Limiters[i]
		for j := range c.Shapes {
			sh := &c.Shapes[j]
			sc, err := conformanceScenario(l, sh)
			if err != nil {
				return nil, at(fmt.Sprintf("%s.limiters[%d]", cp, i), cp, "conformance.limiters[%d] (%s) × shapes[%d] (%s): %w", i, l.Name, j, sh.Name, err)
			}
			if sc.Lab != nil && l.Lab != nil && l.Lab.Gateway != nil && l.Lab.Gateway.Lua != nil {
				// The copy went through JSON, which drops the directory
				// lua.script is relative to (the plan file's).
				sc.Lab.setPlanDir(l.Lab.Gateway.Lua.baseDir)
			}
			origins[len(p.Scenarios)] = conformanceOrigin{limiter: i, shape: j}
			p.Scenarios = append(p.Scenarios, *sc)
		}
	}
	p.Conformance = nil
	return origins, nil
}

// conformanceScenario is the scenario of limiter l under shape sh: fresh
// copies of their sections, named "<limiter> × <shape>" and labelled.
func conformanceScenario(l *ConformanceLimiter, sh *ConformanceShape) (*ScenarioPlan, error) {
	sc := &ScenarioPlan{Name: l.Name + ConformanceSeparator + sh.Name, Repeat: sh.Repeat,
		Labels: &evidence.Labels{Limiter: l.Name, Shape: sh.Name}}
	sc.Description = strings.TrimSpace(strings.Join([]string{l.Description, sh.Description}, "; "))
	sc.Description = strings.Trim(sc.Description, "; ")
	var err error
	if sc.Lab, err = cloneJSON(l.Lab); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if sc.External, err = cloneJSON(l.External); err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	if sc.IntendedLimit, err = cloneJSON(l.IntendedLimit); err != nil {
		return nil, fmt.Errorf("intended_limit: %w", err)
	}
	if err := cloneInto(l.Classify, &sc.Classify); err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	if err := cloneInto(l.Limiters, &sc.Limiters); err != nil {
		return nil, fmt.Errorf("limiters: %w", err)
	}
	if sc.Attack, err = cloneJSON(sh.Attack); err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}
	if err := cloneInto(sh.Steps, &sc.Steps); err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	if err := cloneInto(sh.Expect, &sc.Expect); err != nil {
		return nil, fmt.Errorf("expect: %w", err)
	}
	skipExpect(&sc.Expect, l.Skip)
	return sc, nil
}

// cloneJSON returns a deep copy of *v made through its JSON form (nil for
// nil): every section of a plan round-trips through JSON, as sigs.k8s.io/yaml
// decodes it from YAML.
func cloneJSON[T any](v *T) (*T, error) {
	if v == nil {
		return nil, nil
	}
	out := new(T)
	return out, cloneInto(*v, out)
}

// cloneInto copies v into out through JSON.
func cloneInto[T any](v T, out *T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// conformancePath rewrites the path of an error of expanded scenario sp
// (origin o) to where the plan holds that field: the limiter's sections
// (lab, external, classify, limiters, intended_limit) under
// conformance.limiters[i], the rest (attack, steps, expect, repeat, the
// name) under conformance.shapes[j]. Errors that are not planErrors are
// returned as they are.
func conformancePath(err error, sp string, o conformanceOrigin) error {
	var pe *planError
	if !errors.As(err, &pe) {
		return err
	}
	rest := strings.TrimPrefix(pe.path, sp)
	if rest == pe.path {
		return err
	}
	base := fmt.Sprintf("conformance.shapes[%d]", o.shape)
	for _, k := range []string{".lab", ".external", ".classify", ".limiters", ".intended_limit", ".skip"} {
		if rest == k || strings.HasPrefix(rest, k+".") || strings.HasPrefix(rest, k+"[") {
			base = fmt.Sprintf("conformance.limiters[%d]", o.limiter)
		}
	}
	if rest == ".name" {
		rest = ""
	}
	return &planError{path: base + rest, msg: pe.msg, err: pe.err}
}

// Shape names of StandardShapes, the five of issue 23.
const (
	ShapeBurst       = "burst 1.5x capacity"
	ShapeSustained   = "sustained 2x rate"
	ShapeDoubleBurst = "double burst across a refill"
	ShapeNoisyKey    = "three keys, one noisy"
	ShapeIdleBurst   = "idle gap, then burst"
)

// ShapeKeyHeader is the request header that names the key (the user) in
// StandardShapes: every request sends it, so a limiter keyed by it sees
// one key per flow ("solo" outside the noisy-key shape).
const ShapeKeyHeader = "x-user"

// StandardShapes are the five traffic shapes of issue 23 for a limiter
// whose nominal capacity (requests admitted at once from idle) is capacity
// and whose nominal rate is ratePerSec (requests per second), each
// expecting what the limiter's own model allows (admitted: model) and
// forwards no burstier than its model (backend_peak: model over a window
// of one emission interval, 1/rate, clamped to 10ms..1s):
//
//   - ShapeBurst: 1.5 × capacity requests at once;
//   - ShapeSustained: 2 × rate for 3 s, paced open-loop;
//   - ShapeDoubleBurst: capacity at once, a pause of half a refill
//     (capacity / rate / 2: a window or refill boundary falls in it for
//     windows of that order), capacity at once again;
//   - ShapeNoisyKey: three flows keyed by ShapeKeyHeader for 2 s, one at
//     2 × rate, two at rate / 2 (above their fair third, so a shared
//     bucket that rejects them is judged by its model, not as starving);
//   - ShapeIdleBurst: capacity / 2 at the rate, an idle gap of two full
//     refills (2 × capacity / rate), then 1.5 × capacity at once.
//
// Errors: capacity < 1, a rate that is not positive and finite, or a shape
// over attack.MaxIDs.
func StandardShapes(capacity int, ratePerSec float64) ([]ConformanceShape, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("shapes: capacity must be >= 1, not %d", capacity)
	}
	if !(ratePerSec > 0) || math.IsInf(ratePerSec, 0) || ratePerSec > 1e6 {
		return nil, fmt.Errorf("shapes: rate must be > 0 and at most 1e6 per second, not %v", ratePerSec)
	}
	if capacity > 100000 {
		return nil, fmt.Errorf("shapes: capacity must be at most 100000, not %d", capacity)
	}
	refill := time.Duration(float64(capacity) / ratePerSec * float64(time.Second))
	window := min(max(time.Duration(float64(time.Second)/ratePerSec), 10*time.Millisecond), time.Second).Round(time.Millisecond)
	expect := func() ExpectPlan {
		return ExpectPlan{Expectation: evidence.Expectation{Label: "the limiter's model", Admitted: evidence.AdmittedByModel(),
			BackendPeak: evidence.PeakExpectations{{Window: model.Duration(window), Model: true}}}}
	}
	burst := (capacity*3 + 1) / 2 // ceil(1.5 × capacity)
	key := map[string]string{ShapeKeyHeader: "solo"}
	rate := func(perSec float64) Rate { return perSecond(perSec) }
	pause := func(d time.Duration) Step {
		return Step{Name: "idle " + d.String(), Fault: &FaultPlan{Action: "exec", Target: "idle",
			Command: fmt.Sprintf("sleep %.3f", d.Seconds())}}
	}
	shapes := []ConformanceShape{
		{Name: ShapeBurst, Description: fmt.Sprintf("%d requests (1.5 × capacity %d) at once", burst, capacity),
			Attack: &AttackPlan{IDs: burst, Concurrency: burst, Headers: key}, Expect: expect()},
		{Name: ShapeSustained, Description: fmt.Sprintf("2 × rate (%g/s) for 3s", 2*ratePerSec),
			Attack: &AttackPlan{Headers: key, Flows: []FlowPlan{{Name: "sustained", Rate: rate(2 * ratePerSec), Duration: proxy.Duration(3 * time.Second)}}},
			Expect: expect()},
		{Name: ShapeDoubleBurst, Description: fmt.Sprintf("%d at once, %s idle, %d at once", capacity, (refill / 2).Round(time.Millisecond), capacity),
			Steps: []Step{{Name: "first burst", Attack: &AttackPlan{IDs: capacity, Concurrency: capacity, Headers: key}},
				pause((refill / 2).Round(time.Millisecond)),
				{Name: "second burst", Attack: &AttackPlan{IDs: capacity, Concurrency: capacity, Headers: key}}},
			Expect: expect()},
		{Name: ShapeNoisyKey, Description: fmt.Sprintf("keys by %s: noisy at %g/s, quiet-1 and quiet-2 at %g/s, for 2s", ShapeKeyHeader, 2*ratePerSec, ratePerSec/2),
			Attack: &AttackPlan{Flows: []FlowPlan{
				{Name: "noisy", Rate: rate(2 * ratePerSec), Duration: proxy.Duration(2 * time.Second), Headers: map[string]string{ShapeKeyHeader: "noisy"}},
				{Name: "quiet-1", Rate: rate(ratePerSec / 2), Duration: proxy.Duration(2 * time.Second), Headers: map[string]string{ShapeKeyHeader: "quiet-1"}},
				{Name: "quiet-2", Rate: rate(ratePerSec / 2), Duration: proxy.Duration(2 * time.Second), Headers: map[string]string{ShapeKeyHeader: "quiet-2"}},
			}},
			Expect: expect()},
		{Name: ShapeIdleBurst, Description: fmt.Sprintf("%d at the rate, %s idle, %d at once", max(capacity/2, 1), (2 * refill).Round(time.Millisecond), burst),
			Steps: []Step{{Name: "warm", Attack: &AttackPlan{Headers: key, Flows: []FlowPlan{{Name: "warm", IDs: max(capacity/2, 1), Rate: rate(ratePerSec)}}}},
				pause((2 * refill).Round(time.Millisecond)),
				{Name: "burst", Attack: &AttackPlan{IDs: burst, Concurrency: burst, Headers: key}}},
			Expect: expect()},
	}
	return shapes, nil
}

// perSecond is a rate of perSec requests per second as a Rate with whole
// requests: per 1 s, or per 1 ms × 1000 / perSec for rates under 1/s, or
// Freq over 1 s rounded to the nearest request (at least 1).
func perSecond(perSec float64) Rate {
	if perSec >= 1 {
		return Rate(vegeta.Rate{Freq: max(int(math.Round(perSec)), 1), Per: time.Second})
	}
	return Rate(vegeta.Rate{Freq: 1, Per: time.Duration(float64(time.Second) / perSec).Round(time.Millisecond)})
}

// ValidatePlan checks a plan built in Go (not read from a file) as
// ParsePlan checks a file's, expanding its conformance section and filling
// the defaults the run relies on; errors name the field's path.
func ValidatePlan(p *Plan) error { return p.validate() }

// ExternalLimiter is an HTTP limiter of one's own under the standard
// shapes (`rlbench conformance --url URL --model ...`): one target rlbench
// does not start, judged by the model it claims.
type ExternalLimiter struct {
	// Name names the limiter: the matrix row; default "limiter".
	Name string
	// URL is the limiter's base URL (requests go to URL + path).
	URL string
	// ReceiptsURL is the /_rlbench/receipts of the rlbench backend
	// (`rlbench backend`) the limiter forwards its admitted requests to
	// (required): every admitted request must have its receipt, no rejected
	// one may, and the forwards' peaks are judged against the model.
	ReceiptsURL string
	// Model is what the limiter claims to be (model.Spec).
	Model model.Spec
	// KeyHeader, when set, is the request header the limiter keys by: the
	// model keeps one state per value, and the shapes send it (in place of
	// ShapeKeyHeader). Empty: one state for every request.
	KeyHeader string
	// RejectStatus is the status of the limiter's rejections; default 429.
	RejectStatus int
	// Capacity and RatePerSec size the shapes; 0 takes them from the
	// model (Nominal).
	Capacity   int
	RatePerSec float64
	// Shapes are the names of the StandardShapes to run; empty: all five.
	Shapes []string
	// Headers are sent with every request (after the shapes' own).
	Headers map[string]string
}

// Plan is the conformance plan of l: one limiter, the standard shapes sized
// by its model, validated (ValidatePlan). Errors: a model the shapes cannot
// be sized from without Capacity and RatePerSec, an unknown shape name, and
// what validation refuses.
func (l *ExternalLimiter) Plan() (*Plan, error) {
	if l.ReceiptsURL == "" {
		return nil, errors.New("the limiter's receipts URL is required: point the limiter at an rlbench backend (rlbench backend) and give its /_rlbench/receipts")
	}
	if err := l.Model.Validate(); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	capacity, rate := l.Capacity, l.RatePerSec
	if capacity == 0 || rate == 0 {
		c, r, ok := Nominal(l.Model)
		if !ok {
			return nil, fmt.Errorf("the shapes cannot be sized from a %s model: give the capacity and the rate", l.Model.Kind)
		}
		capacity, rate = cmp.Or(capacity, c), cmp.Or(rate, r)
	}
	if refill := float64(capacity) / rate; refill > MaxExternalRefill.Seconds() {
		return nil, fmt.Errorf("capacity %d at %g/s refills in %.0fs, more than %s: the shapes (seconds long, each after two refills of idle) are for limiters of that scale: give the capacity and rate of a smaller one", capacity, rate, refill, MaxExternalRefill)
	}
	all, err := StandardShapes(capacity, rate)
	if err != nil {
		return nil, err
	}
	shapes := all
	if len(l.Shapes) > 0 {
		shapes = nil
		for _, name := range l.Shapes {
			i := slices.IndexFunc(all, func(s ConformanceShape) bool { return s.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("no shape %q: want one of %s", name, shapeNames(all))
			}
			shapes = append(shapes, all[i])
		}
	}
	// The limiter is not fresh per scenario as the lab's parts are: each
	// shape starts after two full refills (a sliding window's two windows)
	// of idle, when it is as the model starts it.
	idle := (2*time.Duration(float64(capacity)/rate*float64(time.Second)) + 100*time.Millisecond).Round(time.Millisecond)
	for i := range shapes {
		l.adapt(&shapes[i], idle)
	}
	name := cmp.Or(l.Name, "limiter")
	decl := evidence.Limiter{Name: name, Stage: evidence.StageLocal, Key: evidence.KeyTarget, Targets: []string{externalTarget}, Model: &l.Model}
	if l.KeyHeader != "" {
		decl.Key = evidence.KeyDescriptor
		decl.RateLimits = []descriptor.RateLimitEntry{{Actions: []descriptor.RateLimitAction{{RequestHeaders: &descriptor.RequestHeadersAction{
			HeaderName: l.KeyHeader, DescriptorKey: "key"}}}}}
	}
	status := cmp.Or(l.RejectStatus, 429)
	p := &Plan{Name: "conformance " + name, Conformance: &ConformancePlan{
		Limiters: []ConformanceLimiter{{Name: name, Description: "an HTTP limiter claiming " + l.Model.Kind,
			External: &ExternalPlan{Proxies: []ExternalProxy{{Name: externalTarget, URL: l.URL}}, ReceiptsURL: l.ReceiptsURL},
			Classify: []evidence.ClassRule{{Status: evidence.Range{Min: status, Max: status}, Class: evidence.ClassLocal429.String()}},
			Limiters: []evidence.Limiter{decl}}},
		Shapes: shapes}}
	if err := ValidatePlan(p); err != nil {
		return nil, err
	}
	return p, nil
}

// MaxExternalRefill bounds an ExternalLimiter's refill time (capacity /
// rate): each shape waits two of them before it starts.
const MaxExternalRefill = 30 * time.Second

// externalTarget is the attack target's name of an ExternalLimiter.
const externalTarget = "limiter"

// adapt fits a standard shape to l: an idle step first (the limiter
// settles from the shape before), its key header renamed to l.KeyHeader,
// l.Headers added to every attack.
func (l *ExternalLimiter) adapt(s *ConformanceShape, idle time.Duration) {
	if s.Attack != nil {
		s.Steps, s.Attack = []Step{{Name: "attack", Attack: s.Attack}}, nil
	}
	s.Steps = append([]Step{{Name: "settle " + idle.String(), Fault: &FaultPlan{Action: "exec", Target: "idle",
		Command: fmt.Sprintf("sleep %.3f", idle.Seconds())}}}, s.Steps...)
	rekey := func(h map[string]string) map[string]string {
		if v, ok := h[ShapeKeyHeader]; ok && l.KeyHeader != "" && !strings.EqualFold(l.KeyHeader, ShapeKeyHeader) {
			delete(h, ShapeKeyHeader)
			h[l.KeyHeader] = v
		}
		return h
	}
	var attacks []*AttackPlan
	for i := range s.Steps {
		attacks = append(attacks, s.Steps[i].Attack)
	}
	for _, a := range attacks {
		if a == nil {
			continue
		}
		if a.Headers == nil {
			a.Headers = map[string]string{}
		}
		a.Headers = rekey(a.Headers)
		for k, v := range l.Headers {
			a.Headers[k] = v
		}
		for i := range a.Flows {
			a.Flows[i].Headers = rekey(a.Flows[i].Headers)
		}
	}
}

// shapeNames lists the shapes' names, quoted.
func shapeNames(ss []ConformanceShape) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s.Name)
	}
	return strings.Join(q, ", ")
}

// Nominal is the capacity (requests admitted at once from idle) and the
// rate (per second) a model claims, to size StandardShapes: a token
// bucket's capacity and rate, Envoy's max_tokens and tokens_per_fill per
// fill_interval, a fixed window's or a sliding window's limit and limit per
// window, nginx limit_req's burst + 1 and rate (its first zone). ok is
// false for a kind it does not know (give the sizes instead).
func Nominal(s model.Spec) (capacity int, ratePerSec float64, ok bool) {
	switch s.Kind {
	case model.KindTokenBucket:
		return int(s.Capacity), s.RatePerSec, s.Capacity >= 1 && s.RatePerSec > 0
	case model.KindEnvoyLocal:
		per := uint32(1)
		if s.TokensPerFill != nil {
			per = *s.TokensPerFill
		}
		if s.FillInterval <= 0 || s.MaxTokens == 0 {
			return 0, 0, false
		}
		return int(s.MaxTokens), float64(per) / time.Duration(s.FillInterval).Seconds(), true
	case model.KindFixedWindow:
		d, ok := fixedUnits[strings.ToLower(s.Unit)]
		return int(s.Limit), float64(s.Limit) / d.Seconds(), ok && s.Limit > 0
	case model.KindSlidingLog, model.KindSlidingCounter:
		return int(s.Limit), float64(s.Limit) / time.Duration(s.Window).Seconds(), s.Limit > 0 && s.Window > 0
	case model.KindNginxLimitReq:
		rate, burst := s.Rate, s.Burst
		if len(s.Zones) > 0 {
			rate, burst = s.Zones[0].Rate, s.Zones[0].Burst
		}
		n, per, found := strings.Cut(strings.TrimSpace(rate), "r/")
		r, err := strconv.ParseFloat(n, 64)
		if !found || err != nil || r <= 0 {
			return 0, 0, false
		}
		switch per {
		case "s":
		case "m":
			r /= 60
		default:
			return 0, 0, false
		}
		return burst + 1, r, true
	}
	return 0, 0, false
}

// fixedUnits are the fixed window units by name (envoyproxy/ratelimit
// utils.UnitToDivider, as model.Spec's Unit).
var fixedUnits = map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour,
	"week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour}
