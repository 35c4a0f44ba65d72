package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/jsonline"
)

// DiffSchema identifies the JSON form of Diff (schemas/diff.v1.schema.json).
const DiffSchema = "rlbench.diff/v1"

// Kinds of DiffInput.Kind: what a side of a diff was read from.
const (
	// DiffRun is a run directory (with manifest.json) or a directory of
	// scenario directories, judged as `rlbench analyze` judges it.
	DiffRun = "run"
	// DiffScenario is one scenario directory (with scenario.json).
	DiffScenario = "scenario"
	// DiffSaved is a report saved by `rlbench analyze --format json`.
	DiffSaved = "report"
)

// Sources of a ConfigDigest.
const (
	// DigestRecorded: the digest is written in the evidence (manifest.json's
	// plan_digest).
	DigestRecorded = "recorded"
	// DigestComputed: rlbench computed it from the recorded configuration
	// file when the diff was made (see ConfigDigest).
	DigestComputed = "computed"
)

// Changes of ScenarioDiff.Change and VerdictFlip: how B's verdict compares
// with A's, ranking PASS better than NOT_RUN better than FAIL (the order
// Report.Status uses: FAIL over NOT_RUN over PASS).
const (
	ChangeSame   = "same"
	ChangeWorse  = "worse"
	ChangeBetter = "better"
)

// DiffSide is one side of a diff as Compare takes it: the judged report
// and what the evidence says of its configuration.
type DiffSide struct {
	// Path is the directory or file named by the user.
	Path string
	// Kind is DiffRun, DiffScenario or DiffSaved.
	Kind   string
	Report *Report
	// Plan and PlanDigest are manifest.json's plan name and plan_digest
	// ("sha256:<hex>" of the plan file); empty without a manifest.
	Plan       string
	PlanDigest string
	// Config holds the configuration digests of each scenario, parallel to
	// Report.Scenarios; nil when not known (a saved report). Compare
	// ignores a Config of another length.
	Config [][]ConfigDigest
}

// ConfigDigest is the digest of one configuration file of a scenario
// directory: "sha256:<hex>" over its content made canonical (JSON: keys
// sorted, no spaces) with what changes from run to run and is no
// configuration left out (scenario.json's repeat and limits[].start_ns,
// attack.json's results and file-descriptor figures, the port of a
// loopback address, which the lab binds afresh on each run). rlbench
// records no digest of a scenario's configuration, so these are computed
// in one place (analyze.ConfigDigests) when the diff is made.
type ConfigDigest struct {
	// File is the file's path relative to the scenario directory
	// (scenario.json, attack.json, nginx/<proxy>/nginx.conf).
	File   string `json:"file"`
	Digest string `json:"digest"`
	// Keys maps each top-level field of a JSON file (of attack.json: of
	// its phases' configurations) to the digest of its canonical value,
	// so that a diff can name the fields that differ; nil for a text file.
	Keys map[string]string `json:"-"`
}

// Diff compares two judged evidence directories (or saved reports), A
// before and B after: the scenarios matched by name and repeat, whose
// verdicts flipped, which ran on one side only, and for each pair the
// counts, ranges, latency percentiles, checks and configuration digests
// that differ.
type Diff struct {
	Schema string    `json:"schema"`
	A      DiffInput `json:"a"`
	B      DiffInput `json:"b"`
	// Worse is true when a scenario of both sides has a worse verdict in B
	// (PASS → NOT_RUN, PASS → FAIL, NOT_RUN → FAIL).
	Worse bool `json:"worse"`
	// Flips are the scenarios whose verdict differs, the worse ones first,
	// each group in A's order.
	Flips []VerdictFlip `json:"flips"`
	// OnlyA and OnlyB are the scenario runs of one side only, in its order.
	OnlyA []ScenarioRef `json:"only_a"`
	OnlyB []ScenarioRef `json:"only_b"`
	// Scenarios compares every scenario run of both sides, in A's order.
	Scenarios []ScenarioDiff `json:"scenarios"`
	// Config are the run-level digests that differ (the plan's).
	Config []ConfigChange `json:"config"`
}

// DiffInput describes one side of a Diff.
type DiffInput struct {
	// Path is the directory or report file as named; Dir the directory the
	// report judged.
	Path string `json:"path"`
	Dir  string `json:"dir"`
	// Kind is DiffRun, DiffScenario or DiffSaved.
	Kind string `json:"kind"`
	// Status is the side's worst verdict (Report.Status).
	Status    string `json:"status"`
	Scenarios int    `json:"scenarios"`
	// Plan and PlanDigest are manifest.json's, absent without one.
	Plan       string `json:"plan,omitempty"`
	PlanDigest string `json:"plan_digest,omitempty"`
	// ConfigKnown is false when the side's configuration digests could not
	// be computed (a saved report holds none): no config change is then
	// reported for its scenarios.
	ConfigKnown bool `json:"config_known"`
}

// ScenarioRef names one scenario run and its verdict.
type ScenarioRef struct {
	Name   string `json:"name"`
	Repeat int    `json:"repeat"`
	Status string `json:"status"`
}

// VerdictFlip is a scenario whose verdict differs between A and B.
type VerdictFlip struct {
	Name   string `json:"name"`
	Repeat int    `json:"repeat"`
	A      string `json:"a"`
	B      string `json:"b"`
	// Change is ChangeWorse or ChangeBetter.
	Change string `json:"change"`
	// Reasons are B's reasons for a verdict other than PASS, else A's
	// (what got fixed).
	Reasons []string `json:"reasons"`
}

// ScenarioDiff compares one scenario run present on both sides. Each list
// holds only what differs, but Latency, which holds every class of either
// side. Against a report of ReportSchemaV1 (which has no passed count),
// "passed" and the admitted range are not compared.
type ScenarioDiff struct {
	Name   string `json:"name"`
	Repeat int    `json:"repeat"`
	A      string `json:"a"`
	B      string `json:"b"`
	// Change is ChangeSame, ChangeWorse or ChangeBetter.
	Change string `json:"change"`
	// Counts are the counts that differ: sent, each response class and
	// passed (Classes), per target too, and the reconciliation with the
	// receipts (Receipts).
	Counts []CountChange `json:"counts"`
	// Ranges are the ranges that differ: "admitted" (the requests that
	// passed every limiter, Classes.Passed .. PassedMax), "over_admission"
	// (OverAdmission.Min..Max), "bound" (Bound.Allowed) and "model"
	// (ModelBound.Min..Max); an absent side is null.
	Ranges []RangeChange `json:"ranges"`
	// Latency compares the client latency of each class of either side,
	// all targets together (Latency.Classes), in class order.
	Latency []LatencyChange `json:"latency"`
	// Checks are the checks whose status differs, or that one side lacks.
	Checks []CheckChange `json:"checks"`
	// Config are the configuration digests that differ; empty when either
	// side's are not known (DiffInput.ConfigKnown).
	Config []ConfigChange `json:"config"`
}

// CountChange is a count that differs; Target is empty for the scenario's
// totals.
type CountChange struct {
	Target string `json:"target,omitempty"`
	// Name is "sent", a class name (evidence.Class), "passed", "receipts"
	// (receipt lines) or a Receipts field's JSON name
	// ("admitted_without_receipt", "phantom" ...).
	Name  string `json:"name"`
	A     int    `json:"a"`
	B     int    `json:"b"`
	Delta int    `json:"delta"`
}

// RangeChange is a range that differs (see ScenarioDiff.Ranges).
type RangeChange struct {
	Name string          `json:"name"`
	A    *evidence.Range `json:"a"`
	B    *evidence.Range `json:"b"`
}

// LatencyChange compares one class's latency: A and B are the class's
// figures on each side (nil when the side has no request of the class),
// the deltas B − A in ns (0 when a side lacks the class).
type LatencyChange struct {
	Class      string        `json:"class"`
	A          *ClassLatency `json:"a"`
	B          *ClassLatency `json:"b"`
	DeltaP50Ns int64         `json:"delta_p50_ns"`
	DeltaP90Ns int64         `json:"delta_p90_ns"`
	DeltaP99Ns int64         `json:"delta_p99_ns"`
	DeltaMaxNs int64         `json:"delta_max_ns"`
}

// CheckChange is a check whose status differs; A or B is nil when that
// side has no check of the name. Both carry their Want and measured Got.
type CheckChange struct {
	Name string `json:"name"`
	A    *Check `json:"a"`
	B    *Check `json:"b"`
}

// ConfigChange is a configuration digest that differs: Name is "plan"
// (manifest.json's plan_digest) or a ConfigDigest.File; A or B is empty
// when that side has no such file. Keys are the top-level fields whose
// values differ, when the file is JSON and both sides have it.
type ConfigChange struct {
	Name string `json:"name"`
	// Source is DigestRecorded or DigestComputed.
	Source string   `json:"source"`
	A      string   `json:"a"`
	B      string   `json:"b"`
	Keys   []string `json:"keys,omitempty"`
}

// verdictRank orders verdicts from best to worst: PASS, NOT_RUN, FAIL (an
// unknown verdict counts as NOT_RUN: nothing unchecked is PASS).
func verdictRank(s string) int {
	switch s {
	case evidence.Pass:
		return 0
	case evidence.Fail:
		return 2
	}
	return 1
}

// change is how verdict b compares with a.
func change(a, b string) string {
	switch ra, rb := verdictRank(a), verdictRank(b); {
	case rb > ra:
		return ChangeWorse
	case rb < ra:
		return ChangeBetter
	}
	return ChangeSame
}

// Compare diffs a and b. Scenario runs are matched by name and repeat; a
// name that is left with one unmatched run on each side (a scenario
// directory without a repeat against a run's repeat 1) is matched too.
func Compare(a, b *DiffSide) *Diff {
	d := &Diff{Schema: DiffSchema, A: input(a), B: input(b), Flips: []VerdictFlip{}, OnlyA: []ScenarioRef{}, OnlyB: []ScenarioRef{},
		Scenarios: []ScenarioDiff{}, Config: []ConfigChange{}}
	if a.PlanDigest != "" && b.PlanDigest != "" && a.PlanDigest != b.PlanDigest {
		d.Config = append(d.Config, ConfigChange{Name: "plan", Source: DigestRecorded, A: a.PlanDigest, B: b.PlanDigest})
	}
	pairs, onlyA, onlyB := match(a.Report.Scenarios, b.Report.Scenarios)
	var better []VerdictFlip
	for _, p := range pairs {
		sa, sb := &a.Report.Scenarios[p[0]], &b.Report.Scenarios[p[1]]
		sd := compareScenario(sa, sb, a.Report.Schema == ReportSchemaV1 || b.Report.Schema == ReportSchemaV1)
		if len(a.Config) == len(a.Report.Scenarios) && len(b.Config) == len(b.Report.Scenarios) && a.Config != nil && b.Config != nil {
			sd.Config = configChanges(a.Config[p[0]], b.Config[p[1]])
		}
		d.Scenarios = append(d.Scenarios, sd)
		if sd.Change == ChangeSame {
			continue
		}
		f := VerdictFlip{Name: sa.Name, Repeat: sa.Repeat, A: sa.Status, B: sb.Status, Change: sd.Change, Reasons: sb.Reasons}
		if sb.Status == evidence.Pass {
			f.Reasons = sa.Reasons
		}
		if f.Reasons == nil {
			f.Reasons = []string{}
		}
		if sd.Change == ChangeWorse {
			d.Worse = true
			d.Flips = append(d.Flips, f)
		} else {
			better = append(better, f)
		}
	}
	d.Flips = append(d.Flips, better...)
	for _, i := range onlyA {
		s := a.Report.Scenarios[i]
		d.OnlyA = append(d.OnlyA, ScenarioRef{Name: s.Name, Repeat: s.Repeat, Status: s.Status})
	}
	for _, i := range onlyB {
		s := b.Report.Scenarios[i]
		d.OnlyB = append(d.OnlyB, ScenarioRef{Name: s.Name, Repeat: s.Repeat, Status: s.Status})
	}
	return d
}

func input(s *DiffSide) DiffInput {
	return DiffInput{Path: s.Path, Dir: s.Report.Dir, Kind: s.Kind, Status: s.Report.Status, Scenarios: len(s.Report.Scenarios),
		Plan: s.Plan, PlanDigest: s.PlanDigest, ConfigKnown: s.Config != nil}
}

// match pairs the indices of a and b by name and repeat (then by name
// alone when one run of the name is left on each side); the unmatched
// indices of each side follow, in order.
func match(a, b []ScenarioReport) (pairs [][2]int, onlyA, onlyB []int) {
	type key struct {
		name   string
		repeat int
	}
	inB := map[key]int{}
	for j, s := range b {
		if _, dup := inB[key{s.Name, s.Repeat}]; !dup {
			inB[key{s.Name, s.Repeat}] = j
		}
	}
	usedB := make([]bool, len(b))
	pairOf := make([]int, len(a))
	for i, s := range a {
		pairOf[i] = -1
		if j, ok := inB[key{s.Name, s.Repeat}]; ok && !usedB[j] {
			pairOf[i], usedB[j] = j, true
		}
	}
	// One run of a name left on each side: the same scenario.
	leftA, leftB := map[string][]int{}, map[string][]int{}
	for i, s := range a {
		if pairOf[i] < 0 {
			leftA[s.Name] = append(leftA[s.Name], i)
		}
	}
	for j, s := range b {
		if !usedB[j] {
			leftB[s.Name] = append(leftB[s.Name], j)
		}
	}
	for name, is := range leftA {
		if js := leftB[name]; len(is) == 1 && len(js) == 1 {
			pairOf[is[0]], usedB[js[0]] = js[0], true
		}
	}
	for i, j := range pairOf {
		if j < 0 {
			onlyA = append(onlyA, i)
		} else {
			pairs = append(pairs, [2]int{i, j})
		}
	}
	for j, used := range usedB {
		if !used {
			onlyB = append(onlyB, j)
		}
	}
	return pairs, onlyA, onlyB
}

// compareScenario compares a and b; v1 is true when either comes from a
// report of ReportSchemaV1, which has no passed count: "passed" and the
// admitted range (which counts it) are then not compared.
func compareScenario(a, b *ScenarioReport, v1 bool) ScenarioDiff {
	d := ScenarioDiff{Name: a.Name, Repeat: a.Repeat, A: a.Status, B: b.Status, Change: change(a.Status, b.Status),
		Counts: []CountChange{}, Ranges: []RangeChange{}, Latency: []LatencyChange{}, Checks: []CheckChange{}, Config: []ConfigChange{}}
	classChanges := func(out []CountChange, target string, x, y Classes) []CountChange {
		if v1 {
			x.Passed, y.Passed = 0, 0
		}
		return classChanges(out, target, x, y)
	}
	d.Counts = classChanges(d.Counts, "", a.Totals, b.Totals)
	d.Counts = receiptChanges(d.Counts, a.Receipts, b.Receipts)
	ta, tb := map[string]Classes{}, map[string]Classes{}
	var targets []string
	for _, t := range a.Targets {
		ta[t.Target] = t.Classes
		targets = append(targets, t.Target)
	}
	for _, t := range b.Targets {
		tb[t.Target] = t.Classes
		if _, ok := ta[t.Target]; !ok {
			targets = append(targets, t.Target)
		}
	}
	if len(targets) > 1 {
		for _, t := range targets {
			d.Counts = classChanges(d.Counts, t, ta[t], tb[t])
		}
	}
	for _, r := range []struct {
		name string
		a, b *evidence.Range
	}{
		{"admitted", admittedRange(a, v1), admittedRange(b, v1)},
		{"over_admission", overRange(a.OverAdmission), overRange(b.OverAdmission)},
		{"bound", boundRange(a.Bound), boundRange(b.Bound)},
		{"model", modelRange(a.Model), modelRange(b.Model)},
	} {
		if !sameRange(r.a, r.b) {
			d.Ranges = append(d.Ranges, RangeChange{Name: r.name, A: r.a, B: r.b})
		}
	}
	d.Latency = latencyChanges(a.Latency, b.Latency)
	d.Checks = checkChanges(a.Checks, b.Checks)
	return d
}

// classChanges appends the counts of Classes that differ.
func classChanges(out []CountChange, target string, a, b Classes) []CountChange {
	add := func(name string, x, y int) {
		if x != y {
			out = append(out, CountChange{Target: target, Name: name, A: x, B: y, Delta: y - x})
		}
	}
	add("sent", a.Sent, b.Sent)
	for cl := evidence.Class(0); cl < evidence.NumClasses; cl++ {
		add(cl.String(), a.N[cl], b.N[cl])
	}
	add("passed", a.Passed, b.Passed)
	return out
}

// receiptChanges appends the reconciliation counts that differ, by their
// JSON names ("receipts" for Total).
func receiptChanges(out []CountChange, a, b Receipts) []CountChange {
	for _, f := range []struct {
		name string
		a, b int
	}{
		{"receipts", a.Total, b.Total},
		{"admitted_with_receipt", a.AdmittedWithReceipt, b.AdmittedWithReceipt},
		{"admitted_without_receipt", a.AdmittedWithoutReceipt, b.AdmittedWithoutReceipt},
		{"rejected_with_receipt", a.RejectedWithReceipt, b.RejectedWithReceipt},
		{"duplicates", a.Duplicates, b.Duplicates},
		{"proxy_retries", a.ProxyRetries, b.ProxyRetries},
		{"resent", a.Resent, b.Resent},
		{"phantom", a.Phantom, b.Phantom},
		{"sent_unknown", a.SentUnknown, b.SentUnknown},
		{"without_id", a.WithoutID, b.WithoutID},
		{"indeterminate", a.Indeterminate, b.Indeterminate},
		{"indeterminate_with_receipt", a.IndeterminateWithReceipt, b.IndeterminateWithReceipt},
	} {
		if f.a != f.b {
			out = append(out, CountChange{Name: f.name, A: f.a, B: f.b, Delta: f.b - f.a})
		}
	}
	return out
}

// admittedRange is what passed every limiter: Passed .. PassedMax (the
// requests without response nor receipt may have passed), as Group.Admitted
// counts it; nil for a scenario that sent nothing, and when v1 (a report
// of ReportSchemaV1 has no passed count).
func admittedRange(s *ScenarioReport, v1 bool) *evidence.Range {
	if s.Totals.Sent == 0 || v1 {
		return nil
	}
	return &evidence.Range{Min: s.Totals.Passed, Max: s.Totals.PassedMax(s.Receipts.IndeterminateWithReceipt)}
}

func overRange(o *OverAdmission) *evidence.Range {
	if o == nil {
		return nil
	}
	return &evidence.Range{Min: o.Min, Max: o.Max}
}

func boundRange(b *Bound) *evidence.Range {
	if b == nil {
		return nil
	}
	r := evidence.Exact(b.Allowed)
	return &r
}

func modelRange(m *ModelBound) *evidence.Range {
	if m == nil {
		return nil
	}
	return &evidence.Range{Min: m.Min, Max: m.Max}
}

func sameRange(a, b *evidence.Range) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// latencyChanges compares the classes of a and b in class order.
func latencyChanges(a, b *Latency) []LatencyChange {
	byClass := func(l *Latency) map[string]*ClassLatency {
		m := map[string]*ClassLatency{}
		if l != nil {
			for i := range l.Classes {
				m[l.Classes[i].Class] = &l.Classes[i]
			}
		}
		return m
	}
	ma, mb := byClass(a), byClass(b)
	out := []LatencyChange{}
	for cl := evidence.Class(0); cl < evidence.NumClasses; cl++ {
		x, y := ma[cl.String()], mb[cl.String()]
		if x == nil && y == nil {
			continue
		}
		c := LatencyChange{Class: cl.String(), A: x, B: y}
		if x != nil && y != nil {
			c.DeltaP50Ns, c.DeltaP90Ns, c.DeltaP99Ns, c.DeltaMaxNs = y.P50Ns-x.P50Ns, y.P90Ns-x.P90Ns, y.P99Ns-x.P99Ns, y.MaxNs-x.MaxNs
		}
		out = append(out, c)
	}
	return out
}

// checkChanges lists the checks whose status differs, in A's order then
// B's; checks of one name are paired in order.
func checkChanges(a, b []Check) []CheckChange {
	out := []CheckChange{}
	used := make([]bool, len(b))
	for i := range a {
		j := slices.IndexFunc(b, func(c Check) bool { return c.Name == a[i].Name })
		for j >= 0 && used[j] {
			k := slices.IndexFunc(b[j+1:], func(c Check) bool { return c.Name == a[i].Name })
			if k < 0 {
				j = -1
			} else {
				j += 1 + k
			}
		}
		if j < 0 {
			out = append(out, CheckChange{Name: a[i].Name, A: &a[i]})
			continue
		}
		used[j] = true
		if a[i].Status != b[j].Status {
			out = append(out, CheckChange{Name: a[i].Name, A: &a[i], B: &b[j]})
		}
	}
	for j := range b {
		if !used[j] {
			out = append(out, CheckChange{Name: b[j].Name, B: &b[j]})
		}
	}
	return out
}

// configChanges lists the digests of a and b that differ, in A's order
// then B's.
func configChanges(a, b []ConfigDigest) []ConfigChange {
	out := []ConfigChange{}
	inB := map[string]*ConfigDigest{}
	for i := range b {
		inB[b[i].File] = &b[i]
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x.File] = true
		y := inB[x.File]
		switch {
		case y == nil:
			out = append(out, ConfigChange{Name: x.File, Source: DigestComputed, A: x.Digest})
		case x.Digest != y.Digest:
			out = append(out, ConfigChange{Name: x.File, Source: DigestComputed, A: x.Digest, B: y.Digest, Keys: changedKeys(x.Keys, y.Keys)})
		}
	}
	for _, y := range b {
		if !seen[y.File] {
			out = append(out, ConfigChange{Name: y.File, Source: DigestComputed, B: y.Digest})
		}
	}
	return out
}

// changedKeys are the keys of a or b whose digests differ, sorted.
func changedKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ReportSchemaV1 identifies the reports of the previous release
// (schemas/report.v1.schema.json, frozen); ReadJSON reads them: v2 only
// added fields.
const ReportSchemaV1 = "rlbench.report/v1"

// ReadJSON reads a report written by WriteJSON (`rlbench analyze --format
// json`), of ReportSchema or ReportSchemaV1, from r; name (the file's
// path) prefixes every error, with the line of a syntax or type error. A
// document of another schema is refused, naming it and its line.
func ReadJSON(r io.Reader, name string) (*Report, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", name, lineError(b, err))
	}
	if rep.Schema != ReportSchema && rep.Schema != ReportSchemaV1 {
		line := 1
		if i := bytes.Index(b, []byte(`"schema"`)); i >= 0 {
			line += bytes.Count(b[:i], []byte{'\n'})
		}
		what := strconv.Quote(rep.Schema)
		if rep.Schema == "" {
			what = "none"
		}
		return nil, fmt.Errorf("%s: line %d: %w", name, line, errors.New("schema "+what+": not a report of "+ReportSchema))
	}
	if path, err := rep.checkStatuses(); err != nil {
		if line := jsonline.PathLine(b, path); line > 0 {
			return nil, fmt.Errorf("%s: line %d: %w", name, line, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &rep, nil
}

// checkStatuses checks the verdicts a diff compares: the report's, each
// group's and scenario's status one of evidence.Pass, Fail and NotRun, and
// each scenario check's one of the Check constants. It returns the JSON
// path of the first other value with its error.
func (r *Report) checkStatuses() (string, error) {
	verdict := func(path, s string) (string, error) {
		if s == evidence.Pass || s == evidence.Fail || s == evidence.NotRun {
			return "", nil
		}
		return path, fmt.Errorf("%s: %q is not a verdict (want %s, %s or %s)", path, s, evidence.Pass, evidence.Fail, evidence.NotRun)
	}
	if p, err := verdict("status", r.Status); err != nil {
		return p, err
	}
	for i, g := range r.Groups {
		if p, err := verdict(fmt.Sprintf("groups[%d].status", i), g.Status); err != nil {
			return p, err
		}
	}
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		if p, err := verdict(fmt.Sprintf("scenarios[%d].status", i), s.Status); err != nil {
			return p, err
		}
		for j, c := range s.Checks {
			switch c.Status {
			case CheckPass, CheckFail, CheckUnknown, CheckNotChecked:
				continue
			}
			p := fmt.Sprintf("scenarios[%d].checks[%d].status", i, j)
			return p, fmt.Errorf("%s: %q (check %q) is not a check status (want %s, %s, %s or %s)", p, c.Status, c.Name,
				CheckPass, CheckFail, CheckUnknown, CheckNotChecked)
		}
	}
	return "", nil
}

// lineError prefixes err, a syntax or type error of encoding/json decoding
// the whole document b, with the line of its offset.
func lineError(b []byte, err error) error { return jsonline.Wrap(b, err) }
