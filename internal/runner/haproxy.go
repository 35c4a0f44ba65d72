package runner

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// HAProxyNotInstalledReason is the NOT_RUN reason of a scenario with lab.haproxy when no haproxy binary is found.
const HAProxyNotInstalledReason = "haproxy not installed: run scripts/install-real-parts.sh (Debian package haproxy)"

// HAProxyPlan is lab.haproxy: private HAProxy processes (internal/realparts StartHAProxy: their own rendered
// config, loopback port and log) in front of the lab backend's endpoints, in place of the lab proxies, each with a
// stick table that limits requests: `stick-table ... store http_req_rate(<period>)`, `http-request track-sc0 <key>`
// and `http-request deny deny_status <deny_status> if { sc_http_req_rate(0) gt <limit> }`
// (https://docs.haproxy.org/2.6/configuration.html). Each instance is an attack target (haproxy-a, haproxy-b, ...)
// with its own table. The parameters become both the config and the limiter model (decl.HAProxyStickTable: a
// sliding counter with HAProxy's freq_ctr arithmetic).
type HAProxyPlan struct {
	// Instances is the number of HAProxy processes; default 1.
	Instances int `json:"instances,omitempty"`
	// Limit is the largest sc_http_req_rate(0) admitted (the request itself counted): at most Limit requests per
	// Period.
	Limit int `json:"limit"`
	// Period is http_req_rate's period, whole milliseconds ("1s", "500ms").
	Period proxy.Duration `json:"period"`
	// Key is what track-sc0 tracks: "src" (the default, the client's address: every client of the lab is
	// 127.0.0.1, so one counter per instance) or "header:<name>" (the header's value; requests without it are
	// not limited).
	Key string `json:"key,omitempty"`
	// DenyStatus is the deny rule's status; default 429.
	DenyStatus int `json:"deny_status,omitempty"`
	// Size is the stick table's size ("100k", the default).
	Size string `json:"size,omitempty"`
	// Expire is how long an idle entry lives; default twice the period (at least that).
	Expire proxy.Duration `json:"expire,omitempty"`
}

// HAProxyName returns the name of the i-th HAProxy instance (0-based): haproxy-a, haproxy-b, ...
func HAProxyName(i int) string { return fmt.Sprintf("haproxy-%c", 'a'+i) }

// denyStatus is the deny rule's status.
func (h *HAProxyPlan) denyStatus() int {
	if h.DenyStatus == 0 {
		return 429
	}
	return h.DenyStatus
}

// config renders the plan as the realparts config of one instance in front of the backend endpoints (host:port).
func (h *HAProxyPlan) config(servers []string) realparts.HAProxyConfig {
	c := realparts.HAProxyConfig{Limit: h.Limit, Period: time.Duration(h.Period), KeyType: realparts.HAProxyKeyIP,
		Size: h.Size, Expire: time.Duration(h.Expire), DenyStatus: h.DenyStatus, Servers: servers}
	if name, ok := strings.CutPrefix(h.Key, "header:"); ok {
		c.KeyType, c.Header = realparts.HAProxyKeyString, name
	}
	return c
}

// validateHAProxy checks lab.haproxy when the plan is loaded; field is the failing key below lab ("haproxy.limit").
func (lp *LabPlan) validateHAProxy() (field string, err error) {
	h := lp.HAProxy
	if lp.Proxies > 0 || lp.Local != nil || lp.Global != nil || lp.RLS != nil || lp.Proxy != nil || lp.Cluster != nil || lp.Nginx != nil {
		return "haproxy", errors.New("lab.haproxy replaces the lab proxies: leave out proxies, local, global, rls, proxy, cluster and nginx")
	}
	if h.Instances < 0 || h.Instances > maxNginx {
		return "haproxy.instances", fmt.Errorf("lab.haproxy.instances %d: want 1..%d", h.Instances, maxNginx)
	}
	if h.Limit < 1 {
		return "haproxy.limit", fmt.Errorf("lab.haproxy.limit %d: want at least 1 (requests per period)", h.Limit)
	}
	if p := time.Duration(h.Period); p < time.Millisecond || p%time.Millisecond != 0 {
		return "haproxy.period", fmt.Errorf("lab.haproxy.period %v: want a positive whole number of milliseconds (HAProxy counts in ms), e.g. 1s", p)
	}
	// HAProxy's timers hold at most 2147483647 ms (haproxy -c: "timer
	// overflow"); the table's expire is at least twice the period.
	const maxHAProxyTimer = 2147483647 * time.Millisecond
	if p := time.Duration(h.Period); p > maxHAProxyTimer/2 {
		return "haproxy.period", fmt.Errorf("lab.haproxy.period %v: want at most %v (the stick table's expire, twice the period, must fit HAProxy's timers of at most 2147483647 ms)", p, maxHAProxyTimer/2)
	}
	if e := time.Duration(h.Expire); e > maxHAProxyTimer {
		return "haproxy.expire", fmt.Errorf("lab.haproxy.expire %v: want at most %v (HAProxy's timers hold at most 2147483647 ms)", e, maxHAProxyTimer)
	}
	if h.Key != "" && h.Key != "src" {
		name, ok := strings.CutPrefix(h.Key, "header:")
		if !ok || name == "" {
			return "haproxy.key", fmt.Errorf("lab.haproxy.key %q: want src or header:<name>", h.Key)
		}
	}
	if s := h.DenyStatus; s != 0 && (s < 200 || s > 599) {
		return "haproxy.deny_status", fmt.Errorf("lab.haproxy.deny_status %d: want 200..599", s)
	}
	if e := time.Duration(h.Expire); e != 0 && (e%time.Millisecond != 0 || e < 2*time.Duration(h.Period)) {
		return "haproxy.expire", fmt.Errorf("lab.haproxy.expire %v: want whole milliseconds, at least twice the period (%v): an entry that expires sooner forgets the previous period the rate still weighs",
			e, time.Duration(h.Period))
	}
	if err := h.config([]string{"127.0.0.1:1"}).Validate(); err != nil {
		field := "haproxy"
		switch {
		case strings.Contains(err.Error(), "HAProxyConfig.Header"):
			field = "haproxy.key"
		case strings.Contains(err.Error(), "HAProxyConfig.Size"):
			field = "haproxy.size"
		}
		return field, fmt.Errorf("lab.haproxy: %w", err)
	}
	if _, err := h.modelSpec(); err != nil {
		return "haproxy", fmt.Errorf("lab.haproxy: %w", err)
	}
	return "", nil
}

// modelSpec is the stick table as a limiter model (decl.HAProxyStickTable), one counter per instance; nil for a
// header key (the model would need each request's key).
func (h *HAProxyPlan) modelSpec() (*model.Spec, error) {
	if h.Key != "" && h.Key != "src" {
		return nil, nil
	}
	s, err := decl.HAProxyStickTable{Limit: h.Limit, Period: time.Duration(h.Period)}.Spec()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// haproxyClassify is the classification rule of HAProxy's deny: its status with the limiter header the rule adds
// (realparts.HAProxyLimiterHeader) is the proxy's own limiter, local_429.
func (h *HAProxyPlan) haproxyClassify() evidence.ClassRule {
	s := h.denyStatus()
	return evidence.ClassRule{Status: evidence.Range{Min: s, Max: s}, Header: realparts.HAProxyLimiterHeader,
		Value: realparts.HAProxyLimiterValue, Class: evidence.ClassLocal429.String()}
}

// labHAProxy is one running HAProxy instance of a scenario.
type labHAProxy struct {
	name string
	h    *realparts.HAProxy
}

// startHAProxy starts lab.haproxy's instances in front of the lab backend's endpoints and makes them the
// scenario's targets. It returns a NOT_RUN reason or "". Each instance is stopped (by PID) and its directory
// removed in r.cleanups; finishHAProxy saves its evidence first.
func (r *scenarioRun) startHAProxy(ctx context.Context) string {
	hp := r.plan.Lab.HAProxy
	bin, err := realparts.FindHAProxy()
	if err != nil {
		if errors.Is(err, realparts.ErrNotInstalled) {
			return fmt.Sprintf("%s, or set %s (%s)", HAProxyNotInstalledReason, realparts.EnvHAProxyBin, realparts.MissingDetail(err))
		}
		return "haproxy: " + err.Error()
	}
	var servers []string
	for _, ep := range r.backend.Endpoints() {
		u, err := url.Parse(ep.URL)
		if err != nil {
			return fmt.Sprintf("backend endpoint %s: %v", ep.Name, err)
		}
		servers = append(servers, u.Host)
	}
	cfg := hp.config(servers)
	for i := range max(hp.Instances, 1) {
		h, err := realparts.StartHAProxy(ctx, realparts.HAProxyOptions{Bin: bin, Config: cfg})
		if err != nil {
			return fmt.Sprintf("haproxy %s: %v", HAProxyName(i), err)
		}
		lh := &labHAProxy{name: HAProxyName(i), h: h}
		r.cleanups = append(r.cleanups, func() { _ = h.Close(context.Background()) })
		r.haproxy = append(r.haproxy, lh)
		r.targets = append(r.targets, attack.Target{Name: lh.name, URL: h.URL()})
		fmt.Fprintf(r.progress, "  haproxy %s %s (pid %d, %s)\n", lh.name, h.URL(), h.PID(), h.Version())
	}
	r.captureHeaders = append(append([]string{}, attack.DefaultCaptureHeaders...), strings.ToLower(realparts.HAProxyLimiterHeader))
	r.classify = append(r.classify, hp.haproxyClassify())
	if spec, err := hp.modelSpec(); err == nil && spec != nil {
		for _, lh := range r.haproxy {
			s := *spec
			r.limiters = append(r.limiters, evidence.Limiter{Name: lh.name + " stick table", Stage: evidence.StageLocal, Targets: []string{lh.name},
				Key: evidence.KeyTarget, Model: &s})
		}
	}
	return ""
}

// finishHAProxy stops every HAProxy instance and saves its evidence: the rendered haproxy.cfg, its log (raw and
// parsed) and its standard error.
func (r *scenarioRun) finishHAProxy(ctx context.Context) error {
	var errs []error
	d := evidence.Dir(r.dir)
	for _, lh := range r.haproxy {
		if err := lh.h.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: stop: %w", lh.name, err))
		}
		if err := evidence.WriteHAProxyFile(d, lh.name, evidence.HAProxyConfFile, lh.h.Conf()); err != nil {
			errs = append(errs, err)
		}
		if b, err := os.ReadFile(lh.h.StderrPath()); err == nil {
			if err := evidence.WriteHAProxyFile(d, lh.name, evidence.HAProxyStderrFile, b); err != nil {
				errs = append(errs, err)
			}
		}
		f, err := os.Open(lh.h.LogPath())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", lh.name, err))
			continue
		}
		if _, err := evidence.WriteHAProxyLog(d, lh.name, f.Name(), f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", lh.name, err))
		}
		f.Close()
	}
	return errors.Join(errs...)
}
