package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// missingScenario is the NOT_RUN report of a scenario directory that is absent.
func missingScenario(dir, reason string) ScenarioReport {
	name := dir
	if i := strings.IndexByte(dir, '-'); i > 0 && i < 4 { // NN-<slug>/<repeat>
		name = dir[i+1:]
	}
	sr := newScenarioReport(name, dir)
	sr.Status, sr.Incomplete, sr.Reasons = NotRun, true, []string{reason}
	return sr
}

// newScenarioReport returns a report whose lists are empty, not null: the
// JSON schema requires arrays.
func newScenarioReport(name, dir string) ScenarioReport {
	return ScenarioReport{Name: name, Dir: dir, Reasons: []string{}, Checks: []Check{}, Targets: []TargetReport{},
		Phases: []PhaseReport{}, Stats: []ProxyStats{}, FaultWindows: []FaultWindow{},
		Receipts: Receipts{LostIDs: []string{}, LeakedIDs: []string{}, DuplicateIDs: []string{}, PhantomIDs: []string{}}}
}

// NotRunFile, when present in a scenario directory, marks a scenario that did
// not execute; its content is the reason.
const NotRunFile = "NOT_RUN"

// Options configure Analyze.
type Options struct {
	// Now stamps the report; time.Now when nil.
	Now func() time.Time
	// Admitted, when set, is the expected admitted range of every scenario,
	// overriding scenario.json (for evidence recorded by hand).
	Admitted *evidence.Range
	// IntendedLimit, when set, overrides scenario.json's intended_limit.
	IntendedLimit *int

	// inRun is set when the directory is a run directory (manifest.json):
	// every scenario in it must have a valid scenario.json.
	inRun bool
}

// Analyze reads the evidence directory dir and judges every scenario in it.
// dir is either one scenario's directory (it holds scenario.json,
// requests.jsonl or NOT_RUN) or a run directory whose sub-directories (to any
// depth) are scenario directories. Missing or malformed evidence is not an
// error: it makes the scenario NOT_RUN with the file and line. Errors are
// returned only when dir itself cannot be read.
func Analyze(ctx context.Context, dir string, opts Options) (*Report, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	// Walk the real directory (evidence/latest is a symlink).
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	dirs, err := scenarioDirs(root)
	if err != nil {
		return nil, err
	}
	// A run directory's manifest lists every scenario directory the plan
	// called for; one that is absent did not run (or was removed).
	var man struct {
		ScenarioDirs []string `json:"scenario_dirs"`
	}
	inRun := false
	if b, err := os.ReadFile(filepath.Join(root, evidence.ManifestFile)); err == nil {
		if err := json.Unmarshal(b, &man); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, evidence.ManifestFile), jsonErr(b, err))
		}
		inRun = true
	}
	opts.inRun = inRun
	rep := &Report{Schema: ReportSchema, Dir: dir, GeneratedAt: now().UTC().Format(time.RFC3339), Scenarios: []ScenarioReport{}, Groups: []Group{}}
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sr := analyzeScenario(d, opts)
		if rel, err := filepath.Rel(root, d); err == nil {
			sr.Dir = rel
		}
		rep.Scenarios = append(rep.Scenarios, sr)
	}
	found := map[string]bool{}
	for _, s := range rep.Scenarios {
		found[s.Dir] = true
	}
	for _, d := range man.ScenarioDirs {
		if !found[filepath.Clean(d)] {
			rep.Scenarios = append(rep.Scenarios, missingScenario(filepath.Clean(d),
				fmt.Sprintf("incomplete: %s: missing, but %s lists it", filepath.Join(dir, d), evidence.ManifestFile)))
		}
	}
	if len(rep.Scenarios) == 0 {
		rep.Scenarios = append(rep.Scenarios, missingScenario(".", "no scenario evidence (scenario.json, requests.jsonl or NOT_RUN) under "+dir))
	}
	rep.Groups = groups(rep.Scenarios)
	rep.Status = overall(rep.Scenarios)
	return rep, nil
}

func overall(srs []ScenarioReport) string {
	if len(srs) == 0 {
		return NotRun
	}
	st := Pass
	for _, s := range srs {
		switch s.Status {
		case Fail:
			return Fail
		case NotRun:
			st = NotRun
		}
	}
	return st
}

func isScenarioDir(d string) bool {
	for _, f := range []string{evidence.ScenarioFile, evidence.RequestsFile, NotRunFile} {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			return true
		}
	}
	return false
}

func scenarioDirs(root string) ([]string, error) {
	if isScenarioDir(root) {
		return []string{root}, nil
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == root {
			return nil
		}
		if d.Name() == evidence.StatsDir || d.Name() == "rls" {
			return fs.SkipDir
		}
		if isScenarioDir(p) {
			out = append(out, p)
			return fs.SkipDir
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// scenarioData is the loaded evidence of one scenario.
type scenarioData struct {
	dir      string
	scenario evidence.Scenario
	attack   *attackSummary
	requests []evidence.Request
	// index maps a request ID to its position in requests.
	index    map[string]int
	receipts []evidence.Receipt
	faults   []evidence.Fault
	decided  []evidence.Decision
}

// attackSummary is the part of attack.json analyze relies on.
type attackSummary struct {
	Complete    bool   `json:"complete"`
	Interrupted bool   `json:"interrupted"`
	Sent        int    `json:"sent"`
	Recorded    int    `json:"recorded"`
	IDs         int    `json:"ids"`
	Error       string `json:"error"`
	StartNs     int64  `json:"start_ns"`
	EndNs       int64  `json:"end_ns"`
	// Phases are the per-attack summaries of a plan run.
	Phases []struct {
		Complete bool   `json:"complete"`
		Error    string `json:"error"`
	} `json:"phases"`
}

// AnalyzeScenario judges one scenario directory. It never returns an error:
// unreadable evidence makes the scenario NOT_RUN with the reason.
func AnalyzeScenario(dir string) ScenarioReport { return analyzeScenario(dir, Options{}) }

func analyzeScenario(dir string, opts Options) ScenarioReport {
	sr := newScenarioReport(filepath.Base(dir), dir)
	sd := &scenarioData{dir: dir}
	incomplete := func(format string, a ...any) {
		sr.Incomplete = true
		sr.Reasons = append(sr.Reasons, "incomplete: "+fmt.Sprintf(format, a...))
	}

	// scenario.json (optional for a bare attack, but then nothing is expected).
	sp := filepath.Join(dir, evidence.ScenarioFile)
	if b, err := os.ReadFile(sp); err == nil {
		switch err := json.Unmarshal(b, &sd.scenario); {
		case err != nil:
			incomplete("%s: %v", sp, jsonErr(b, err))
		case sd.scenario.Schema != "rlbench.scenario/v1" || sd.scenario.Name == "":
			incomplete("%s: not a scenario (want schema \"rlbench.scenario/v1\" and a name)", sp)
		default:
			sr.Name = sd.scenario.Name
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		incomplete("%s: %v", sp, err)
	} else if opts.inRun {
		incomplete("%s: missing (every scenario of a run has one)", sp)
	}
	if opts.Admitted != nil {
		sd.scenario.Expect.Admitted = opts.Admitted
		if sd.scenario.Expect.Label == "" {
			sd.scenario.Expect.Label = "admitted " + rangeString(*opts.Admitted)
		}
	}
	if opts.IntendedLimit != nil {
		sd.scenario.IntendedLimit = opts.IntendedLimit
	}
	sr.Repeat = sd.scenario.Repeat
	sr.Expectation = sd.scenario.Expect.Label

	if b, err := os.ReadFile(filepath.Join(dir, NotRunFile)); err == nil {
		reason := strings.TrimSpace(string(b))
		if reason == "" {
			reason = "not run"
		}
		sr.Status = NotRun
		sr.Reasons = append(sr.Reasons, reason)
		return sr
	}

	// attack.json
	ap := filepath.Join(dir, evidence.AttackFile)
	if b, err := os.ReadFile(ap); err != nil {
		incomplete("%s: missing (the attack did not finish writing its summary)", ap)
	} else {
		var as attackSummary
		if err := json.Unmarshal(b, &as); err != nil {
			incomplete("%s: %v", ap, jsonErr(b, err))
		} else {
			sd.attack = &as
			for i, ph := range as.Phases {
				if !ph.Complete && as.Complete {
					incomplete("%s: phase %d did not complete %s", ap, i+1, ph.Error)
				}
			}
			if !as.Complete {
				why := "complete=false"
				if as.Interrupted {
					why = "interrupted"
				}
				if as.Error != "" {
					why += ": " + as.Error
				}
				incomplete("%s: attack did not complete (%s)", ap, why)
			}
		}
	}

	// requests.jsonl
	rp := filepath.Join(dir, evidence.RequestsFile)
	sd.requests = make([]evidence.Request, 0, countLines(rp))
	sd.index = make(map[string]int, cap(sd.requests))
	var lines []int
	err := evidence.ReadFile(rp, func(line int, r *evidence.Request) error {
		if r.ID == "" {
			return &evidence.LineError{File: rp, Line: line, Err: errors.New("request without id")}
		}
		if prev, dup := sd.index[r.ID]; dup {
			// The attack records each ID once: a second line is damage.
			incomplete("%s:%d: id %q recorded again (first on line %d)", rp, line, r.ID, lines[prev])
			return nil
		}
		sd.index[r.ID] = len(sd.requests)
		lines = append(lines, line)
		sd.requests = append(sd.requests, *r)
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			sr.Status = NotRun
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("%s: missing: the attack did not run", rp))
			sr.Incomplete = true
			return sr
		}
		incomplete("%v", err)
	}
	if sd.attack != nil && sd.attack.Sent > 0 && len(sd.requests) < sd.attack.Sent {
		incomplete("%s: %d requests recorded, attack.json says %d sent", rp, len(sd.requests), sd.attack.Sent)
	}

	// receipts.jsonl
	cp := filepath.Join(dir, evidence.ReceiptsFile)
	sd.receipts = make([]evidence.Receipt, 0, countLines(cp))
	err = evidence.ReadFile(cp, func(line int, r *evidence.Receipt) error {
		sd.receipts = append(sd.receipts, *r)
		return nil
	})
	if err != nil {
		incomplete("%v", err)
	}

	// faults.jsonl (optional)
	fp := filepath.Join(dir, evidence.FaultsFile)
	if err := evidence.ReadFile(fp, func(line int, f *evidence.Fault) error {
		sd.faults = append(sd.faults, *f)
		return nil
	}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		incomplete("%v", err)
	}
	// A fault that did not take effect, or fewer faults than planned, means
	// the scenario's premise (e.g. "the RLS is down") was not established.
	for i, f := range sd.faults {
		if !f.OK {
			why := f.Error
			if why == "" {
				why = "ok is false"
			}
			incomplete("%s:%d: fault %q (%s %s) did not take effect: %s", fp, i+1, f.Name, f.Action, f.Target, why)
		}
	}
	if n := sd.scenario.Faults; len(sd.faults) < n {
		incomplete("%s: %d fault(s) recorded, scenario.json plans %d", fp, len(sd.faults), n)
	}

	// rls/decisions.jsonl (optional)
	dp := filepath.Join(dir, evidence.DecisionsFile)
	if err := evidence.ReadFile(dp, func(line int, d *evidence.Decision) error {
		sd.decided = append(sd.decided, *d)
		return nil
	}); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			incomplete("%v", err)
		} else if sd.scenario.RLSDecisions {
			incomplete("%s: missing: scenario.json says the RLS decisions were recorded", dp)
		}
	}

	judge(sd, &sr)
	return sr
}

// jsonErr adds a line number to a JSON syntax error of a whole-file document.
func jsonErr(b []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + strings.Count(string(b[:min(int(se.Offset), len(b))]), "\n")
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}

// Classify returns the class of a client outcome. The marks follow Envoy:
// the local_ratelimit filter answers 429 with body "local_rate_limited"; the
// ratelimit filter answers OVER_LIMIT with 429 and x-envoy-ratelimited: true,
// and an RLS error under failure_mode_deny with status_on_error (default 500)
// and an empty body.
func Classify(r *evidence.Request) string {
	switch {
	case r.Code == 0:
		return ClassNoResponse
	case r.Code >= 200 && r.Code < 300:
		return ClassAdmitted
	case r.Code == 429 && strings.HasPrefix(r.Body, "local_rate_limited"):
		return ClassLocal429
	case r.Code == 429 && strings.EqualFold(r.Headers["x-envoy-ratelimited"], "true"):
		return ClassGlobal429
	case r.Code == 500 && r.BytesIn == 0 && r.Headers["x-envoy-upstream-service-time"] == "":
		return ClassRLSError
	case r.Code >= 400 && r.Code < 500:
		return ClassOther4xx
	case r.Code >= 500:
		return ClassOther5xx
	}
	return ClassOther
}

// proxyRejected reports whether the class is a response the proxy produced
// without forwarding: such a request must have no receipt.
func proxyRejected(class string) bool {
	return class == ClassLocal429 || class == ClassGlobal429 || class == ClassRLSError
}

func judge(sd *scenarioData, sr *ScenarioReport) {
	byTarget := map[string]*TargetReport{}
	phaseIdx := map[string]int{}
	var targets []string
	classes := make([]string, len(sd.requests)) // by request index
	var start, end int64
	for i := range sd.requests {
		r := &sd.requests[i]
		c := Classify(r)
		classes[i] = c
		sr.Totals.add(c)
		tr := byTarget[r.Target]
		if tr == nil {
			tr = &TargetReport{Target: r.Target}
			byTarget[r.Target] = tr
			targets = append(targets, r.Target)
		}
		tr.Classes.add(c)
		pi, ok := phaseIdx[r.Phase]
		if !ok {
			sr.Phases = append(sr.Phases, PhaseReport{Phase: r.Phase})
			pi = len(sr.Phases) - 1
			phaseIdx[r.Phase] = pi
		}
		sr.Phases[pi].Classes.add(c)
		if start == 0 || r.SentNs < start {
			start = r.SentNs
		}
		if e := r.EndNs(); e > end {
			end = e
		}
	}
	sr.StartNs, sr.EndNs = start, end
	if len(sr.Phases) < 2 {
		sr.Phases = []PhaseReport{}
	}

	// Reconcile receipts by ID.
	rc := &sr.Receipts
	rc.Total = len(sd.receipts)
	seen := make(map[string]int, len(sd.receipts))
	for i := range sd.receipts {
		id := sd.receipts[i].ID
		if id == nil {
			rc.WithoutID++
			continue
		}
		seen[*id]++
	}
	sample := func(l *[]string, id string) {
		if len(*l) < SampleIDs {
			*l = append(*l, id)
		}
	}
	for i := range sd.requests {
		id := sd.requests[i].ID
		n := seen[id]
		c := classes[i]
		if n > 0 {
			byTarget[sd.requests[i].Target].Receipts++
		}
		switch {
		case c == ClassAdmitted && n > 0:
			rc.AdmittedWithReceipt++
		case c == ClassAdmitted:
			rc.AdmittedWithoutReceipt++
			sample(&rc.LostIDs, id)
		case proxyRejected(c) && n > 0:
			rc.RejectedWithReceipt++
			sample(&rc.LeakedIDs, id)
		case c == ClassNoResponse:
			rc.Indeterminate++
			if n > 0 {
				rc.IndeterminateWithReceipt++
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		n := seen[id]
		if n > 1 {
			rc.Duplicates += n - 1
			sample(&rc.DuplicateIDs, id)
		}
		if _, sent := sd.index[id]; !sent {
			rc.Phantom += n
			sample(&rc.PhantomIDs, id)
		}
	}

	sort.Strings(targets)
	for _, t := range targets {
		sr.Targets = append(sr.Targets, *byTarget[t])
	}

	// Over-admission against the intended limit.
	if il := sd.scenario.IntendedLimit; il != nil {
		lo, hi := sr.Totals.Admitted, sr.Totals.Admitted+sr.Totals.NoResponse
		sr.OverAdmission = &OverAdmission{Intended: *il, AdmittedMin: lo, AdmittedMax: hi, Min: lo - *il, Max: hi - *il}
	}
	sr.Bound = configuredBound(sd.scenario.Limits, start, end)
	sr.Stats = proxyStats(sd, sr)
	sr.FaultWindows = faultWindows(sd, classes)
	sr.RLS = rlsCheck(sd)
	accessLogChecks(sd, sr) // accesslog/*.log: producers per response and their agreement with the clients (accesslog.go)

	checks(sd, sr)
	realRLSChecks(sd, sr) // real envoyproxy/ratelimit: rls.real and its checks (analyze/rlsreal.go)
	// Verdict: a failed check is FAIL; otherwise missing evidence or an
	// undecidable check (a counter reset, requests without response deciding
	// a range) is NOT_RUN: inconclusive is never PASS.
	failed, unknown := false, false
	for _, c := range sr.Checks {
		switch c.Status {
		case CheckFail:
			failed = true
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("%s: want %s, got %s", c.Name, c.Want, c.Got))
		case CheckUnknown:
			unknown = true
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("inconclusive: %s: want %s, got %s", c.Name, c.Want, c.Got))
		}
	}
	for _, ps := range sr.Stats {
		if ps.Status == "reset" {
			sr.Reasons = append(sr.Reasons, fmt.Sprintf("inconclusive: %s: %s (%s)", ps.Proxy, ps.Detail, strings.Join(ps.Resets, "; ")))
		}
	}
	// Incomplete evidence wins over a failed check: checks on partial evidence
	// (e.g. receipts whose request lines were cut off) are not conclusive.
	switch {
	case sr.Incomplete:
		sr.Status = NotRun
	case failed:
		sr.Status = Fail
	case unknown:
		sr.Status = NotRun
	default:
		sr.Status = Pass
	}
}

func rangeString(r evidence.Range) string { return r.String() }

func passIf(ok bool) string {
	if ok {
		return CheckPass
	}
	return CheckFail
}

// checks turns the expectation and the reconciliation into judged checks.
// Integrity checks (receipts, duplicates, phantoms) always apply: a rate
// limit whose rejected requests still reach the backend does not hold.
func checks(sd *scenarioData, sr *ScenarioReport) {
	add := func(name, status, want, got string) {
		sr.Checks = append(sr.Checks, Check{Name: name, Status: status, Want: want, Got: got})
	}
	ex := sd.scenario.Expect
	noResp := sr.Totals.NoResponse
	if ex.Admitted != nil {
		lo, hi := sr.Totals.Admitted, sr.Totals.Admitted+noResp
		st := CheckFail
		switch {
		case ex.Admitted.Contains(lo) && ex.Admitted.Contains(hi):
			st = CheckPass
		case hi >= ex.Admitted.Min && lo <= ex.Admitted.Max:
			st = CheckUnknown // some no-response requests decide it
		}
		got := strconv.Itoa(lo)
		if hi != lo {
			got = fmt.Sprintf("%d..%d (%d without response)", lo, hi, noResp)
		}
		add("admitted", st, rangeString(*ex.Admitted), got)
	}
	classes := make([]string, 0, len(ex.Classes))
	for k := range ex.Classes {
		classes = append(classes, k)
	}
	sort.Strings(classes)
	for _, k := range classes {
		want := ex.Classes[k]
		n, ok := sr.Totals.Get(k)
		if !ok {
			add("class "+k, CheckFail, rangeString(want), "unknown class")
			continue
		}
		add("class "+k, passIf(want.Contains(n)), rangeString(want), strconv.Itoa(n))
	}
	rc := sr.Receipts
	add("admitted without receipt (lost)", passIf(rc.AdmittedWithoutReceipt == 0), "0", idsGot(rc.AdmittedWithoutReceipt, rc.LostIDs))
	add("rejected with receipt (leaked)", passIf(rc.RejectedWithReceipt == 0), "0", idsGot(rc.RejectedWithReceipt, rc.LeakedIDs))
	add("duplicate receipts (re-sent)", passIf(rc.Duplicates == 0), "0", idsGot(rc.Duplicates, rc.DuplicateIDs))
	add("phantom receipts (never sent)", passIf(rc.Phantom == 0), "0", idsGot(rc.Phantom, rc.PhantomIDs))
	if ex.ReceiptsEqualAdmitted {
		lo := sr.Totals.Admitted
		got := rc.AdmittedWithReceipt + rc.IndeterminateWithReceipt
		st := passIf(got == lo && rc.AdmittedWithoutReceipt == 0)
		add("receipts = admitted", st, strconv.Itoa(lo), strconv.Itoa(rc.AdmittedWithReceipt+rc.IndeterminateWithReceipt+rc.RejectedWithReceipt))
	}
	// With faults, an RLS-error 500 should fall in (or straddle) a fault
	// window; one entirely outside every window is unexplained.
	if len(sr.FaultWindows) > 0 && sr.Totals.RLSError > 0 {
		explained := 0
		for _, w := range sr.FaultWindows {
			explained += w.Inside.RLSError + w.Straddling.RLSError
		}
		outside := sr.Totals.RLSError - explained
		add("RLS 500s outside fault windows (unexplained)", passIf(outside <= 0), "0", strconv.Itoa(max(outside, 0)))
	}
	// Without an explicit admitted expectation, an intended limit is the
	// expectation: the limit must hold.
	if ex.Admitted == nil && sd.scenario.IntendedLimit != nil {
		il := *sd.scenario.IntendedLimit
		lo, hi := sr.Totals.Admitted, sr.Totals.Admitted+noResp
		st := passIf(hi <= il)
		if lo <= il && hi > il {
			st = CheckUnknown
		}
		add("admitted within intended limit", st, fmt.Sprintf("<= %d", il), strconv.Itoa(lo))
	}
	// A receipt without X-Rlbench-Id is a request the attack did not send
	// (it bypassed the proxy, or lost the header on the way).
	add("receipts without id (unidentified)", passIf(rc.WithoutID == 0), "0", strconv.Itoa(rc.WithoutID))
	if sr.Bound != nil && len(sd.faults) == 0 {
		// Requests the proxies admitted without an RLS decision (failure
		// mode allow: RLS error or timeout) are outside what the limit bounds.
		fo := failOpen(sr)
		hi := int64(sr.Totals.Admitted) - fo
		got := strconv.FormatInt(hi, 10)
		if fo > 0 {
			got = fmt.Sprintf("%d (%d admitted - %d failure_mode_allowed)", hi, sr.Totals.Admitted, fo)
		}
		add("admitted within configured bound", passIf(hi <= int64(sr.Bound.Allowed)), fmt.Sprintf("<= %d", sr.Bound.Allowed), got)
	}
	// Proxy counters are compared whenever snapshots exist; a missing one of a
	// pair (or of a proxy the scenario names), or none at all under
	// stats_agree, is incomplete evidence.
	if ex.StatsAgree && len(sr.Stats) == 0 {
		sr.Incomplete = true
		sr.Reasons = append(sr.Reasons, "incomplete: stats_agree expected but no stats snapshots under stats/")
	}
	for _, ps := range sr.Stats {
		if ps.Status == "missing" {
			sr.Incomplete = true
			sr.Reasons = append(sr.Reasons, "incomplete: "+ps.Detail)
			continue
		}
		for _, c := range ps.Checks {
			add(ps.Proxy+": "+c.Name, c.Status, c.Want, c.Got)
		}
	}
	if sr.RLS != nil {
		for _, w := range sr.RLS.Windows {
			if w.Limit > 0 {
				add("rls "+w.Key+": OK within limit", passIf(w.OK <= w.Limit), fmt.Sprintf("<= %d", w.Limit), strconv.Itoa(w.OK))
			}
		}
		if globalInLoop(sd, sr) {
			ok := sr.RLS.ByCode["OK"]
			need := int64(sr.Totals.Admitted) - failOpen(sr)
			add("every admitted request counted OK by the RLS", passIf(int64(ok) >= need), fmt.Sprintf(">= %d", need), strconv.Itoa(ok))
		}
	}
	// The lab RLS logs every decision it sends; the proxies count every
	// decision they receive (cluster.<c>.ratelimit.ok + over_limit, Envoy's
	// ratelimit filter). Both sides must agree. (The real RLS can decide late,
	// after a proxy gave up; its log is judged in rlsreal.go instead.)
	_, realLog := os.Stat(filepath.Join(sd.dir, "rls", "rls.log"))
	if sd.scenario.RLSDecisions && realLog != nil && globalInLoop(sd, sr) {
		var received int64
		comparable := len(sr.Stats) > 0
		for _, ps := range sr.Stats {
			if ps.Status != "ok" {
				comparable = false
			}
			received += ps.Deltas[DeltaGlobalOK] + ps.Deltas[DeltaGlobalOverLimit]
		}
		if comparable {
			logged := 0
			if sr.RLS != nil {
				logged = sr.RLS.ByCode["OK"] + sr.RLS.ByCode["OVER_LIMIT"]
			}
			add("rls decisions logged = decisions the proxies received", passIf(int64(logged) == received),
				strconv.FormatInt(received, 10)+" (ratelimit.ok + over_limit)", strconv.Itoa(logged)+" in "+evidence.DecisionsFile)
		}
	}
}

// failOpen sums the proxies' ratelimit.failure_mode_allowed deltas: requests
// admitted without an RLS decision (Envoy ratelimit filter, failure_mode_deny false).
func failOpen(sr *ScenarioReport) int64 {
	var n int64
	for _, ps := range sr.Stats {
		n += ps.Deltas["ratelimit.failure_mode_allowed"]
	}
	return n
}

// globalInLoop reports whether the proxies asked an RLS for every request:
// scenario.json describes a fixed-window limit, or (evidence recorded by
// hand, without limits) the proxies' stats show the global filter.
func globalInLoop(sd *scenarioData, sr *ScenarioReport) bool {
	for _, l := range sd.scenario.Limits {
		if l.Kind == "fixed_window" {
			return true
		}
	}
	if len(sd.scenario.Limits) > 0 {
		return false
	}
	for _, ps := range sr.Stats {
		if _, ok := ps.Deltas[DeltaGlobalOK]; ok {
			return true
		}
	}
	return false
}

func idsGot(n int, ids []string) string {
	if n == 0 {
		return "0"
	}
	s := strconv.Itoa(n) + " (" + strings.Join(ids, ",")
	if n > len(ids) {
		s += ",…"
	}
	return s + ")"
}

// countLines counts the newlines of the file at path (0 when unreadable), to
// size the slices that hold a million-line evidence file without regrowing.
func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	n := 0
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			return n + 1
		}
	}
}
