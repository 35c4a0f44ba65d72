package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/model"
)

// NotInstalledReason begins the NOT_RUN reason of a real-RLS scenario when redis-server or service_cmd is missing;
// realparts' error follows, naming the binary, where it was looked for and the install command.
const NotInstalledReason = "real RLS not installed"

// WindowMargin is the least time that must remain in the current fixed window of every MINUTE-or-longer limit
// of the RLS config when a real-RLS scenario starts; otherwise the runner waits for the next window so that the
// scenario's figures are not blurred by an epoch-aligned window boundary (envoyproxy/ratelimit keys counters by
// floor(now/unit)*unit, src/limiter/cache_key.go). SECOND limits are not waited for.
const WindowMargin = 30 * time.Second

// realStopGrace is the SIGTERM→SIGKILL wait when stopping the real RLS: its gRPC GracefulStop
// (google.golang.org/grpc Server.GracefulStop) waits for calls that hang on a dead Redis, so a short bound keeps
// scenarios quick.
const realStopGrace = 1500 * time.Millisecond

// realStatsFlush is the RLS stats flush interval that realparts configures (STATS_FLUSH_INTERVAL=1s); a
// Prometheus snapshot is stable once it stayed the same for longer than that.
const realStatsFlush = time.Second

// realParts are the real Redis and envoyproxy/ratelimit of one scenario.
type realParts struct {
	redis *realparts.Redis
	rls   *realparts.RLS
	// process counts RLS starts (see evidence.RLSMetrics.Process).
	process int
	// preSnaps numbers the snapshots taken before a stop or restart of the RLS.
	preSnaps int
	// finished is set once finishReal has stopped the RLS and parsed its log.
	finished bool
}

// startRealRLS starts a private redis-server and envoyproxy/ratelimit (LOG_FORMAT=json at debug, Prometheus)
// with config, logging to rls/rls.log; it returns the RLS gRPC address or a NOT_RUN reason. Both processes are
// stopped by PID in r.cleanups. Before starting, it waits for a fresh window when less than WindowMargin remains
// in the current window of a MINUTE-or-longer limit of config.
func (r *scenarioRun) startRealRLS(ctx context.Context, config string) (addr, reason string) {
	redisBin, err1 := realparts.FindRedis()
	rlsBin, err2 := realparts.FindRLS()
	if err := errors.Join(err1, err2); err != nil {
		var msgs []string
		for _, e := range []error{err1, err2} {
			if e != nil {
				msgs = append(msgs, strings.TrimPrefix(e.Error(), "realparts: "))
			}
		}
		if errors.Is(err, realparts.ErrNotInstalled) {
			return "", NotInstalledReason + ": " + strings.Join(msgs, "; ")
		}
		return "", "real rls: " + strings.Join(msgs, "; ")
	}
	cfg, err := rlsconfig.Parse(fmt.Sprintf("plan scenario %q rls.config", r.plan.Name), []byte(config))
	if err != nil {
		return "", err.Error()
	}
	if d := WindowWait(time.Now(), configUnits(cfg), WindowMargin); d > 0 {
		fmt.Fprintf(r.progress, "  waiting %s for a fresh rate limit window (less than %s left in the current one)\n",
			d.Round(time.Millisecond), WindowMargin)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", "interrupted while waiting for a fresh rate limit window"
		case <-t.C:
		}
	}
	tmp, err := os.MkdirTemp("", "rlbench-real-rls-")
	if err != nil {
		return "", err.Error()
	}
	r.cleanups = append(r.cleanups, func() { _ = os.RemoveAll(tmp) })
	cfgDir := filepath.Join(tmp, "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		return "", err.Error()
	}
	if err := safefile.WriteFile(filepath.Join(cfgDir, "rlbench.yaml"), []byte(config), 0o644); err != nil {
		return "", err.Error()
	}
	if err := safefile.MkdirAll(r.dir, evidence.Dir(r.dir).Redis()); err != nil {
		return "", err.Error()
	}
	rp := &realParts{}
	rp.redis, err = realparts.StartRedis(ctx, realparts.Options{Bin: redisBin, Dir: evidence.Dir(r.dir).Redis()})
	if err != nil {
		return "", "real redis: " + err.Error()
	}
	r.cleanups = append(r.cleanups, func() { _ = rp.redis.Close(context.Background()) })
	rp.rls, err = realparts.StartRLS(ctx, realparts.RLSOptions{Bin: rlsBin, ConfigDir: cfgDir, RedisAddr: rp.redis.Addr(),
		LogFormat: "json", Prometheus: true, LogPath: evidence.Dir(r.dir).RLSLog(),
		WorkDir: filepath.Join(tmp, "rls"), StopGrace: realStopGrace})
	if err != nil {
		return "", "real rls: " + err.Error()
	}
	rp.process = 1
	r.cleanups = append(r.cleanups, func() { _ = rp.rls.Close(context.Background()) })
	r.real = rp
	fmt.Fprintf(r.progress, "  real redis %s (pid %d), rls %s (pid %d)\n", rp.redis.Addr(), rp.redis.PID(),
		rp.rls.GRPCAddr(), rp.rls.PID())
	return rp.rls.GRPCAddr(), ""
}

// configUnits lists the window lengths (seconds) of every limit in cfg.
func configUnits(cfg *rlsconfig.Config) []int64 {
	var out []int64
	var walk func([]*rlsconfig.Descriptor)
	walk = func(ds []*rlsconfig.Descriptor) {
		for _, d := range ds {
			if rl := d.RateLimit; rl != nil && !rl.Unlimited {
				if s := model.UnitSeconds(rl.Unit); s > 0 {
					out = append(out, s)
				}
			}
			walk(d.Descriptors)
		}
	}
	walk(cfg.Descriptors)
	return out
}

// WindowWait returns how long to wait from now so that at least margin remains in the current epoch-aligned
// window (envoyproxy/ratelimit: window start = floor(now/unit)*unit) of every unit in unitSeconds; 0 when every
// window has margin left. Units shorter than a minute are ignored: their windows are shorter than any margin.
// The wait ends 10 ms past the boundary.
func WindowWait(now time.Time, unitSeconds []int64, margin time.Duration) time.Duration {
	var wait time.Duration
	ns := now.UnixNano()
	for _, u := range unitSeconds {
		if u < 60 {
			continue
		}
		w := u * int64(time.Second)
		left := time.Duration(w - ns%w)
		if left < margin {
			wait = max(wait, left+10*time.Millisecond)
		}
	}
	return wait
}

// realFault stops, starts or restarts the scenario's real redis or rls (run.go records the evidence.Fault
// around it). Stopping or restarting the RLS first saves a metrics snapshot "pre-<fault name>", because the
// RLS's counters restart at 0 with the process. Starting a part that runs is an error; "start" of a stopped
// Redis gives an empty Redis on the same port (no persistence): counters restart in mid-window.
// realPreFault runs before a fault's begin is stamped: before a stop or
// restart of the RLS it saves the metrics snapshot "pre-<n>-<action>-rls"
// (the RLS's counters restart with the process). Between attacks it waits
// for the counters to settle; during an attack (a fault with at:) it does
// not wait, so the fault fires on time.
func (r *scenarioRun) realPreFault(ctx context.Context, f *FaultPlan) {
	rp := r.real
	if f.Target == "rls" && (f.Action == "stop" || f.Action == "restart") && rp.rls.PID() != 0 {
		_ = r.saveMetrics(ctx, rp.preLabel(f.Action), f.At == 0) // best effort: failures are inside the file
	}
}

func (r *scenarioRun) realFault(ctx context.Context, f *FaultPlan) error {
	rp := r.real
	switch f.Target {
	case "redis":
		switch f.Action {
		case "stop":
			return rp.redis.Stop(ctx)
		case "start":
			if pid := rp.redis.PID(); pid != 0 {
				return fmt.Errorf("redis is already running (pid %d)", pid)
			}
			return rp.redis.Restart(ctx)
		case "restart":
			return rp.redis.Restart(ctx)
		}
	case "rls":
		switch f.Action {
		case "stop":
			return rp.rls.Stop(ctx)
		case "start":
			if pid := rp.rls.PID(); pid != 0 {
				return fmt.Errorf("rls is already running (pid %d)", pid)
			}
			if err := rp.rls.Restart(ctx); err != nil {
				return err
			}
			rp.process++
			return nil
		case "restart":
			if err := rp.rls.Restart(ctx); err != nil {
				return err
			}
			rp.process++
			return nil
		}
	}
	return fmt.Errorf("real parts: cannot %s %s", f.Action, f.Target)
}

// preLabel names the snapshot taken before the n-th stop or restart of the RLS: "pre-<n>-<action>-rls".
func (rp *realParts) preLabel(action string) string {
	rp.preSnaps++
	return fmt.Sprintf("pre-%d-%s-rls", rp.preSnaps, action)
}

// snapshotReal saves the RLS's /metrics as rls/metrics.<label>.prom and .json. An RLS that is down or a page
// that does not parse is recorded in the JSON's error field and never fails the scenario; only an unwritable
// directory returns a reason. Snapshots other than "before" wait (bounded) for the counters to be stable.
func (r *scenarioRun) snapshotReal(ctx context.Context, label string) string {
	if r.real.finished {
		return ""
	}
	if err := r.saveMetrics(ctx, label, label != "before"); err != nil {
		return err.Error()
	}
	return ""
}

// saveMetrics scrapes and writes one snapshot; the error is only about writing files.
func (r *scenarioRun) saveMetrics(ctx context.Context, label string, waitStable bool) error {
	rp := r.real
	m := evidence.RLSMetrics{Schema: evidence.RLSMetricsSchema, Label: label, URL: rp.rls.MetricsURL(), PID: rp.rls.PID(), Process: rp.process}
	d := evidence.Dir(r.dir)
	if m.PID == 0 {
		m.Error = "rls is not running"
		return evidence.WriteRLSMetrics(d, &m, nil)
	}
	raw, snap, at, stable, err := scrapeStable(ctx, m.URL, waitStable)
	m.TimeNs, m.Stable = at.UnixNano(), stable
	if err != nil {
		m.Error = err.Error()
	} else {
		m.Prometheus, m.Counters = &snap.RLSPrometheus, snap.RLSCounters()
	}
	if m.Error != "" {
		fmt.Fprintf(r.progress, "  rls metrics %s: %s\n", label, m.Error)
	}
	return evidence.WriteRLSMetrics(d, &m, raw)
}

// scrapeStable fetches url; with waitStable it polls every 200 ms until the RLS-level counters (per-rule
// counters, errors, requests, response-time counts) stayed the same for more than one stats flush interval, or
// 5 s passed (stable false). It returns the last scrape, its time and whether it was stable.
func scrapeStable(ctx context.Context, url string, waitStable bool) ([]byte, *rls.PromSnapshot, time.Time, bool, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(5 * time.Second)
	var since time.Time
	var last string
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		at := time.Now()
		raw, snap, err := rls.Fetch(ctx, client, url)
		if err != nil {
			return raw, nil, at, false, err
		}
		if !waitStable {
			return raw, snap, at, false, nil
		}
		fp := fingerprint(snap)
		if fp != last {
			last, since = fp, at
		} else if at.Sub(since) > realStatsFlush+100*time.Millisecond {
			return raw, snap, at, true, nil
		}
		if at.After(deadline) {
			return raw, snap, at, false, nil
		}
		select {
		case <-ctx.Done():
			return raw, snap, at, false, nil
		case <-tick.C:
		}
	}
}

// fingerprint is the part of a snapshot that changes when the RLS decides or fails a call.
func fingerprint(s *rls.PromSnapshot) string {
	b, _ := json.Marshal(struct {
		C *evidence.RLSCounters
		R map[string]evidence.RLSHistogram
	}{s.RLSCounters(), s.ResponseTime})
	return string(b)
}

// finishReal stops the RLS (so its log is complete; calls hung on a dead Redis are cut by SIGKILL after a short
// grace), parses rls/rls.log with collect/rls.ParseLog and writes rls/decisions.jsonl (one evidence.Decision per
// decision, log order, codes OK, OVER_LIMIT, ERROR or UNKNOWN with the error text).
func (r *scenarioRun) finishReal(ctx context.Context) error {
	rp := r.real
	rp.finished = true
	stopErr := rp.rls.Stop(context.WithoutCancel(ctx))
	lp := evidence.Dir(r.dir).RLSLog()
	f, err := os.Open(lp)
	if err != nil {
		return err
	}
	defer f.Close()
	lg, err := rls.ParseLog(f, lp)
	if err != nil {
		return err
	}
	if err := evidence.Dir(r.dir).MkdirFor(evidence.Dir(r.dir).Decisions()); err != nil {
		return err
	}
	if err := evidence.WriteLines(evidence.Dir(r.dir).Decisions(), lg.EvidenceDecisions()); err != nil {
		return err
	}
	// The parsed log too: analysis reads its configuration loads (a limit
	// changed mid-window) and its hung lookups (the stat identity).
	if err := evidence.WriteJSONFile(evidence.Dir(r.dir).RLSParsedLog(), lg); err != nil {
		return err
	}
	fmt.Fprintf(r.progress, "  rls log: %d decisions %v, %d error lines, %d hung lookups\n", len(lg.Decisions),
		lg.CountCodes(), len(lg.Errors), len(lg.PendingLookups))
	if stopErr != nil {
		return fmt.Errorf("stop rls: %w", stopErr)
	}
	return nil
}
