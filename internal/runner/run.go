package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/collect/envoy"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/buildinfo"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/hostprobe"
	"github.com/rlbench/rlbench/internal/human"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/gateway"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/userdirs"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Options configure Run.
type Options struct {
	// Root overrides the plan's root directory for run directories. With neither, Run uses DefaultRoot.
	Root string
	// PlanBytes is the plan file's content, for the digest in manifest.json.
	PlanBytes []byte
	// Progress receives one human line per step; nil discards.
	Progress io.Writer
	// Live, if set, is called before each attack with its label and the
	// attack's live counters, and returns a function called when the attack
	// has ended (the CLI draws progress there).
	Live func(label string, p *attack.Progress) (stop func())
	// Now is the clock for directory names and the manifest; time.Now when nil.
	Now func() time.Time
	// Observer, if set, follows the run live (Observer).
	Observer Observer
	// Events, if set, receives the run's events while it runs: started
	// (with the run directory's name as run_id), each attack's progress
	// every second (events.Sink.Follow), every fault's begin and end. The
	// caller writes verdict and finished after the analysis.
	Events *events.Sink
	// PlanFile names the plan file in the started event.
	PlanFile string
	// Exe is the rlbench executable that runs the sender processes of an
	// attack step with senders (AttackPlan.Senders; internal/senders);
	// the CLI gives os.Executable(). Without it such a step fails, and its
	// scenario is NOT_RUN.
	Exe string
}

// RunStampLayout is the time layout (UTC) of a run directory's name, <stamp>-<n>.
const RunStampLayout = "20060102T150405Z"

// DefaultRoot is the root of run directories when neither --root nor the plan's root gives one:
// userdirs.Runs ($RLBENCH_HOME/runs, else $XDG_STATE_HOME/rlbench/runs, else ~/.local/state/rlbench/runs), never a
// directory of the working tree (run directories used to go to ./evidence, which in rlbench's repository is the Go
// package evidence/).
func DefaultRoot() (string, error) { return userdirs.Runs() }

// NewRunDir creates <root>/<UTC yyyymmddThhmmssZ>-<n> with the smallest n >= 1
// that does not exist yet.
func NewRunDir(root string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	stamp := now.UTC().Format(RunStampLayout)
	for n := 1; n < 10000; n++ {
		d := filepath.Join(root, fmt.Sprintf("%s-%d", stamp, n))
		err := os.Mkdir(d, 0o755)
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s: no free run directory for %s", root, stamp)
}

// Run executes every scenario of the plan and returns the run directory.
// A scenario that cannot execute (an unreachable external target, a lab part
// that fails to start) gets a NOT_RUN marker with the reason and the others
// still run. An interrupted run (ctx done) stops after the current step; its
// evidence is kept and marked incomplete. The error is non-nil only when the
// run directory itself cannot be written.
func Run(ctx context.Context, plan *Plan, opts Options) (string, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	root := opts.Root
	if root == "" {
		root = plan.Root
	}
	if root == "" {
		var err error
		if root, err = DefaultRoot(); err != nil {
			return "", err
		}
	}
	runDir, err := NewRunDir(root, now())
	if err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "run directory %s\n", runDir)
	if opts.Observer != nil {
		opts.Observer.SetRunID(filepath.Base(runDir))
	}
	host, _ := os.Hostname()
	m := evidence.Manifest{Schema: evidence.ManifestSchema, RlbenchVersion: buildinfo.Version(), GoVersion: runtime.Version(), Plan: plan.Name,
		Host: host, Start: now().UTC().Format(time.RFC3339Nano), Tools: map[string]string{}}
	if len(opts.PlanBytes) > 0 {
		sum := sha256.Sum256(opts.PlanBytes)
		m.PlanDigest = "sha256:" + hex.EncodeToString(sum[:])
	}
	for name, cmd := range plan.Tools {
		out, err := exec.CommandContext(ctx, "sh", "-c", cmd).CombinedOutput()
		v := strings.TrimSpace(string(out))
		if err != nil {
			v = fmt.Sprintf("unavailable (%s: %v) %s", cmd, err, v)
		}
		m.Tools[name] = evidence.RedactText(v)
	}
	for si := range plan.Scenarios {
		sc := &plan.Scenarios[si]
		m.Scenarios = append(m.Scenarios, sc.Name)
		for rep := 1; rep <= sc.Repeat; rep++ {
			m.ScenarioDirs = append(m.ScenarioDirs, scenarioDir(si, sc, rep))
		}
	}
	if err := writeJSON(evidence.Dir(runDir).Manifest(), m); err != nil {
		return runDir, err
	}
	opts.Events.SetRunID(filepath.Base(runDir))
	_ = opts.Events.Emit(events.Event{Type: events.TypeStarted, Started: &events.Started{Command: "run", Plan: plan.Name,
		PlanFile: opts.PlanFile, Dir: runDir, Scenarios: m.Scenarios}})
	for si := range plan.Scenarios {
		sc := &plan.Scenarios[si]
		for rep := 1; rep <= sc.Repeat; rep++ {
			ed, err := mkScenarioDir(runDir, scenarioDir(si, sc, rep))
			if err != nil {
				return runDir, err
			}
			dir := string(ed)
			if ctx.Err() != nil {
				_ = writeJSON(ed.Scenario(), evidence.Scenario{Schema: evidence.ScenarioSchema, Name: sc.Name, Description: sc.Description, Repeat: rep, Labels: sc.Labels})
				_ = evidence.WriteNotRun(ed, "interrupted before this scenario started")
				continue
			}
			fmt.Fprintf(progress, "scenario %q repeat %d/%d\n", sc.Name, rep, sc.Repeat)
			sr := &scenarioRun{plan: sc, index: si, repeat: rep, dir: dir, progress: progress, live: opts.Live, runID: filepath.Base(runDir),
				events: opts.Events, obs: opts.Observer, exe: opts.Exe}
			if reason := sr.run(ctx); reason != "" {
				fmt.Fprintf(progress, "  NOT_RUN: %s\n", reason)
				sp := ed.Scenario()
				if _, err := os.Stat(sp); err != nil {
					_ = writeJSON(sp, evidence.Scenario{Schema: evidence.ScenarioSchema, Name: sc.Name, Description: sc.Description, Repeat: rep, Labels: sc.Labels})
				}
				if err := evidence.WriteNotRun(ed, reason); err != nil {
					return runDir, err
				}
			}
		}
	}
	// <root>/latest points at the newest run directory.
	// It is replaced by renaming a new link over it, never written through;
	// a "latest" that is not a link (the user's own) is left alone.
	_ = safefile.ReplaceSymlink(filepath.Base(runDir), evidence.Dir(root).Latest())
	m.End = now().UTC().Format(time.RFC3339Nano)
	m.Interrupted = ctx.Err() != nil
	return runDir, writeJSON(evidence.Dir(runDir).Manifest(), m)
}

// mkScenarioDir creates the scenario directory rel (scenarioDir) and its
// stats/ below runDir without following a link below runDir
// (safefile.MkdirAll): a scenario directory or a stats/ that is a link is a
// *safefile.RefusedError naming it.
func mkScenarioDir(runDir, rel string) (evidence.Dir, error) {
	ed := evidence.Dir(filepath.Join(runDir, rel))
	return ed, safefile.MkdirAll(runDir, ed.Stats())
}

// scenarioDir is a scenario repeat's directory relative to the run directory.
func scenarioDir(index int, sc *ScenarioPlan, repeat int) string {
	return filepath.Join(fmt.Sprintf("%02d-%s", index+1, slug(sc.Name)), strconv.Itoa(repeat))
}

func writeJSON(path string, v any) error { return evidence.WriteJSONFile(path, v) }

// scenarioRun is one repeat of one scenario.
type scenarioRun struct {
	plan     *ScenarioPlan
	index    int
	repeat   int
	dir      string
	progress io.Writer
	live     func(string, *attack.Progress) func()
	obs      Observer // nil: none
	// events receives the progress and fault events (nil: none).
	events *events.Sink
	// exe is Options.Exe, the executable of the sender processes.
	exe string
	// runID (the run directory's name) prefixes every request ID, so IDs
	// are unique across runs that share an external backend.
	runID string

	targets []attack.Target
	admins  map[string]string // proxy name -> admin URL
	rls     *labrls.Server
	// backend is the lab backend, for the backend fault steps; baseline are
	// its endpoints' faults from the plan (what a clear restores).
	backend  *backend.Backend
	baseline backend.Faults
	windows  faultWindows
	// cluster is the proxies' backend cluster ("backend" in the lab).
	cluster string
	// real holds the real Redis and envoyproxy/ratelimit of a scenario whose rls kind is "real".
	real     *realParts
	cleanups []func()
	limits   []evidence.LimitSpec
	// nginx are lab.nginx's running instances (targets nginx-a, ...).
	nginx []*labNginx
	// haproxy are lab.haproxy's running instances (targets haproxy-a, ...).
	haproxy []*labHAProxy
	// classify are the classification rules the scenario's own limiter
	// (lab.haproxy's deny, lab.gateway's replies) adds after the plan's, in
	// scenario.json.
	classify []evidence.ClassRule
	// limiters are the limiter declarations of scenario.json.
	limiters []evidence.Limiter
	// captureHeaders are the response headers the attacks record; nil: attack's defaults.
	captureHeaders []string
	// gateway is lab.gateway's running gateway.
	gateway *gateway.Gateway
	// gatewayRedis is the gateway's redis-server (lua, gcra), the target of redis faults.
	gatewayRedis *realparts.Redis
}

// run executes the scenario; it returns a NOT_RUN reason or "".
func (r *scenarioRun) run(ctx context.Context) (notRun string) {
	defer func() {
		for i := len(r.cleanups) - 1; i >= 0; i-- {
			r.cleanups[i]()
		}
	}()
	// receipts.jsonl: the lab's backend writes (and seals) its own; for an
	// external scenario the runner writes what it fetches (externalReceipts),
	// or nothing when there is no receipts_url.
	receipts := &onceWriter{}
	defer receipts.Close()

	if r.plan.Lab != nil {
		if reason := r.startLab(ctx); reason != "" {
			return reason
		}
	} else {
		var err error
		if receipts.w, err = evidence.Create(evidence.Dir(r.dir).Receipts()); err != nil {
			return err.Error()
		}
		if reason := r.checkExternal(ctx); reason != "" {
			return reason
		}
	}
	if err := r.writeScenario(); err != nil {
		return err.Error()
	}
	// The harness measures its own host from here (before the first
	// snapshot) to after the last one, into harness.json; an interrupt
	// (ctx done) does not cut the window short.
	probe := hostprobe.Start(context.WithoutCancel(ctx), hostprobe.Options{})
	defer probe.Stop() // a NOT_RUN scenario writes no harness.json
	if reason := r.snapshot(ctx, "before"); reason != "" {
		return reason
	}
	r.markAccessLogs()
	// The receipts an external backend holds before the first step are
	// not this scenario's; every one after them is (externalReceipts).
	extBefore := 0
	if e := r.plan.External; e != nil && e.ReceiptsURL != "" {
		var err error
		if extBefore, err = r.countExternalReceipts(ctx); err != nil {
			return "receipts: " + err.Error()
		}
	}

	reqs, err := evidence.Create(evidence.Dir(r.dir).Requests())
	if err != nil {
		return err.Error()
	}
	faults, err := evidence.Create(evidence.Dir(r.dir).Faults())
	if err != nil {
		return err.Error()
	}
	r.windows.w = faults
	agg := r.runSteps(ctx, reqs, faults)
	if err := reqs.Close(); err != nil {
		agg.Complete, agg.Error = false, err.Error()
	}
	r.windows.closeAll()
	if err := faults.Close(); err != nil { // a fault record that was not written
		agg.Complete, agg.Error = false, "faults: "+err.Error()
	}
	r.finish(ctx, agg, probe, receipts, extBefore)
	if err := writeJSON(evidence.Dir(r.dir).Attack(), agg); err != nil {
		return err.Error()
	}
	return r.gatewayLimiterReason()
}

// onceWriter is an evidence writer (nil: none) that Close closes once.
type onceWriter struct {
	w      *evidence.Writer
	closed bool
}

// Close closes the writer the first time; later calls return nil.
func (o *onceWriter) Close() error {
	if o.w == nil || o.closed {
		return nil
	}
	o.closed = true
	return o.w.Close()
}

// runSteps runs the scenario's steps in order into requests.jsonl (reqs)
// and faults.jsonl (faults) and returns attack.json's record of them: a
// fault without at: runs when its turn comes; one with at: waits for the
// next attack step, which fires it at its offset (attackStep). An
// interrupt (ctx done) before a step, or an attack's error, ends the steps
// and marks the record incomplete.
func (r *scenarioRun) runSteps(ctx context.Context, reqs, faults *evidence.Writer) *evidence.Attack {
	agg := evidence.NewAttack()
	var pending []Step // faults scheduled at an offset into the next attack
	for _, st := range r.plan.Steps {
		if ctx.Err() != nil {
			agg.Complete, agg.Interrupted = false, true
			break
		}
		if st.Fault != nil && st.Fault.At > 0 {
			pending = append(pending, st)
			continue
		}
		if st.Fault != nil {
			f := r.fault(ctx, st)
			r.writeFault(faults, f)
			fmt.Fprintf(r.progress, "  fault %s: ok=%v %s\n", st.Name, f.OK, f.Error)
			continue
		}
		sums, err := r.attackStep(ctx, st, pending, reqs, faults)
		pending = nil
		for _, sum := range sums {
			agg.Add(sum)
		}
		if err != nil {
			agg.Complete = false
			agg.Error = err.Error()
			break
		}
		for _, sum := range sums {
			label := attackLabel(st)
			if sh := sum.Shard; sh != nil {
				label += fmt.Sprintf(" sender %d/%d", sh.Index, sh.Count)
			}
			fmt.Fprintf(r.progress, "%s: %d sent, codes %s\n", label, sum.Sent, human.Codes(sum.CodesByTarget, sum.NotSent))
		}
	}
	return agg
}

// attackStep runs one attack step while the faults armed (those with at:
// before it) fire on timers at their offsets, written to faults. The
// attack waits for none of them; the step ends when every fault that fired
// has run, those not reached are dropped, and the timed backend faults are
// cleared.
func (r *scenarioRun) attackStep(ctx context.Context, st Step, armed []Step, reqs, faults *evidence.Writer) ([]*evidence.AttackSummary, error) {
	// The offsets count from the instant the attack starts sending
	// (attack.Options.OnStart), after its connections are warm.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var timers []*time.Timer
	arm := func(time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for _, fs := range armed {
			wg.Add(1)
			timers = append(timers, time.AfterFunc(time.Duration(fs.Fault.At), func() {
				defer wg.Done()
				f := r.fault(ctx, fs)
				r.writeFault(faults, f)
				fmt.Fprintf(r.progress, "  fault %s at +%s: ok=%v %s\n", fs.Name, time.Duration(fs.Fault.At), f.OK, f.Error)
			}))
		}
	}
	var sums []*evidence.AttackSummary
	var err error
	if st.Attack.Senders > 1 {
		sums, err = r.attackSenders(ctx, st, reqs, arm)
	} else {
		var sum *evidence.AttackSummary
		if sum, err = r.attack(ctx, st, reqs, arm); sum != nil {
			sums = append(sums, sum)
		}
	}
	mu.Lock()
	for _, t := range timers {
		if t.Stop() {
			wg.Done() // never fired: the attack ended first
		}
	}
	mu.Unlock()
	wg.Wait()
	r.windows.closeAll() // timed backend faults end with their attack step
	return sums, err
}

// finish gathers the evidence that follows the steps into the scenario
// directory: the after snapshot, harness.json (probe), the access logs,
// nginx's and the real RLS's evidence; it stops the lab (so the backend
// seals its receipts), fetches an external backend's receipts after
// extBefore into receipts and closes it. What fails marks agg incomplete
// with its error.
func (r *scenarioRun) finish(ctx context.Context, agg *evidence.Attack, probe *hostprobe.Probe, receipts *onceWriter, extBefore int) {
	_ = r.snapshot(ctx, "after")
	if err := writeJSON(evidence.Dir(r.dir).Harness(), probe.Stop()); err != nil {
		agg.Complete, agg.Error = false, "harness: "+err.Error()
	}
	if err := r.copyAccessLogs(); err != nil {
		agg.Complete, agg.Error = false, err.Error()
	}
	if err := r.finishNginx(ctx); err != nil {
		agg.Complete, agg.Error = false, "nginx evidence: "+err.Error()
	}
	if err := r.finishHAProxy(ctx); err != nil {
		agg.Complete, agg.Error = false, "haproxy evidence: "+err.Error()
	}
	if r.real != nil {
		if err := r.finishReal(ctx); err != nil {
			agg.Complete, agg.Error = false, "rls evidence: "+err.Error()
		}
	}
	// Stop the lab so that the backend seals its receipts before they are read.
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
	if r.backend != nil {
		if err := r.backend.Err(); err != nil { // its seal says so too
			agg.Complete, agg.Error = false, err.Error()
		}
	}
	if r.gateway != nil {
		if err := r.gateway.Err(); err != nil { // an access log line was lost
			agg.Complete, agg.Error = false, err.Error()
		}
	}
	if e := r.plan.External; e != nil && e.ReceiptsURL != "" {
		if err := r.externalReceipts(ctx, receipts.w, extBefore); err != nil {
			agg.Complete, agg.Error = false, "receipts: "+err.Error()
		}
	}
	if err := receipts.Close(); err != nil {
		agg.Complete, agg.Error = false, "receipts: "+err.Error()
	}
}

// checkExternal runs the setup command and checks that every external proxy answers.
func (r *scenarioRun) checkExternal(ctx context.Context) string {
	e := r.plan.External
	if e.Setup != "" {
		if out, err := exec.CommandContext(ctx, "sh", "-c", e.Setup).CombinedOutput(); err != nil {
			return evidence.RedactText(fmt.Sprintf("setup %q failed: %v: %s", e.Setup, err, strings.TrimSpace(string(out))))
		}
	}
	if e.Teardown != "" {
		r.cleanups = append(r.cleanups, func() { _ = exec.Command("sh", "-c", e.Teardown).Run() })
	}
	r.admins = map[string]string{}
	for _, p := range e.Proxies {
		u, err := url.Parse(p.URL)
		if err != nil || u.Host == "" {
			return fmt.Sprintf("target %s: bad url %q", p.Name, evidence.RedactText(p.URL))
		}
		c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return fmt.Sprintf("target %s unreachable: %v", p.Name, err)
		}
		_ = c.Close()
		r.targets = append(r.targets, attack.Target{Name: p.Name, URL: strings.TrimRight(p.URL, "/")})
		if p.Admin != "" {
			r.admins[p.Name] = strings.TrimRight(p.Admin, "/")
		}
	}
	return ""
}

func (r *scenarioRun) writeScenario() error {
	sc := r.plan
	ex := sc.Expect.Expectation
	ex.ReceiptsEqualAdmitted, ex.StatsAgree = true, nil
	if len(r.admins) > 0 {
		ex.StatsAgree = new(bool)
		*ex.StatsAgree = true
	}
	if sc.Expect.ReceiptsEqualAdmitted != nil {
		ex.ReceiptsEqualAdmitted = *sc.Expect.ReceiptsEqualAdmitted
	}
	if sc.Expect.StatsAgree != nil {
		ex.StatsAgree = sc.Expect.StatsAgree // false turns the comparison off
	}
	if sc.External != nil && sc.External.ReceiptsURL == "" {
		ex.ReceiptsEqualAdmitted = false
	}
	var proxies []string
	for _, t := range r.targets {
		if _, ok := r.admins[t.Name]; ok {
			proxies = append(proxies, t.Name)
		}
	}
	faults := 0
	for _, st := range sc.Steps {
		if st.Fault != nil {
			faults++
			if st.Fault.Action == evidence.ActionSet && st.Fault.For > 0 {
				faults++ // its clear
			}
		}
	}
	perStep, perFlow := r.requestHeaders()
	s := evidence.Scenario{Schema: evidence.ScenarioSchema, Name: sc.Name, Description: sc.Description, Proxies: proxies,
		IntendedLimit: sc.IntendedLimit, Expect: ex, Limits: r.limits, Limiters: r.scenarioLimiters(), Classify: append(slices.Clone(sc.Classify), r.classify...),
		RequestHeaders: perStep, FlowRequestHeaders: perFlow, Repeat: r.repeat, Faults: faults,
		RLSDecisions: sc.Lab != nil && sc.Lab.RLS != nil, Cluster: r.cluster, HarnessParts: r.harnessParts(), Labels: sc.Labels}
	return writeJSON(evidence.Dir(r.dir).Scenario(), s)
}

// snapshot saves every proxy's /stats (raw text and parsed) under stats/,
// and the real RLS's metrics when there is one.
func (r *scenarioRun) snapshot(ctx context.Context, label string) string {
	if r.real != nil {
		if reason := r.snapshotReal(ctx, label); reason != "" {
			return reason
		}
	}
	if reason := r.snapshotNginx(ctx, label); reason != "" {
		return reason
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, t := range r.targets {
		admin, ok := r.admins[t.Name]
		if !ok {
			continue
		}
		raw, snap, err := envoy.Fetch(ctx, client, admin, envoyrec.FormatText)
		if err != nil {
			return evidence.RedactText(fmt.Sprintf("stats of %s (%s): %v", t.Name, admin, err))
		}
		snap.Proxy, snap.Label, snap.Admin = t.Name, label, evidence.RedactURL(admin)
		if err := evidence.WriteStats(evidence.Dir(r.dir), t.Name, label, string(envoyrec.FormatText), raw, snap); err != nil {
			return err.Error()
		}
	}
	return ""
}

// fault performs one fault action and records its begin and end.
func (r *scenarioRun) fault(ctx context.Context, st Step) evidence.Fault {
	f := st.Fault
	if r.real != nil && (f.Target == "rls" || f.Target == "redis") {
		r.realPreFault(ctx, f)
	}
	ev := evidence.Fault{Name: st.Name, Action: f.Action, Target: f.Target, BeginNs: time.Now().UnixNano()}
	if f.Target == "backend" && r.backend != nil && (f.Action == evidence.ActionSet || f.Action == evidence.ActionClear) {
		ev.Target = backendTarget(f.Endpoints)
	}
	var window time.Duration
	if f.Action == evidence.ActionSet && f.For > 0 {
		window = time.Duration(f.For)
	}
	r.faultEvent(events.TypeFaultBegin, ev, window)
	defer func() { r.faultEvent(events.TypeFaultEnd, ev, window) }()
	var err error
	switch {
	case f.Action == "exec":
		var out []byte
		out, err = exec.CommandContext(ctx, "sh", "-c", f.Command).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
	case r.real != nil && (f.Target == "rls" || f.Target == "redis"):
		err = r.realFault(ctx, f)
	case r.gatewayRedis != nil && f.Target == "redis":
		err = r.gatewayRedisFault(ctx, f.Action)
	case f.Target == "backend" && r.backend != nil && (f.Action == evidence.ActionSet || f.Action == evidence.ActionClear):
		if f.Action == evidence.ActionClear {
			_, err = r.backend.SetFaults(f.Endpoints, r.baseline)
			break
		}
		ev.Detail = f.Faults.String()
		var prev []backend.Faults
		if prev, err = r.backend.SetFaults(f.Endpoints, *f.Faults); err == nil && f.For > 0 {
			r.windows.openWindow(r, st, prev)
		}
	case f.Target == "rls" && r.rls != nil:
		switch f.Action {
		case "stop":
			r.rls.Stop()
		case "start", "restart":
			err = r.rls.Restart()
		}
	default:
		err = fmt.Errorf("no %s to %s in this scenario", f.Target, f.Action)
	}
	ev.EndNs = time.Now().UnixNano()
	ev.OK = err == nil
	if err != nil {
		ev.Error = evidence.RedactText(err.Error()) // an exec's output may quote a URL with its password
	}
	return ev
}

func (r *scenarioRun) attack(ctx context.Context, st Step, w *evidence.Writer, onStart func(time.Time)) (*evidence.AttackSummary, error) {
	ap := st.Attack
	prefix := r.idPrefix(st)
	// The live counts classify with the scenario's rules, as analyze does
	// (the plan's rules were checked when it was loaded).
	cl, _ := evidence.NewClassifier(r.plan.Classify)
	opts := attack.Options{Targets: r.targets, Timeout: time.Duration(ap.Timeout), Name: st.Name, OnStart: onStart,
		DisableKeepAlives: ap.NoKeepAlive, Pipeline: ap.Pipeline, Progress: &attack.Progress{Classifier: cl}, CaptureHeaders: r.captureHeaders}
	if len(ap.Flows) == 0 {
		split, err := parseSplit(ap.Split)
		if err != nil {
			return nil, err
		}
		opts.IDs, opts.Split, opts.Seed, opts.Method, opts.Path = attack.IDs(ap.IDs, prefix), split, ap.Seed, ap.Method, ap.Path
		opts.Header, opts.Body, opts.Concurrency, opts.Rate = headers(nil, ap.Headers), []byte(ap.Body), ap.Concurrency, vegeta.Rate(ap.Rate)
	}
	for _, f := range ap.Flows {
		split, err := parseSplit(f.Split)
		if err != nil {
			return nil, err
		}
		opts.Flows = append(opts.Flows, attack.Flow{Name: f.Name, IDs: attack.IDs(f.ids(), prefix+"-"+slug(f.Name)), Split: split,
			Seed: f.Seed, Method: f.Method, Path: f.Path, Header: headers(ap.Headers, f.Headers), Body: []byte(f.Body),
			Rate: vegeta.Rate(f.Rate), Concurrency: f.Concurrency, DisableKeepAlives: f.NoKeepAlive})
	}
	stop := func() {}
	if r.live != nil {
		stop = r.live(attackLabel(st), opts.Progress)
	}
	defer stop()
	defer r.observeAttack(opts.Progress)()
	defer r.events.Follow(opts.Progress, events.Progress{Scenario: r.plan.Name, Repeat: r.repeat, Step: st.Name})()
	return attack.Run(ctx, opts, w)
}

// parseSplit is a plan's split ("" is even).
func parseSplit(s string) (attack.Split, error) {
	if s == "" {
		return attack.Split{Mode: attack.SplitEven}, nil
	}
	return attack.ParseSplit(s)
}

// headers merges a plan's header maps, later ones winning.
func headers(maps ...map[string]string) http.Header {
	h := http.Header{}
	for _, m := range maps {
		for k, v := range m {
			h.Set(k, v)
		}
	}
	return h
}

// External receipts: an rlbench backend's GET /_rlbench/receipts lists
// every receipt it recorded since it started, in receive order. The
// scenario's window is what it recorded after the receipts counted before
// the first step (countExternalReceipts) until the lab and the attacks
// have stopped (externalReceipts). Every receipt in the window is the
// scenario's evidence, whatever its ID: one without an ID, or with an ID
// the scenario did not send (another run's, someone else's), is judged by
// analyze as unidentified or phantom, so a run in which such requests
// reached the backend never PASSes. (Before, only the IDs with the run's
// prefix were kept, and those requests were never seen.)

// getExternalReceipts GETs the backend's receipts; the caller closes the body.
func (r *scenarioRun) getExternalReceipts(ctx context.Context) (io.ReadCloser, error) {
	u := r.plan.External.ReceiptsURL
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, errors.New(evidence.RedactText(err.Error()))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, errors.New(evidence.RedactText(err.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", evidence.RedactURL(u), resp.Status)
	}
	return resp.Body, nil
}

// countExternalReceipts counts the receipt lines the backend holds now.
func (r *scenarioRun) countExternalReceipts(ctx context.Context) (int, error) {
	body, err := r.getExternalReceipts(ctx)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n := 0
	err = evidence.ReadLines(body, evidence.RedactURL(r.plan.External.ReceiptsURL), func(int, *evidence.Receipt) error { n++; return nil })
	return n, err
}

// externalReceipts copies every receipt the backend recorded after the
// first before of them (the scenario's window) into w.
func (r *scenarioRun) externalReceipts(ctx context.Context, w *evidence.Writer, before int) error {
	body, err := r.getExternalReceipts(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	name := evidence.RedactURL(r.plan.External.ReceiptsURL)
	n := 0
	if err := evidence.ReadLines(body, name, func(_ int, rc *evidence.Receipt) error {
		n++
		if n <= before {
			return nil
		}
		return w.Write(rc)
	}); err != nil {
		return err
	}
	if n < before {
		return fmt.Errorf("%s: %d receipts, %d before the scenario: the backend restarted or lost receipts", name, n, before)
	}
	return nil
}

// backendTarget is the fault record's target for backend faults on
// endpoints: "backend" for all of them, else their names joined by ",".
func backendTarget(endpoints []int) string {
	if len(endpoints) == 0 {
		return "backend"
	}
	names := make([]string, len(endpoints))
	for i, e := range endpoints {
		names[i] = backend.EndpointName(e)
	}
	return strings.Join(names, ",")
}

// faultWindows are the timed backend fault windows (a set with for:) still
// open: each ends when its time is up or when the attack step it runs in
// ends, whichever comes first, and then writes its clear record.
type faultWindows struct {
	mu   sync.Mutex
	w    *evidence.Writer
	open []*faultWindow
}

type faultWindow struct {
	once  sync.Once
	timer *time.Timer
	end   func()
}

// openWindow starts the window of the set st, which replaced prev.
func (fw *faultWindows) openWindow(r *scenarioRun, st Step, prev []backend.Faults) {
	f := st.Fault
	win := &faultWindow{}
	win.end = func() {
		win.once.Do(func() {
			ev := evidence.Fault{Name: st.Name, Action: evidence.ActionClear, Target: backendTarget(f.Endpoints), BeginNs: time.Now().UnixNano(), OK: true}
			r.faultEvent(events.TypeFaultBegin, ev, 0)
			r.backend.RestoreFaults(f.Endpoints, prev)
			ev.EndNs = time.Now().UnixNano()
			r.faultEvent(events.TypeFaultEnd, ev, 0)
			r.writeFault(fw.w, ev)
			fmt.Fprintf(r.progress, "  fault %s: cleared\n", st.Name)
		})
	}
	fw.mu.Lock()
	fw.open = append(fw.open, win)
	win.timer = time.AfterFunc(time.Duration(f.For), win.end)
	fw.mu.Unlock()
}

// closeAll ends every open window now (those whose time is up already ended).
func (fw *faultWindows) closeAll() {
	fw.mu.Lock()
	open := fw.open
	fw.open = nil
	fw.mu.Unlock()
	for _, win := range open {
		win.timer.Stop()
		win.end()
	}
}

// attackLabel names an attack step in the progress lines: "  attack" for a
// scenario's single attack (the step plan.go names "attack"), "  attack
// NAME" for a named step.
func attackLabel(st Step) string {
	if st.Name == "" || st.Name == "attack" {
		return "  attack"
	}
	return "  attack " + st.Name
}

// harnessParts names the parts of the scenario that rlbench runs itself
// (evidence.Scenario.HarnessParts): the lab proxies (not nginx), the lab RLS
// (not the real one, nor a lab RLS given an artificial delay: its slowness is
// then the plan's) and the backend; none when the targets are external.
func (r *scenarioRun) harnessParts() []string {
	sc := r.plan
	if sc.Lab == nil {
		return nil
	}
	var parts []string
	if sc.Lab.Gateway != nil {
		parts = append(parts, GatewayName)
	}
	if sc.Lab.Nginx == nil && sc.Lab.HAProxy == nil {
		for _, t := range r.targets {
			if _, ok := r.admins[t.Name]; ok {
				parts = append(parts, t.Name)
			}
		}
	}
	if sc.Lab.RLS != nil && sc.Lab.RLS.Kind != RLSReal && sc.Lab.RLS.Delay == 0 {
		parts = append(parts, evidence.HarnessRLS)
	}
	return append(parts, evidence.HarnessBackend)
}

// faultEvent writes the fault event typ of the fault record ev (at its
// begin: without its end and outcome) to the scenario's event stream;
// window is a timed window's length (a set with for:), else 0.
func (r *scenarioRun) faultEvent(typ string, ev evidence.Fault, window time.Duration) {
	if r.events == nil {
		return
	}
	fe := &events.Fault{Scenario: r.plan.Name, Repeat: r.repeat, Name: ev.Name, Action: ev.Action, Target: ev.Target,
		BeginNs: ev.BeginNs, WindowNs: int64(window)}
	if typ == events.TypeFaultEnd {
		ok := ev.OK
		fe.EndNs, fe.OK, fe.Error = ev.EndNs, &ok, ev.Error
	}
	_ = r.events.Emit(events.Event{Type: typ, Fault: fe})
}
