//go:build browser

package cli

// The real-browser test of the HTML report (scripts/browser-test.sh, a CI
// step of .ci/run): go test -tags browser -run TestBrowser ./internal/cli/.
// It needs Debian's chromium (/usr/bin/chromium, or RLBENCH_CHROMIUM); it
// skips without one unless RLBENCH_REQUIRE_BROWSER=1. Its outputs (the
// reports, the JSON and the screenshots) go to RLBENCH_BROWSER_OUT, or to a
// temporary directory.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// browser starts headless Chromium with the flags this machine needs (no
// background networking: the machine's closed network refuses it) and a new
// empty profile, and returns a tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := os.Getenv("RLBENCH_CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exe); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_BROWSER") == "1" {
			t.Fatalf("RLBENCH_REQUIRE_BROWSER=1 but no Chromium: %v (scripts/browser-test.sh installs Debian's chromium)", err)
		}
		t.Skipf("no Chromium at %s (set RLBENCH_CHROMIUM, or run scripts/browser-test.sh)", exe)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1800),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx); err != nil { // start the browser
		t.Fatalf("starting %s: %v", exe, err)
	}
	return ctx
}

func outDir(t *testing.T) string {
	if d := os.Getenv("RLBENCH_BROWSER_OUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// consoleLog collects the page's console messages (console API calls,
// uncaught exceptions, browser log entries) from before the navigation on.
type consoleLog struct {
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
	done chan struct{}
}

func watchConsole(ctx context.Context) (*consoleLog, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	c := &consoleLog{done: make(chan struct{})}
	msgs := chromedp.Console(ctx)
	go func() {
		defer close(c.done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
		}
	}()
	return c, cancel
}

// errors returns the error-level messages and exceptions.
func (c *consoleLog) errors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if m.Type == chromedp.ConsoleError || m.IsException() {
			out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
		}
	}
	return out
}

// domView is what the page shows, read through the DOM.
type domView struct {
	Overall     string `json:"overall"`
	Ready       string `json:"ready"`
	Charts      int    `json:"charts"`
	Failures    int    `json:"failures"`
	FaultLabels int    `json:"faultLabels"`
	ReadyAtMs   int    `json:"readyAtMs"`
	Summary     []struct {
		Anchor string         `json:"anchor"`
		Status string         `json:"status"`
		Counts map[string]int `json:"counts"`
	} `json:"summary"`
	Scenarios []struct {
		ID      string         `json:"id"`
		Name    string         `json:"name"`
		Repeat  string         `json:"repeat"`
		Status  string         `json:"status"`
		Badge   string         `json:"badge"`
		Reasons []string       `json:"reasons"`
		Total   map[string]int `json:"total"`
		Targets []struct {
			Target string         `json:"target"`
			Counts map[string]int `json:"counts"`
		} `json:"targets"`
		Faults []struct {
			Name    string         `json:"name"`
			Target  string         `json:"target"`
			BeginNs string         `json:"beginNs"`
			EndNs   string         `json:"endNs"`
			Counts  map[string]int `json:"counts"`
		} `json:"faults"`
		Labels []struct {
			Name    string `json:"name"`
			Target  string `json:"target"`
			BeginNs string `json:"beginNs"`
			Text    string `json:"text"`
			Visible bool   `json:"visible"`
		} `json:"labels"`
		TimelineCharts int `json:"timelineCharts"`
		Canvases       int `json:"canvases"`
	} `json:"scenarios"`
}

const readDOM = `(() => {
  const counts = (root, sel) => Object.fromEntries([...root.querySelectorAll(sel + ' [data-k]')].map(c => [c.dataset.k, Number(c.textContent)]));
  const b = document.body.dataset;
  return {
    overall: document.getElementById('overall').dataset.status,
    ready: b.ready, charts: +b.charts, failures: +b.failures, faultLabels: +b.faultLabels, readyAtMs: +b.readyAtMs,
    summary: [...document.querySelectorAll('tr.summary-row')].map(r => ({anchor: r.dataset.anchor, status: r.dataset.status,
      counts: Object.fromEntries([...r.querySelectorAll('[data-k]')].map(c => [c.dataset.k, Number(c.textContent)]))})),
    scenarios: [...document.querySelectorAll('section.scenario')].map(s => ({
      id: s.id, name: s.dataset.name, repeat: s.dataset.repeat, status: s.dataset.status,
      badge: s.querySelector('h2 .badge').textContent,
      reasons: [...s.querySelectorAll('ul.reasons li')].map(li => li.textContent),
      total: counts(s, 'tr.total-row'),
      targets: [...s.querySelectorAll('tr.target-row')].map(r => ({target: r.dataset.target,
        counts: Object.fromEntries([...r.querySelectorAll('[data-k]')].map(c => [c.dataset.k, Number(c.textContent)]))})),
      faults: [...s.querySelectorAll('tr.fault-window')].map(r => ({name: r.dataset.name, target: r.dataset.target,
        beginNs: r.dataset.beginNs, endNs: r.dataset.endNs,
        counts: Object.fromEntries([...r.querySelectorAll('[data-k]')].map(c => [c.dataset.k, Number(c.textContent)]))})),
      labels: [...s.querySelectorAll('.timeline-target .fw-label')].map(l => ({name: l.dataset.name, target: l.dataset.target,
        beginNs: l.dataset.beginNs, text: l.textContent, visible: l.offsetParent !== null && getComputedStyle(l).display !== 'none'})),
      timelineCharts: s.querySelectorAll('.timeline-target').length,
      canvases: s.querySelectorAll('.charts canvas').length,
    })),
  };
})()`

// openReport opens the HTML file, waits until its charts are drawn, and
// returns what the DOM shows and the console errors.
func openReport(t *testing.T, ctx context.Context, html string) (*domView, []string) {
	t.Helper()
	console, stop := watchConsole(ctx)
	abs, err := filepath.Abs(html)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+abs)); err != nil {
		t.Fatalf("open %s: %v", abs, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body && document.body.dataset.ready === "1"`)); err != nil {
		t.Fatalf("%s never finished drawing: %v (console: %v)", abs, err, console.errors())
	}
	view, err := chromedp.Run(ctx, chromedp.Evaluate[domView](readDOM))
	if err != nil {
		t.Fatalf("reading the DOM: %v", err)
	}
	stop()
	<-console.done
	return &view, console.errors()
}

func screenshot(t *testing.T, ctx context.Context, a chromedp.Action[[]byte], path string) {
	t.Helper()
	png, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// TestBrowserE06Report runs examples/e06/plan.yaml, renders its HTML report
// and opens it in headless Chromium: no console error, every chart drawn,
// and the verdicts, counts and fault windows the DOM shows equal the JSON
// report's. Screenshots are written beside the report (e06.png: the whole
// page; e06-top.png: the first 1280×1800 px, docs/report-e06.png).
func TestBrowserE06Report(t *testing.T) {
	ctx := browser(t)
	out := outDir(t)
	root := filepath.Join(out, "evidence")
	var stdout, stderr bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	if code := Main([]string{"run", "--root", root, "-q", "--format", "json", "../../examples/e06/plan.yaml"}, ios); code != ExitOK && code != ExitFail && code != ExitNotRun {
		t.Fatalf("rlbench run e06: exit %d: %s", code, stderr.String())
	}
	jsonPath := filepath.Join(out, "e06.json")
	if err := os.WriteFile(jsonPath, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the JSON report: %v", err)
	}
	html := filepath.Join(out, "e06.html")
	stdout.Reset()
	if code := Main([]string{"report", evidence.Dir(root).Latest(), "--html", html, "--format", "markdown"}, ios); code != ExitOK && code != ExitFail && code != ExitNotRun {
		t.Fatalf("rlbench report: exit %d: %s", code, stderr.String())
	}

	view, errs := openReport(t, ctx, html)
	if len(errs) != 0 {
		t.Errorf("console errors: %q", errs)
	}
	screenshot(t, ctx, chromedp.FullScreenshot(100), filepath.Join(out, "e06.png"))
	screenshot(t, ctx, chromedp.CaptureScreenshot(), filepath.Join(out, "e06-top.png"))
	t.Logf("e06 report: %s, drawn %d ms after navigation, %d charts", html, view.ReadyAtMs, view.Charts)

	if view.Overall != rep.Status {
		t.Errorf("page verdict %s, JSON %s", view.Overall, rep.Status)
	}
	if view.Failures != 0 {
		t.Errorf("%d scenarios' charts failed", view.Failures)
	}
	if len(view.Scenarios) != len(rep.Scenarios) || len(view.Summary) != len(rep.Scenarios) {
		t.Fatalf("page shows %d scenarios (%d in the summary), JSON has %d", len(view.Scenarios), len(view.Summary), len(rep.Scenarios))
	}
	classes := func(c report.Classes) map[string]int {
		return map[string]int{"sent": c.Sent, "admitted": c.N[evidence.ClassAdmitted], "local_429": c.N[evidence.ClassLocal429], "global_429": c.N[evidence.ClassGlobal429],
			"rls_error": c.N[evidence.ClassRLSError], "other_4xx": c.N[evidence.ClassOther4xx], "other_5xx": c.N[evidence.ClassOther5xx], "other": c.N[evidence.ClassOther], "no_response": c.N[evidence.ClassNoResponse]}
	}
	same := func(what string, got, want map[string]int) {
		t.Helper()
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w {
				t.Errorf("%s: %s shown %d (present %v), JSON %d", what, k, got[k], ok, w)
			}
		}
	}
	wantLabels := 0
	for i, s := range rep.Scenarios {
		v := view.Scenarios[i]
		name := s.Name
		if v.Name != s.Name || v.Status != s.Status || v.Badge != s.Status || v.Repeat != strconv.Itoa(s.Repeat) {
			t.Errorf("scenario %d: page %q %s/%s #%s, JSON %q %s #%d", i, v.Name, v.Status, v.Badge, v.Repeat, s.Name, s.Status, s.Repeat)
		}
		if strings.Join(v.Reasons, "\n") != strings.Join(s.Reasons, "\n") {
			t.Errorf("%s: reasons shown %q, JSON %q", name, v.Reasons, s.Reasons)
		}
		if sum := view.Summary[i]; sum.Anchor != v.ID || sum.Status != s.Status || sum.Counts["sent"] != s.Totals.Sent ||
			sum.Counts["admitted"] != s.Totals.N[evidence.ClassAdmitted] || sum.Counts["receipts"] != s.Receipts.Total {
			t.Errorf("%s: summary row %+v", name, sum)
		}
		tot := classes(s.Totals)
		tot["receipts"] = s.Receipts.Total
		same(name+" totals", v.Total, tot)
		if len(v.Targets) != len(s.Targets) {
			t.Errorf("%s: %d targets shown, JSON %d", name, len(v.Targets), len(s.Targets))
			continue
		}
		for k, tr := range s.Targets {
			want := classes(tr.Classes)
			want["receipts"] = tr.Receipts
			if v.Targets[k].Target != tr.Target {
				t.Errorf("%s: target %q shown, JSON %q", name, v.Targets[k].Target, tr.Target)
			}
			same(name+" "+tr.Target, v.Targets[k].Counts, want)
		}
		if len(v.Faults) != len(s.FaultWindows) {
			t.Errorf("%s: %d fault windows shown, JSON %d", name, len(v.Faults), len(s.FaultWindows))
			continue
		}
		for k, fw := range s.FaultWindows {
			f := v.Faults[k]
			if f.Name != fw.Name || f.Target != fw.Target || f.BeginNs != strconv.FormatInt(fw.BeginNs, 10) || f.EndNs != strconv.FormatInt(fw.EndNs, 10) {
				t.Errorf("%s: fault window shown %+v, JSON %+v", name, f, fw)
			}
			same(name+" "+fw.Name, f.Counts, map[string]int{"sent": fw.Inside.Sent, "admitted": fw.Inside.N[evidence.ClassAdmitted], "rls_error": fw.Inside.N[evidence.ClassRLSError], "receipts": fw.Receipts})
		}
		// Each target's timeline labels every fault window, drawn by the page's script.
		if v.TimelineCharts != len(s.Targets) || v.Canvases == 0 {
			t.Errorf("%s: %d timeline charts (%d canvases), want one per target (%d)", name, v.TimelineCharts, v.Canvases, len(s.Targets))
		}
		if len(v.Labels) != len(s.Targets)*len(s.FaultWindows) {
			t.Errorf("%s: %d fault labels on the timelines, want %d", name, len(v.Labels), len(s.Targets)*len(s.FaultWindows))
		}
		for k, l := range v.Labels {
			fw := s.FaultWindows[k%max(len(s.FaultWindows), 1)]
			if l.Name != fw.Name || l.Target != fw.Target || l.BeginNs != strconv.FormatInt(fw.BeginNs, 10) || !strings.HasPrefix(l.Text, fw.Name+" ("+fw.Target+")") || !l.Visible {
				t.Errorf("%s: fault label %+v, window %s %s", name, l, fw.Name, fw.Target)
			}
		}
		wantLabels += len(s.FaultWindows) * len(s.Targets)
	}
	if wantLabels == 0 {
		t.Error("e06 has no fault window: the check of the labels checked nothing")
	}
}

// TestBrowserMillionRequests renders the report of 1,000,000 requests
// (built in memory: two proxies' local buckets of 5 per second over 100 s,
// an RLS stop) and opens it: under 5 MB, drawn within 2 s of navigation,
// no console error.
func TestBrowserMillionRequests(t *testing.T) {
	ctx := browser(t)
	out := outDir(t)
	const n = 1_000_000
	ev := &evidence.ScenarioEvidence{Dir: ".", Path: "million", HasScenario: true, HasRequests: true,
		Scenario: evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "a million requests",
			Limits: []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Second)}}},
		Attack: &evidence.Attack{Complete: true, Sent: n}, Faults: []evidence.Fault{}, Decisions: []evidence.Decision{},
		Stats: []evidence.ProxySnapshots{}, AccessLogs: []evidence.AccessLog{}, RLSMetrics: []evidence.RLSMetrics{}, Problems: []evidence.Problem{}}
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC).UnixNano()
	step := int64(100*time.Second) / n
	tokens, fill := map[string]int{}, map[string]int64{}
	for i := 0; i < n; i++ {
		target := []string{"proxy-a", "proxy-b"}[i%2]
		sent := t0 + int64(i)*step
		if sent-fill[target] >= int64(time.Second) {
			tokens[target], fill[target] = 5, sent
		}
		r := evidence.Request{ID: fmt.Sprintf("m-%07d", i), Target: target, SentNs: sent, LatencyNs: int64(200_000 + (i*7919)%3_000_000)}
		if tokens[target] > 0 {
			tokens[target]--
			r.Code = 200
		} else {
			r.Code, r.Body = 429, "local_rate_limited"
		}
		ev.Requests.Add(&r)
		if r.Code == 200 {
			id := r.ID
			ev.Receipts.Add(&ev.Requests, &evidence.Receipt{ID: &id, RecvNs: sent + 50_000})
		}
	}
	ev.Faults = append(ev.Faults, evidence.Fault{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0 + int64(40*time.Second), EndNs: t0 + int64(40*time.Second), OK: true},
		evidence.Fault{Name: "start rls", Action: evidence.ActionStart, Target: "rls", BeginNs: t0 + int64(55*time.Second), EndNs: t0 + int64(56*time.Second), OK: true})
	rep := analyze.Judge(&evidence.Bundle{Dir: "million", Scenarios: []*evidence.ScenarioEvidence{ev}}, analyze.Options{Series: true})
	html := filepath.Join(out, "million.html")
	f, err := os.Create(html)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(f, rep); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(html)
	if err != nil {
		t.Fatal(err)
	}
	view, errs := openReport(t, ctx, html)
	screenshot(t, ctx, chromedp.CaptureScreenshot(), filepath.Join(out, "million-top.png"))
	t.Logf("1,000,000-request report: %d bytes, drawn %d ms after navigation (%d charts)", st.Size(), view.ReadyAtMs, view.Charts)
	if st.Size() >= 5<<20 {
		t.Errorf("%d bytes, want < 5 MiB", st.Size())
	}
	if len(errs) != 0 {
		t.Errorf("console errors: %q", errs)
	}
	if view.ReadyAtMs <= 0 || view.ReadyAtMs >= 2000 {
		t.Errorf("drawn %d ms after navigation, want under 2000", view.ReadyAtMs)
	}
	if view.Failures != 0 || view.Charts < 5 || len(view.Scenarios) != 1 || view.Scenarios[0].Total["sent"] != n {
		t.Errorf("page: %d charts, %d failures, scenarios %+v", view.Charts, view.Failures, len(view.Scenarios))
	}
	if len(view.Scenarios[0].Labels) != 2 {
		t.Errorf("fault labels %+v", view.Scenarios[0].Labels)
	}
}

// TestBrowserSeesConsoleErrors: the console check can fail: a page that
// logs an error, throws, and misses a file is reported three times.
func TestBrowserSeesConsoleErrors(t *testing.T) {
	ctx := browser(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	body := `<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body><img src="missing.png">
<script>console.error("logged"); setTimeout(function () { document.body.dataset.ready = "1"; }, 50); throw new Error("boom");</script></body></html>`
	if err := os.WriteFile(page, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	console, stop := watchConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body && document.body.dataset.ready === "1"`)); err != nil {
		t.Fatal(err)
	}
	// The missing image's log entry can come after the load: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for len(console.errors()) < 3 && time.Now().Before(deadline) {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`true`)); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	<-console.done
	errs := console.errors()
	joined := strings.Join(errs, "\n")
	if len(errs) < 3 || !strings.Contains(joined, "logged") || !strings.Contains(joined, "boom") || !strings.Contains(joined, "missing.png") {
		t.Fatalf("console errors seen: %q", errs)
	}
}
