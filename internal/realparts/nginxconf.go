package realparts

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// NginxRate is a limit_req_zone rate: Count requests per second (PerMinute false, "10r/s") or per minute
// (PerMinute true, "30r/m"). nginx accepts only a positive integer count (ngx_http_limit_req_zone in
// src/http/modules/ngx_http_limit_req_module.c: ngx_atoi, "invalid rate" when <= 0).
type NginxRate struct {
	Count     int
	PerMinute bool
}

// ParseNginxRate parses "Nr/s" or "Nr/m" with N a positive integer, as nginx's limit_req_zone does. Anything else
// is an error quoting the text.
func ParseNginxRate(s string) (NginxRate, error) {
	var r NginxRate
	num, ok := strings.CutSuffix(s, "r/s")
	if !ok {
		if num, ok = strings.CutSuffix(s, "r/m"); !ok {
			return r, fmt.Errorf("nginx rate %q: want Nr/s or Nr/m", s)
		}
		r.PerMinute = true
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || strings.HasPrefix(num, "+") {
		return NginxRate{}, fmt.Errorf("nginx rate %q: the count must be a positive integer", s)
	}
	r.Count = n
	return r, nil
}

// String renders the rate as nginx reads it, e.g. "10r/s" or "1r/m".
func (r NginxRate) String() string {
	if r.PerMinute {
		return strconv.Itoa(r.Count) + "r/m"
	}
	return strconv.Itoa(r.Count) + "r/s"
}

// MilliPerSecond is the rate as nginx stores and uses it: milli-requests per second, rate*1000/scale with integer
// division, scale 1 for r/s and 60 for r/m (ngx_http_limit_req_zone: ctx->rate = rate * 1000 / scale). So 1r/m is
// 16, not 16.67: its real interval is 62.5 s.
func (r NginxRate) MilliPerSecond() int64 {
	scale := int64(1)
	if r.PerMinute {
		scale = 60
	}
	return int64(r.Count) * 1000 / scale
}

// LimitReqZone is one limit_req_zone directive (https://nginx.org/en/docs/http/ngx_http_limit_req_module.html).
type LimitReqZone struct {
	// Name is the zone name; letters, digits, '_' and '-'.
	Name string
	// Key is the zone key, an nginx complex value such as "$binary_remote_addr" (the default when empty),
	// "$host" or "$http_x_tenant". Requests whose key is empty are not limited. It is rendered verbatim and may
	// not contain white space, quotes, backslashes, ';', '{', '}' or '#'.
	Key string
	// Size is the shared memory size, e.g. "1m" (the default when empty) or "64k": digits with an optional k or m.
	// nginx refuses zones smaller than 8 pages ("zone ... is too small", found by nginx -t).
	Size string
	// Rate is the leak rate; required.
	Rate NginxRate
}

// LimitReq is one limit_req directive of the proxied location. Several are checked in configuration order; the
// first that rejects stops the check, and a rejected request charges no zone (ngx_http_limit_req_handler in src/http/modules/ngx_http_limit_req_module.c).
type LimitReq struct {
	// Zone names a LimitReqZone of the same config; one zone may be used once.
	Zone string
	// Burst is burst=N, the bucket's capacity beyond the first request; 0 omits it (nginx default 0: nginx itself
	// refuses "burst=0").
	Burst int
	// NoDelay is nodelay: admitted excess requests are forwarded at once (they still fill the bucket).
	NoDelay bool
	// Delay is delay=N (nginx 1.15.7): the first request plus N excess requests go at once, the rest of the burst is
	// delayed. 0 omits it; exclusive with NoDelay.
	Delay int
}

// NginxServer is one server line of the upstream group.
type NginxServer struct {
	// Addr is host:port with host an IP literal (no name resolution happens at start).
	Addr string
	// MaxFails is max_fails=N; nil leaves nginx's default (1); 0 disables failure accounting.
	MaxFails *int
	// FailTimeout is fail_timeout; 0 leaves nginx's default (10s). Whole milliseconds.
	FailTimeout time.Duration
	// Weight is weight=N; 0 leaves nginx's default (1).
	Weight int
	// Backup marks the server backup (used only when the primary servers are unavailable).
	Backup bool
}

// NginxConfig is what a private nginx (StartNginx) is configured with: the limit_req and proxy_next_upstream
// settings a plan's `lab.nginx:` will give. One server on a loopback port proxies every path to the upstream group
// `NginxUpstreamGroup`; a second server on its own loopback port serves stub_status at NginxStubStatusPath.
// The zero value of every optional field leaves nginx's default. See RenderNginxConf for the rendered file.
type NginxConfig struct {
	// WorkerProcesses is worker_processes; 0 means 1 (one event loop: decisions are made in arrival order).
	WorkerProcesses int
	// WorkerConnections is worker_connections; 0 means 1024.
	WorkerConnections int
	// TimerResolution is timer_resolution; 0 leaves it unset, so nginx refreshes its cached time after every
	// epoll_wait (https://nginx.org/en/docs/ngx_core_module.html#timer_resolution). Whole milliseconds.
	TimerResolution time.Duration
	// WorkerPriority is worker_priority, the workers' nice value (-20..20; 0 leaves it unset): a negative value
	// gives nginx the CPU before the other processes of a shared host (https://nginx.org/en/docs/ngx_core_module.html#worker_priority).
	// Lowering it below 0 needs the master to run as root; otherwise nginx logs setpriority's failure and runs at 0.
	WorkerPriority int
	// ErrorLogLevel is the error_log level; empty means "info" (limit_req rejects log at error, delays at warn by
	// default). One of debug, info, notice, warn, error, crit, alert, emerg.
	ErrorLogLevel string

	// Zones are the limit_req_zone directives, rendered in this order.
	Zones []LimitReqZone
	// LimitReq are the limit_req directives of the proxied location, in this order.
	LimitReq []LimitReq
	// LimitReqStatus is limit_req_status (400..599, nginx 1.3.15); 0 leaves nginx's default 503.
	LimitReqStatus int
	// LimitReqLogLevel is limit_req_log_level (info, notice, warn or error); empty leaves nginx's default, error.
	// Delays are logged one level lower.
	LimitReqLogLevel string
	// LimitReqDryRun is limit_req_dry_run on (nginx 1.17.1): decisions are logged and $limit_req_status gets
	// *_DRY_RUN, but nothing is delayed or rejected.
	LimitReqDryRun bool

	// Upstreams are the servers of the upstream group; at least one.
	Upstreams []NginxServer
	// UpstreamKeepalive is the upstream group's keepalive (idle connections to the servers each worker keeps,
	// https://nginx.org/en/docs/http/ngx_http_upstream_module.html#keepalive), at most the worker's connections
	// (WorkerConnections); 0 leaves it off (nginx's default: a
	// connection per proxied request). When set, the location also gets proxy_http_version 1.1 and an empty
	// Connection header, which the keepalive directive needs.
	UpstreamKeepalive int
	// NextUpstream are the proxy_next_upstream conditions (error, timeout, invalid_header, http_500, http_502,
	// http_503, http_504, http_403, http_404, http_429, non_idempotent, or off alone); empty leaves nginx's default
	// "error timeout".
	NextUpstream []string
	// NextUpstreamTries is proxy_next_upstream_tries; 0 leaves nginx's default (0: all servers of the group).
	NextUpstreamTries int
	// NextUpstreamTimeout is proxy_next_upstream_timeout; 0 leaves nginx's default (no limit). Whole ms.
	NextUpstreamTimeout time.Duration
	// ConnectTimeout, ReadTimeout and SendTimeout are proxy_connect_timeout, proxy_read_timeout and
	// proxy_send_timeout; 0 leaves nginx's default (60s each). Whole milliseconds.
	ConnectTimeout, ReadTimeout, SendTimeout time.Duration
}

// Names used in the rendered configuration.
const (
	// NginxMaxWorkers is the most worker processes nginx spawns (NGX_MAX_PROCESSES, src/os/unix/ngx_process.h);
	// beyond it nginx logs "no more than 1024 processes can be spawned" for each one more and runs without them.
	NginxMaxWorkers = 1024
	// NginxUpstreamGroup is the name of the upstream group. nginx writes it into $upstream_addr (with status
	// 502) when no server of the group could be chosen ("no live upstreams").
	NginxUpstreamGroup = "backend"
	// NginxLogFormat is the name of the JSON log_format of the access logs.
	NginxLogFormat = "rlbench"
	// NginxStubStatusPath is the location of stub_status on the status server.
	NginxStubStatusPath = "/stub_status"
	// NginxLimitReqStatusHeader is the response header carrying $limit_req_status on every response of the
	// proxied server (add_header ... always), so clients can capture the decision.
	NginxLimitReqStatusHeader = "X-Limit-Req-Status"
)

// nginxLogFormat renders the log_format NginxLogFormat of the access logs, escape=json (nginx 1.11.8): one JSON object per
// request. Its keys are the ones collect/nginx reads: id ($http_x_rlbench_id), status, upstream_status,
// upstream_addr, request_time, upstream_response_time, limit_req_status ($limit_req_status, nginx 1.17.6), msec,
// method, uri, connection, remote_addr and pid ($pid: the worker, whose own cached clock stamped the request).
// status is quoted because nginx prints "000" for a request that got no
// status (ngx_http_variable_status, "%03ui"), which is not a JSON number. keys holds one entry per zone, its key
// as evaluated for the request (with $binary_remote_addr logged as $remote_addr).
func nginxLogFormat(zones []LimitReqZone) string {
	var b strings.Builder
	b.WriteString("    log_format " + NginxLogFormat + " escape=json\n")
	b.WriteString(`        '{"id":"$http_x_rlbench_id","status":"$status",'` + "\n")
	b.WriteString(`        '"upstream_status":"$upstream_status","upstream_addr":"$upstream_addr",'` + "\n")
	b.WriteString(`        '"request_time":$request_time,"upstream_response_time":"$upstream_response_time",'` + "\n")
	b.WriteString(`        '"limit_req_status":"$limit_req_status","msec":$msec,'` + "\n")
	b.WriteString(`        '"method":"$request_method","uri":"$request_uri","connection":$connection,'` + "\n")
	b.WriteString(`        '"remote_addr":"$remote_addr","pid":$pid`)
	if len(zones) > 0 {
		b.WriteString(`,"keys":{`)
		for i, z := range zones {
			if i > 0 {
				b.WriteString(",")
			}
			key := strings.ReplaceAll(zoneKey(z), "$binary_remote_addr", "$remote_addr")
			b.WriteString(`"` + z.Name + `":"` + key + `"`)
		}
		b.WriteString("}")
	}
	b.WriteString("}';\n")
	return b.String()
}

// NginxLayout is where one private nginx lives: its prefix (every path of the rendered config is under it), its
// two loopback ports and, when the master runs as root, the user its workers run as.
type NginxLayout struct {
	// Prefix is an absolute directory (nginx -p).
	Prefix string
	// Port is the proxied server's port, StatusPort the stub_status server's; both on 127.0.0.1.
	Port, StatusPort int
	// User is rendered as `user USER;` when not empty. nginx honours it only when the master runs as root.
	User string
	// Without lists modules the binary was built without (from nginx -V, e.g. "http_uwsgi_module"); their temp
	// path directives are left out, since nginx rejects directives of absent modules.
	Without map[string]bool
}

// Paths under an nginx prefix.
const (
	nginxConfName      = "nginx.conf"
	nginxPidName       = "nginx.pid"
	nginxLockName      = "nginx.lock"
	nginxLogsDir       = "logs"
	nginxTempDir       = "tmp"
	nginxErrorLogName  = "error.log"
	nginxAccessLogName = "access.log"
	nginxStatusLogName = "status_access.log"
)

var (
	nginxNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	nginxSizeRE = regexp.MustCompile(`^[0-9]+[kKmM]?$`)
	nginxUserRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+( [A-Za-z0-9_.-]+)?$`)
	// nginxLevels are the error_log levels (ngx_log.c err_levels).
	nginxLevels = map[string]bool{"debug": true, "info": true, "notice": true, "warn": true, "error": true,
		"crit": true, "alert": true, "emerg": true}
	// nginxLimitLogLevels are limit_req_log_level's values (ngx_http_limit_req_log_levels).
	nginxLimitLogLevels = map[string]bool{"info": true, "notice": true, "warn": true, "error": true}
	// nginxNextUpstream are proxy_next_upstream's conditions (ngx_http_proxy_next_upstream_masks in
	// src/http/modules/ngx_http_proxy_module.c).
	nginxNextUpstream = map[string]bool{"error": true, "timeout": true, "invalid_header": true, "http_500": true,
		"http_502": true, "http_503": true, "http_504": true, "http_403": true, "http_404": true, "http_429": true,
		"non_idempotent": true, "off": true}
)

func zoneKey(z LimitReqZone) string {
	if z.Key == "" {
		return "$binary_remote_addr"
	}
	return z.Key
}

func zoneSize(z LimitReqZone) string {
	if z.Size == "" {
		return "1m"
	}
	return z.Size
}

// nginxDuration renders d in nginx's time syntax: whole seconds as "Ns", else "Nms"; what must be a positive whole
// number of milliseconds.
func nginxDuration(what string, d time.Duration) (string, error) {
	if d <= 0 || d%time.Millisecond != 0 {
		return "", fmt.Errorf("%s %v: want a positive whole number of milliseconds", what, d)
	}
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s", nil
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms", nil
}

// proxyTimeouts lists the proxy time settings with their field and directive names.
func (c NginxConfig) proxyTimeouts() []struct {
	field, directive string
	v                time.Duration
} {
	return []struct {
		field, directive string
		v                time.Duration
	}{
		{"NextUpstreamTimeout", "proxy_next_upstream_timeout", c.NextUpstreamTimeout},
		{"ConnectTimeout", "proxy_connect_timeout", c.ConnectTimeout},
		{"ReadTimeout", "proxy_read_timeout", c.ReadTimeout},
		{"SendTimeout", "proxy_send_timeout", c.SendTimeout},
	}
}

// FieldError is one invalid NginxConfig field: Field is its path in Go
// form from NginxConfig ("LimitReq[1].Zone"), Problem the rest of the
// message (` "global": no such zone in Zones`). A caller that builds the
// config from its own names (a plan) can name its own field instead.
type FieldError struct{ Field, Problem string }

func (e *FieldError) Error() string { return "NginxConfig." + e.Field + e.Problem }

// fieldError splits msg, "Field rest", at the field path's end.
func fieldError(msg string) *FieldError {
	i := strings.IndexAny(msg, " :")
	if i < 0 {
		i = len(msg)
	}
	return &FieldError{Field: msg[:i], Problem: msg[i:]}
}

// Validate checks the config without rendering it; it returns every
// problem joined (errors.Join), each a *FieldError naming its field, e.g.
// `NginxConfig.LimitReq[1].Zone "global": no such zone in Zones`. nginx -t
// (run by StartNginx) checks the rest.
func (c NginxConfig) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fieldError(fmt.Sprintf(format, a...))) }
	if c.WorkerProcesses < 0 || c.WorkerProcesses > NginxMaxWorkers {
		bad("WorkerProcesses %d: want 0..%d", c.WorkerProcesses, NginxMaxWorkers)
	}
	if c.WorkerConnections < 0 {
		bad("WorkerConnections %d: must not be negative", c.WorkerConnections)
	}
	if c.WorkerPriority < -20 || c.WorkerPriority > 20 {
		bad("WorkerPriority %d: want -20..20", c.WorkerPriority)
	}
	if conns := cmp.Or(c.WorkerConnections, 1024); c.UpstreamKeepalive < 0 || c.UpstreamKeepalive > conns {
		// Each kept connection holds one of the worker's connections.
		bad("UpstreamKeepalive %d: want 0..%d (worker_connections)", c.UpstreamKeepalive, conns)
	}
	if c.TimerResolution != 0 {
		if _, err := nginxDuration("TimerResolution", c.TimerResolution); err != nil {
			errs = append(errs, fieldError(err.Error()))
		}
	}
	if c.ErrorLogLevel != "" && !nginxLevels[c.ErrorLogLevel] {
		bad("ErrorLogLevel %q: want debug, info, notice, warn, error, crit, alert or emerg", c.ErrorLogLevel)
	}
	zones := map[string]bool{}
	for i, z := range c.Zones {
		if !nginxNameRE.MatchString(z.Name) {
			bad("Zones[%d].Name %q: want letters, digits, '_' and '-'", i, z.Name)
		} else if zones[z.Name] {
			bad("Zones[%d].Name %q: declared twice", i, z.Name)
		}
		zones[z.Name] = true
		if strings.ContainsAny(z.Key, " \t\r\n\"'\\;{}#") {
			bad("Zones[%d].Key %q: must not contain white space, quotes, backslashes, ';', '{', '}' or '#'", i, z.Key)
		}
		if z.Size != "" && !nginxSizeRE.MatchString(z.Size) {
			bad("Zones[%d].Size %q: want digits with an optional k or m", i, z.Size)
		}
		if z.Rate.Count <= 0 {
			bad("Zones[%d].Rate: the count must be positive (e.g. 10r/s)", i)
		}
	}
	used := map[string]bool{}
	for i, l := range c.LimitReq {
		switch {
		case !zones[l.Zone]:
			bad("LimitReq[%d].Zone %q: no such zone in Zones", i, l.Zone)
		case used[l.Zone]:
			bad("LimitReq[%d].Zone %q: used twice (nginx: is duplicate)", i, l.Zone)
		}
		used[l.Zone] = true
		if l.Burst < 0 {
			bad("LimitReq[%d].Burst %d: must not be negative", i, l.Burst)
		}
		if l.Delay < 0 {
			bad("LimitReq[%d].Delay %d: must not be negative", i, l.Delay)
		}
		if l.NoDelay && l.Delay > 0 {
			bad("LimitReq[%d]: nodelay and delay are exclusive", i)
		}
	}
	if c.LimitReqStatus != 0 && (c.LimitReqStatus < 400 || c.LimitReqStatus > 599) {
		bad("LimitReqStatus %d: want 400..599", c.LimitReqStatus)
	}
	if c.LimitReqLogLevel != "" && !nginxLimitLogLevels[c.LimitReqLogLevel] {
		bad("LimitReqLogLevel %q: want info, notice, warn or error", c.LimitReqLogLevel)
	}
	if len(c.Upstreams) == 0 {
		bad("Upstreams: at least one server is required")
	}
	for i, s := range c.Upstreams {
		host, port, err := net.SplitHostPort(s.Addr)
		if err != nil {
			bad("Upstreams[%d].Addr %q: %v", i, s.Addr, err)
		} else if net.ParseIP(host) == nil {
			bad("Upstreams[%d].Addr %q: the host must be an IP literal", i, s.Addr)
		} else if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			bad("Upstreams[%d].Addr %q: bad port", i, s.Addr)
		}
		if s.MaxFails != nil && *s.MaxFails < 0 {
			bad("Upstreams[%d].MaxFails %d: must not be negative", i, *s.MaxFails)
		}
		if s.FailTimeout != 0 {
			if _, err := nginxDuration("FailTimeout", s.FailTimeout); err != nil {
				bad("Upstreams[%d].%v", i, err)
			}
		}
		if s.Weight < 0 {
			bad("Upstreams[%d].Weight %d: must not be negative", i, s.Weight)
		}
	}
	for i, cond := range c.NextUpstream {
		if !nginxNextUpstream[cond] {
			bad("NextUpstream[%d] %q: want error, timeout, invalid_header, http_500, http_502, http_503, http_504, http_403, http_404, http_429, non_idempotent or off", i, cond)
		} else if cond == "off" && len(c.NextUpstream) > 1 {
			bad("NextUpstream: off must stand alone")
		}
	}
	if c.NextUpstreamTries < 0 {
		bad("NextUpstreamTries %d: must not be negative", c.NextUpstreamTries)
	}
	for _, d := range c.proxyTimeouts() {
		if d.v != 0 {
			if _, err := nginxDuration(d.field, d.v); err != nil {
				errs = append(errs, fieldError(err.Error()))
			}
		}
	}
	return errors.Join(errs...)
}

// RenderNginxConf renders the complete nginx.conf for cfg in layout l, deterministically (the same input gives the
// same bytes). Every path is under l.Prefix: pid file, lock file, error log (at cfg.ErrorLogLevel), access logs in
// the JSON log_format NginxLogFormat (logs/access.log for the proxied server, logs/status_access.log for the
// status server), and the five *_temp_path directories (tmp/<name>), so nothing compiled into the binary
// (/run/nginx.pid, /var/log/nginx, /var/lib/nginx) is used. It sets `daemon off; master_process on;`, listens on
// 127.0.0.1 only, proxies `location /` to the upstream group NginxUpstreamGroup with the limit_req and
// proxy_next_upstream settings, and adds NginxLimitReqStatusHeader to every response. An invalid cfg or layout is
// an error naming the field (see Validate).
func RenderNginxConf(cfg NginxConfig, l NginxLayout) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("realparts: %w", err)
	}
	if !strings.HasPrefix(l.Prefix, "/") || strings.ContainsAny(l.Prefix, " \t\r\n\"';{}#\\$") {
		return nil, fmt.Errorf("realparts: NginxLayout.Prefix %q: want an absolute path without white space, quotes, '$' or nginx syntax characters", l.Prefix)
	}
	if l.Port <= 0 || l.Port > 65535 || l.StatusPort <= 0 || l.StatusPort > 65535 || l.Port == l.StatusPort {
		return nil, fmt.Errorf("realparts: NginxLayout ports %d and %d: want two different ports in 1..65535", l.Port, l.StatusPort)
	}
	if l.User != "" && !nginxUserRE.MatchString(l.User) {
		return nil, fmt.Errorf("realparts: NginxLayout.User %q: want USER or \"USER GROUP\"", l.User)
	}
	prefix := strings.TrimSuffix(l.Prefix, "/")
	p := func(parts ...string) string { return prefix + "/" + strings.Join(parts, "/") }
	workers := cfg.WorkerProcesses
	if workers == 0 {
		workers = 1
	}
	conns := cfg.WorkerConnections
	if conns == 0 {
		conns = 1024
	}
	level := cfg.ErrorLogLevel
	if level == "" {
		level = "info"
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...); b.WriteByte('\n') }
	dur := func(d time.Duration) string { s, _ := nginxDuration("", d); return s } // validated above

	w("# rendered by rlbench (internal/realparts.RenderNginxConf); private instance, prefix %s", prefix)
	w("daemon off;")
	w("master_process on;")
	w("worker_processes %d;", workers)
	if cfg.WorkerPriority != 0 {
		w("worker_priority %d;", cfg.WorkerPriority)
	}
	if l.User != "" {
		w("user %s;", l.User)
	}
	w("pid %s;", p(nginxPidName))
	w("lock_file %s;", p(nginxLockName))
	w("error_log %s %s;", p(nginxLogsDir, nginxErrorLogName), level)
	if cfg.TimerResolution != 0 {
		w("timer_resolution %s;", dur(cfg.TimerResolution))
	}
	w("")
	w("events {")
	w("    worker_connections %d;", conns)
	w("}")
	w("")
	w("http {")
	w("    access_log off;")
	w("    client_body_temp_path %s;", p(nginxTempDir, "client_body"))
	w("    proxy_temp_path %s;", p(nginxTempDir, "proxy"))
	for _, m := range []string{"fastcgi", "uwsgi", "scgi"} {
		if !l.Without["http_"+m+"_module"] {
			w("    %s_temp_path %s;", m, p(nginxTempDir, m))
		}
	}
	w("")
	b.WriteString(nginxLogFormat(cfg.Zones))
	w("")
	for _, z := range cfg.Zones {
		w("    limit_req_zone %s zone=%s:%s rate=%s;", zoneKey(z), z.Name, zoneSize(z), z.Rate)
	}
	if len(cfg.Zones) > 0 {
		w("")
	}
	w("    upstream %s {", NginxUpstreamGroup)
	for _, s := range cfg.Upstreams {
		line := "server " + s.Addr
		if s.Weight > 0 {
			line += " weight=" + strconv.Itoa(s.Weight)
		}
		if s.MaxFails != nil {
			line += " max_fails=" + strconv.Itoa(*s.MaxFails)
		}
		if s.FailTimeout != 0 {
			line += " fail_timeout=" + dur(s.FailTimeout)
		}
		if s.Backup {
			line += " backup"
		}
		w("        %s;", line)
	}
	if cfg.UpstreamKeepalive > 0 {
		w("        keepalive %d;", cfg.UpstreamKeepalive)
	}
	w("    }")
	w("")
	w("    server {")
	w("        listen 127.0.0.1:%d;", l.Port)
	w("        access_log %s %s;", p(nginxLogsDir, nginxAccessLogName), NginxLogFormat)
	w("        add_header %s $limit_req_status always;", NginxLimitReqStatusHeader)
	w("")
	w("        location / {")
	for _, lr := range cfg.LimitReq {
		line := "limit_req zone=" + lr.Zone
		if lr.Burst > 0 {
			line += " burst=" + strconv.Itoa(lr.Burst)
		}
		switch {
		case lr.NoDelay:
			line += " nodelay"
		case lr.Delay > 0:
			line += " delay=" + strconv.Itoa(lr.Delay)
		}
		w("            %s;", line)
	}
	if cfg.LimitReqStatus != 0 {
		w("            limit_req_status %d;", cfg.LimitReqStatus)
	}
	if cfg.LimitReqLogLevel != "" {
		w("            limit_req_log_level %s;", cfg.LimitReqLogLevel)
	}
	if cfg.LimitReqDryRun {
		w("            limit_req_dry_run on;")
	}
	if len(cfg.NextUpstream) > 0 {
		w("            proxy_next_upstream %s;", strings.Join(cfg.NextUpstream, " "))
	}
	if cfg.NextUpstreamTries != 0 {
		w("            proxy_next_upstream_tries %d;", cfg.NextUpstreamTries)
	}
	for _, d := range cfg.proxyTimeouts() {
		if d.v != 0 {
			w("            %s %s;", d.directive, dur(d.v))
		}
	}
	if cfg.UpstreamKeepalive > 0 {
		w("            proxy_http_version 1.1;")
		w(`            proxy_set_header Connection "";`)
	}
	w("            proxy_pass http://%s;", NginxUpstreamGroup)
	w("        }")
	w("    }")
	w("")
	w("    server {")
	w("        listen 127.0.0.1:%d;", l.StatusPort)
	w("        access_log %s %s;", p(nginxLogsDir, nginxStatusLogName), NginxLogFormat)
	w("        location = %s {", NginxStubStatusPath)
	w("            stub_status;")
	w("        }")
	w("    }")
	w("}")
	return []byte(b.String()), nil
}
