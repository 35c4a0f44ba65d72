package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rlbench/rlbench/attack"
	collectnginx "github.com/rlbench/rlbench/collect/nginx"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/model/decl"
)

// NginxNotInstalledReason is the NOT_RUN reason of a scenario with
// lab.nginx when no nginx binary is found.
const NginxNotInstalledReason = "nginx not installed: run scripts/install-real-parts.sh"

// NginxPlan is lab.nginx: private nginx processes (internal/realparts
// StartNginx: their own rendered config, prefix, pid file and loopback
// ports) in front of the lab backend's endpoints, in place of the lab
// proxies. Each instance is an attack target (nginx-a, nginx-b, ...) with
// its own zones (shared memory is per instance). The limit_req zone is
// given by rate (with burst, nodelay or delay, key and size) or by zones;
// without either nginx only proxies. The names are nginx's directives
// (https://nginx.org/en/docs/http/ngx_http_limit_req_module.html,
// https://nginx.org/en/docs/http/ngx_http_proxy_module.html).
type NginxPlan struct {
	// Instances is the number of nginx processes; default 1.
	Instances int `json:"instances,omitempty"`
	// Rate is limit_req_zone rate= of one zone named "rl" ("100r/s", "30r/m").
	Rate string `json:"rate,omitempty"`
	// Burst is limit_req burst=.
	Burst int `json:"burst,omitempty"`
	// NoDelay is limit_req nodelay: the burst is forwarded at once.
	NoDelay bool `json:"nodelay,omitempty"`
	// Delay is limit_req delay=N: N+1 forwarded at once, the rest of the burst delayed.
	Delay int `json:"delay,omitempty"`
	// Key is the zone's key; default $binary_remote_addr (every client of
	// the lab is 127.0.0.1: one key per instance).
	Key string `json:"key,omitempty"`
	// Size is the zone's shared memory size; default 1m.
	Size string `json:"size,omitempty"`
	// Zones are several limit_req zones, each with its own limit_req, in
	// order (instead of rate, burst, nodelay, delay, key and size).
	Zones []NginxZonePlan `json:"zones,omitempty"`
	// LimitReqStatus is limit_req_status (400..599); default nginx's 503.
	LimitReqStatus int `json:"limit_req_status,omitempty"`
	// LimitReqDryRun is limit_req_dry_run on: decisions logged, nothing rejected or delayed.
	LimitReqDryRun bool `json:"limit_req_dry_run,omitempty"`
	// LimitReqLogLevel is limit_req_log_level (info, notice, warn, error).
	LimitReqLogLevel string `json:"limit_req_log_level,omitempty"`
	// ProxyNextUpstream are proxy_next_upstream's conditions (error, timeout,
	// http_500, ...); default nginx's "error timeout".
	ProxyNextUpstream []string `json:"proxy_next_upstream,omitempty"`
	// ProxyNextUpstreamTries is proxy_next_upstream_tries; 0: every server.
	ProxyNextUpstreamTries int `json:"proxy_next_upstream_tries,omitempty"`
	// ProxyNextUpstreamTimeout is proxy_next_upstream_timeout.
	ProxyNextUpstreamTimeout proxy.Duration `json:"proxy_next_upstream_timeout,omitempty"`
	// ProxyConnectTimeout, ProxyReadTimeout and ProxySendTimeout are nginx's
	// proxy_*_timeout; default 60s each.
	ProxyConnectTimeout proxy.Duration `json:"proxy_connect_timeout,omitempty"`
	ProxyReadTimeout    proxy.Duration `json:"proxy_read_timeout,omitempty"`
	ProxySendTimeout    proxy.Duration `json:"proxy_send_timeout,omitempty"`
	// MaxFails is every upstream server's max_fails= (nginx's default 1: a
	// failed try takes the server out for fail_timeout; 0 never does).
	MaxFails *int `json:"max_fails,omitempty"`
	// FailTimeout is every upstream server's fail_timeout= (default 10s).
	FailTimeout proxy.Duration `json:"fail_timeout,omitempty"`
	// WorkerProcesses is worker_processes; default 1 (one event loop, so
	// decisions are made in arrival order and zones are updated atomically).
	WorkerProcesses int `json:"worker_processes,omitempty"`
	// WorkerPriority is worker_priority, the workers' nice value (-20..20;
	// default unset, 0): negative gives nginx the CPU before the senders and
	// the backend sharing its host (needs rlbench to run as root).
	WorkerPriority int `json:"worker_priority,omitempty"`
	// UpstreamKeepalive is the upstream group's keepalive: idle connections
	// to the backend each worker keeps (default 0: a new connection per
	// proxied request).
	UpstreamKeepalive int `json:"upstream_keepalive,omitempty"`
	// ErrorLogLevel is the error_log level (debug, info, notice, warn,
	// error, crit, alert, emerg); default info. limit_req logs a rejection
	// at limit_req_log_level (default error) and a delay one level lower
	// (https://nginx.org/en/docs/http/ngx_http_limit_req_module.html#limit_req_log_level):
	// a level above them writes no line per decision.
	ErrorLogLevel string `json:"error_log_level,omitempty"`
	// TimerResolution is timer_resolution; unset: nginx's clock is refreshed
	// after every event loop wake-up.
	TimerResolution proxy.Duration `json:"timer_resolution,omitempty"`
}

// NginxZonePlan is one limit_req_zone and its limit_req.
type NginxZonePlan struct {
	// Name is the zone name; default zone<i>.
	Name    string `json:"name,omitempty"`
	Key     string `json:"key,omitempty"`
	Size    string `json:"size,omitempty"`
	Rate    string `json:"rate"`
	Burst   int    `json:"burst,omitempty"`
	NoDelay bool   `json:"nodelay,omitempty"`
	Delay   int    `json:"delay,omitempty"`
}

// NginxName returns the name of the i-th nginx instance (0-based): nginx-a, nginx-b, ...
func NginxName(i int) string { return fmt.Sprintf("nginx-%c", 'a'+i) }

// maxNginx bounds lab.nginx.instances (nginx-a .. nginx-z).
const maxNginx = 26

// zones returns the plan's zones: Zones, or the one zone "rl" of Rate.
func (n *NginxPlan) zones() []NginxZonePlan {
	if len(n.Zones) > 0 {
		out := make([]NginxZonePlan, len(n.Zones))
		for i, z := range n.Zones {
			out[i] = z
			if out[i].Name == "" {
				out[i].Name = fmt.Sprintf("zone%d", i)
			}
		}
		return out
	}
	if n.Rate == "" {
		return nil
	}
	return []NginxZonePlan{{Name: "rl", Key: n.Key, Size: n.Size, Rate: n.Rate, Burst: n.Burst, NoDelay: n.NoDelay, Delay: n.Delay}}
}

// config renders the plan as the realparts config of one instance in front
// of the backend endpoints upstreams (host:port).
func (n *NginxPlan) config(upstreams []string) (realparts.NginxConfig, error) {
	c := realparts.NginxConfig{WorkerProcesses: n.WorkerProcesses, WorkerPriority: n.WorkerPriority, ErrorLogLevel: n.ErrorLogLevel, UpstreamKeepalive: n.UpstreamKeepalive, TimerResolution: time.Duration(n.TimerResolution),
		LimitReqStatus: n.LimitReqStatus, LimitReqLogLevel: n.LimitReqLogLevel, LimitReqDryRun: n.LimitReqDryRun,
		NextUpstream: n.ProxyNextUpstream, NextUpstreamTries: n.ProxyNextUpstreamTries, NextUpstreamTimeout: time.Duration(n.ProxyNextUpstreamTimeout),
		ConnectTimeout: time.Duration(n.ProxyConnectTimeout), ReadTimeout: time.Duration(n.ProxyReadTimeout), SendTimeout: time.Duration(n.ProxySendTimeout)}
	for i, z := range n.zones() {
		r, err := realparts.ParseNginxRate(z.Rate)
		if err != nil {
			key, _ := n.planKey(fmt.Sprintf("Zones[%d].Rate", i))
			return c, &nginxKeyError{key: key, err: fmt.Errorf("lab.nginx: zone %s: %w", z.Name, err)}
		}
		c.Zones = append(c.Zones, realparts.LimitReqZone{Name: z.Name, Key: z.Key, Size: z.Size, Rate: r})
		c.LimitReq = append(c.LimitReq, realparts.LimitReq{Zone: z.Name, Burst: z.Burst, NoDelay: z.NoDelay, Delay: z.Delay})
	}
	for _, u := range upstreams {
		c.Upstreams = append(c.Upstreams, realparts.NginxServer{Addr: u, MaxFails: n.MaxFails, FailTimeout: time.Duration(n.FailTimeout)})
	}
	if err := c.Validate(); err != nil {
		return c, n.planError(err)
	}
	return c, nil
}

// nginxPlanFields maps NginxConfig's fields (realparts.FieldError.Field)
// to the lab.nginx keys they are rendered from; nginxPlanSubfields, the
// fields of one zone or upstream server (the plan has one value for every
// server).
var (
	nginxPlanFields = map[string]string{
		"WorkerProcesses": "worker_processes", "TimerResolution": "timer_resolution",
		"WorkerPriority": "worker_priority", "UpstreamKeepalive": "upstream_keepalive", "ErrorLogLevel": "error_log_level",
		"LimitReqStatus": "limit_req_status", "LimitReqLogLevel": "limit_req_log_level",
		"NextUpstream": "proxy_next_upstream", "NextUpstreamTries": "proxy_next_upstream_tries",
		"NextUpstreamTimeout": "proxy_next_upstream_timeout", "ConnectTimeout": "proxy_connect_timeout",
		"ReadTimeout": "proxy_read_timeout", "SendTimeout": "proxy_send_timeout",
	}
	nginxPlanSubfields = map[string]string{
		"MaxFails": "max_fails", "FailTimeout": "fail_timeout",
		"Name": "name", "Key": "key", "Size": "size", "Rate": "rate", "Burst": "burst", "Delay": "delay",
	}
)

var nginxFieldRE = regexp.MustCompile(`^(LimitReq|Zones|Upstreams|NextUpstream)\[(\d+)\](?:\.(\w+))?$`)

// nginxKeyError is a lab.nginx problem at key (planKey's form: ".burst",
// ".zones[1].delay", or "" for lab.nginx itself); the plan names the line
// of that key (validateNginx's field, nodeLine).
type nginxKeyError struct {
	key string
	err error
}

func (e *nginxKeyError) Error() string { return e.err.Error() }
func (e *nginxKeyError) Unwrap() error { return e.err }

// planError restates NginxConfig.Validate's problems with the plan's keys
// (lab.nginx.zones[1].burst, lab.nginx.burst for the one zone of rate);
// a field with no plan key keeps its NginxConfig name. It is an
// *nginxKeyError at the key of the first problem that has one.
func (n *NginxPlan) planError(err error) error {
	var parts []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	} else {
		parts = []error{err}
	}
	out := make([]error, 0, len(parts))
	first, found := "", false
	for _, e := range parts {
		var fe *realparts.FieldError
		if !errors.As(e, &fe) {
			out = append(out, fmt.Errorf("lab.nginx: %w", e))
			continue
		}
		if key, ok := n.planKey(fe.Field); ok {
			out = append(out, fmt.Errorf("lab.nginx%s%s", key, fe.Problem))
			if !found {
				first, found = key, true
			}
		} else {
			out = append(out, fmt.Errorf("lab.nginx: %w", e))
		}
	}
	return &nginxKeyError{key: first, err: errors.Join(out...)}
}

// planKey is the lab.nginx key (with its leading dot, or "" for lab.nginx
// itself) that NginxConfig field f was rendered from.
func (n *NginxPlan) planKey(f string) (string, bool) {
	if k, ok := nginxPlanFields[f]; ok {
		return "." + k, true
	}
	m := nginxFieldRE.FindStringSubmatch(f)
	if m == nil {
		return "", false
	}
	sub := ""
	if m[3] != "" {
		k, ok := nginxPlanSubfields[m[3]]
		if !ok {
			return "", false
		}
		sub = "." + k
	}
	switch m[1] {
	case "LimitReq", "Zones": // zone i: lab.nginx.zones[i], or lab.nginx itself for the one zone of rate
		if len(n.Zones) > 0 {
			return ".zones[" + m[2] + "]" + sub, true
		}
		return sub, true
	case "Upstreams":
		return sub, sub != ""
	default: // NextUpstream[i]
		return ".proxy_next_upstream[" + m[2] + "]" + sub, sub == ""
	}
}

// validateNginx checks lab.nginx when the plan is loaded: the instances and
// the rendered config (with stand-in upstreams), the zones as the limiter
// model reads them. The lab proxies' sections do not apply. field is the
// lab key of the problem ("nginx.worker_priority", "nginx.zones[1].burst",
// or "nginx" when no one key is at fault), whose line the plan names.
func (lp *LabPlan) validateNginx() (field string, err error) {
	n := lp.Nginx
	if lp.Proxies > 0 || lp.Local != nil || lp.Global != nil || lp.RLS != nil || lp.Proxy != nil || lp.Cluster != nil {
		return "nginx", errors.New("lab.nginx replaces the lab proxies: leave out proxies, local, global, rls, proxy and cluster")
	}
	if n.Instances < 0 || n.Instances > maxNginx {
		return "nginx.instances", fmt.Errorf("lab.nginx.instances %d: want 1..%d", n.Instances, maxNginx)
	}
	if len(n.Zones) > 0 && (n.Rate != "" || n.Burst != 0 || n.NoDelay || n.Delay != 0 || n.Key != "" || n.Size != "") {
		return "nginx", errors.New("lab.nginx: give rate (burst, nodelay, delay, key, size) for one zone or zones, not both")
	}
	if n.Rate == "" && len(n.Zones) == 0 && (n.Burst != 0 || n.NoDelay || n.Delay != 0 || n.Key != "" || n.Size != "") {
		return "nginx", errors.New("lab.nginx: burst, nodelay, delay, key and size need rate")
	}
	if _, err := n.config([]string{"127.0.0.1:1"}); err != nil {
		field := "nginx"
		if ke := (*nginxKeyError)(nil); errors.As(err, &ke) {
			field += ke.key
		}
		return field, err
	}
	if _, err := n.modelSpec(); err != nil {
		return "nginx", fmt.Errorf("lab.nginx: %w", err)
	}
	return "", nil
}

// perInstanceKeys are zone keys with one value for every request of the
// lab to one instance (the lab's clients are all 127.0.0.1, the Host
// header is the instance's address).
var perInstanceKeys = map[string]bool{"": true, "$binary_remote_addr": true, "$remote_addr": true, "$host": true, "$server_name": true}

// modelSpec is the zones as an nginx_limit_req model (decl.NginxLimitReq),
// one state per instance; nil without zones, or when a zone's key may
// differ between requests (the model would need each request's key). The
// error is the translation's (a bad rate, burst or delay).
func (n *NginxPlan) modelSpec() (*model.Spec, error) {
	zs := n.zones()
	if len(zs) == 0 {
		return nil, nil
	}
	d := decl.NginxLimitReq{DryRun: n.LimitReqDryRun}
	for _, z := range zs {
		if !perInstanceKeys[z.Key] {
			return nil, nil
		}
		d.Zones = append(d.Zones, decl.NginxZone{Name: z.Name, Rate: z.Rate, Burst: z.Burst, NoDelay: z.NoDelay, Delay: z.Delay})
	}
	s, err := d.Spec()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// limitReqStatuses are the values of $limit_req_status an expectation may
// count (nginxrec.LimitReq*), and "none" for records without one.
var limitReqStatuses = []string{nginxrec.LimitReqPassed, nginxrec.LimitReqDelayed, nginxrec.LimitReqRejected,
	nginxrec.LimitReqDelayedDryRun, nginxrec.LimitReqRejectedDryRun, nginxrec.LimitReqNoneKey}

// validateBurstExpect checks expect.backend_peak, expect.amplification and
// expect.limit_req_status when the plan is loaded.
func validateBurstExpect(ex *evidence.Expectation) error {
	for i := range ex.BackendPeak {
		if err := ex.BackendPeak[i].Validate(); err != nil {
			return fmt.Errorf("expect.backend_peak[%d]: %w", i, err)
		}
	}
	if a := ex.Amplification; a != nil {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("expect.amplification: %w", err)
		}
	}
	for k, r := range ex.LimitReqStatus {
		if !slices.Contains(limitReqStatuses, k) {
			return fmt.Errorf("expect.limit_req_status.%s: want one of %s", k, strings.Join(limitReqStatuses, ", "))
		}
		if r.Min < 0 {
			return fmt.Errorf("expect.limit_req_status.%s %s: want 0 <= min <= max", k, r)
		}
	}
	return nil
}

// nginxCaptureHeaders are the response headers a scenario with nginx
// records: attack.DefaultCaptureHeaders and the decision nginx adds to
// every response (realparts.NginxLimitReqStatusHeader, $limit_req_status).
func nginxCaptureHeaders() []string {
	return append(append([]string{}, attack.DefaultCaptureHeaders...), strings.ToLower(realparts.NginxLimitReqStatusHeader))
}

// labNginx is one running nginx instance of a scenario.
type labNginx struct {
	name string
	n    *realparts.Nginx
}

// startNginx starts lab.nginx's instances in front of the lab backend's
// endpoints and makes them the scenario's targets. It returns a NOT_RUN
// reason or "". Each instance is stopped (by PID) and its prefix removed
// in r.cleanups; finishNginx saves its logs first.
func (r *scenarioRun) startNginx(ctx context.Context) string {
	np := r.plan.Lab.Nginx
	bin, err := realparts.FindNginx()
	if err != nil {
		if errors.Is(err, realparts.ErrNotInstalled) {
			return fmt.Sprintf("%s, or set %s (%s)", NginxNotInstalledReason, realparts.EnvNginxBin, realparts.MissingDetail(err))
		}
		return "nginx: " + err.Error()
	}
	var ups []string
	for _, ep := range r.backend.Endpoints() {
		u, err := url.Parse(ep.URL)
		if err != nil {
			return fmt.Sprintf("backend endpoint %s: %v", ep.Name, err)
		}
		ups = append(ups, u.Host)
	}
	cfg, err := np.config(ups)
	if err != nil {
		return err.Error()
	}
	count := max(np.Instances, 1)
	for i := range count {
		n, err := realparts.StartNginx(ctx, realparts.NginxOptions{Bin: bin, Config: cfg})
		if err != nil {
			return fmt.Sprintf("nginx %s: %v", NginxName(i), err)
		}
		ln := &labNginx{name: NginxName(i), n: n}
		r.cleanups = append(r.cleanups, func() { _ = n.Close(context.Background()) })
		r.nginx = append(r.nginx, ln)
		r.targets = append(r.targets, attack.Target{Name: ln.name, URL: n.URL()})
		fmt.Fprintf(r.progress, "  nginx %s %s (pid %d, %s)\n", ln.name, n.URL(), n.PID(), n.Build().Version)
	}
	r.captureHeaders = nginxCaptureHeaders()
	if spec, err := np.modelSpec(); err == nil && spec != nil {
		for _, ln := range r.nginx {
			s := *spec
			r.limiters = append(r.limiters, evidence.Limiter{Name: ln.name + " limit_req", Stage: evidence.StageLocal, Targets: []string{ln.name},
				Key: evidence.KeyTarget, Model: &s})
		}
	}
	return ""
}

// snapshotNginx saves every nginx instance's stub_status page (raw and
// parsed) as nginx/<proxy>/stub_status.<label>.*.
func (r *scenarioRun) snapshotNginx(ctx context.Context, label string) string {
	client := &http.Client{Timeout: 5 * time.Second}
	for _, ln := range r.nginx {
		raw, st, err := collectnginx.FetchStubStatus(ctx, client, ln.n.StatusURL())
		var stp *nginxrec.StubStatus
		if err == nil {
			stp = &st
		}
		if werr := evidence.WriteNginxStubStatus(evidence.Dir(r.dir), ln.name, label, raw, stp); werr != nil {
			return werr.Error()
		}
		if err != nil {
			return fmt.Sprintf("stub_status of %s (%s): %v", ln.name, ln.n.StatusURL(), err)
		}
	}
	return ""
}

// finishNginx stops every nginx instance (gracefully: a delayed request
// still finishes and is logged) and saves its evidence: the rendered
// nginx.conf, the access log (raw and parsed) and the error log (raw and
// its limit_req lines).
func (r *scenarioRun) finishNginx(ctx context.Context) error {
	var errs []error
	d := evidence.Dir(r.dir)
	for _, ln := range r.nginx {
		if err := ln.n.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: stop: %w", ln.name, err))
		}
		if err := evidence.WriteNginxConf(d, ln.name, ln.n.Conf()); err != nil {
			errs = append(errs, err)
		}
		for _, f := range []struct {
			path  string
			write func(*os.File) error
		}{
			{ln.n.AccessLogPath(), func(f *os.File) error {
				_, err := evidence.WriteNginxAccessLog(d, ln.name, f.Name(), f)
				return err
			}},
			{ln.n.ErrorLogPath(), func(f *os.File) error {
				_, err := evidence.WriteNginxErrorLog(d, ln.name, f.Name(), f)
				return err
			}},
		} {
			file, err := os.Open(f.path)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ln.name, err))
				continue
			}
			if err := f.write(file); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", ln.name, err))
			}
			file.Close()
		}
	}
	return errors.Join(errs...)
}
