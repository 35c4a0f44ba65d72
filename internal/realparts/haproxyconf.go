package realparts

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// HAProxy stick-table key types (the stick-table "type" argument,
// https://docs.haproxy.org/2.6/configuration.html#4-stick-table).
const (
	// HAProxyKeyIP tracks the client's source address (track-sc0 src).
	HAProxyKeyIP = "ip"
	// HAProxyKeyString tracks a request header's value (track-sc0 req.hdr(<name>)).
	HAProxyKeyString = "string"
)

// Names used in the rendered HAProxy configuration.
const (
	// HAProxyFrontend and HAProxyBackend are the proxy sections' names; the stick table is the frontend's own.
	HAProxyFrontend = "fe"
	HAProxyBackend  = "be"
	// HAProxyLimiterHeader is the header every deny response of the rate limit rule carries, with the value
	// HAProxyLimiterValue ("hdr" of http-request deny), so a client tells HAProxy's 429 from a backend's.
	HAProxyLimiterHeader = "X-Rlbench-Limiter"
	HAProxyLimiterValue  = "haproxy-stick-table"
	// HAProxyStringKeyLen is the stick table's key length ("len") for a string key: longer header values are
	// truncated by HAProxy to this many bytes before lookup.
	HAProxyStringKeyLen = 64
	// haproxyIDCaptureLen is the captured request ID's length.
	haproxyIDCaptureLen = 128
)

// HAProxyConfig is what a private HAProxy (StartHAProxy) runs: one HTTP frontend on a loopback port with a stick
// table that counts every tracked request in http_req_rate(Period) (http-request track-sc0 counts the request
// when tracking starts, before any later rule: src/http_act.c http_action_track_sc) and denies with DenyStatus
// when sc_http_req_rate(0) is greater than Limit; admitted requests go to the servers of one backend (round
// robin). One thread (nbthread 1): requests are decided in the order HAProxy reads them. Its log (one JSON line
// per request, see HAProxyLogFormat) goes to standard output.
type HAProxyConfig struct {
	// Limit is the largest sc_http_req_rate(0) admitted: a request is denied when the rate, its own count
	// included, is greater than Limit ("gt"). At least 1.
	Limit int
	// Period is http_req_rate's period, whole milliseconds (HAProxy's ticks), at least 1 ms.
	Period time.Duration
	// KeyType is HAProxyKeyIP (track src) or HAProxyKeyString (track req.hdr(Header)); empty means ip.
	KeyType string
	// Header is the request header whose value is the key of a string table; requests without it are not
	// tracked (track-sc0 finds no key) and so never denied.
	Header string
	// Size is the stick table's size (entries), e.g. "100k"; empty means "100k".
	Size string
	// Expire is how long an idle entry lives; 0 means twice Period (an entry that expires forgets its previous
	// period, so it must outlive two periods for the counter to be freq_ctr's). Whole milliseconds.
	Expire time.Duration
	// DenyStatus is the deny rule's status; 0 means 429.
	DenyStatus int
	// Servers are the backend's server addresses, host:port with host an IPv4 or IPv6 literal; at least one.
	Servers []string
	// Timeout bounds connect, client and server timeouts; 0 means 30s.
	Timeout time.Duration
	// ClockLua is the path of a Lua file (HAProxyClockLua) that the config loads (lua-load) to log HAProxy's
	// internal clock, now_ms, at the rule: the clock its freq_ctr reads, which HAProxy moves off the system date
	// when it detects a clock jump (src/clock.c clock_update_date: a poll that returned before its timeout
	// without events, or more than 100 ms after it). Empty: no such field (a build without Lua).
	ClockLua string
}

// HAProxyClockFetch is the Lua sample fetch HAProxyClockLua registers: core.now() (HAProxy's internal "now",
// src/hlua_fcn.c hlua_now) in ms, as now_ms is computed from it (src/clock.c: now.tv_sec * 1000 +
// now.tv_usec / 1000; HAProxy keeps it in 32 bits, which changes no difference nor parity).
const HAProxyClockFetch = "rlbench_now_ms"

// HAProxyClockLua is the Lua file of ClockLua.
const HAProxyClockLua = `-- rendered by rlbench (internal/realparts): HAProxy's internal clock in ms, the one its freq_ctr reads
core.register_fetches("` + HAProxyClockFetch + `", function(txn)
  local n = core.now()
  return n.sec * 1000 + n.usec // 1000
end)
`

var (
	haproxySizeRE   = regexp.MustCompile(`^[0-9]+[kKmMgG]?$`)
	haproxyHeaderRE = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_` + "`" + `|~-]+$`)
)

// Validate checks the config; it returns every problem joined, each naming its HAProxyConfig field. haproxy -c
// (run by StartHAProxy) checks the rest.
func (c HAProxyConfig) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, errors.New("HAProxyConfig."+fmt.Sprintf(format, a...)))
	}
	if c.Limit < 1 {
		bad("Limit %d: must be at least 1", c.Limit)
	}
	if c.Period < time.Millisecond || c.Period%time.Millisecond != 0 {
		bad("Period %v: want a positive whole number of milliseconds", c.Period)
	}
	switch c.KeyType {
	case "", HAProxyKeyIP:
		if c.Header != "" {
			bad("Header %q: only with KeyType %q", c.Header, HAProxyKeyString)
		}
	case HAProxyKeyString:
		if !haproxyHeaderRE.MatchString(c.Header) {
			bad("Header %q: want a header name (token characters)", c.Header)
		}
	default:
		bad("KeyType %q: want %q or %q", c.KeyType, HAProxyKeyIP, HAProxyKeyString)
	}
	if c.Size != "" && !haproxySizeRE.MatchString(c.Size) {
		bad("Size %q: want digits with an optional k, m or g", c.Size)
	}
	if c.Expire != 0 && (c.Expire%time.Millisecond != 0 || c.Expire < 2*c.Period) {
		bad("Expire %v: want whole milliseconds, at least twice Period (%v): an entry that expires sooner forgets the previous period freq_ctr still weighs", c.Expire, c.Period)
	}
	if c.DenyStatus != 0 && (c.DenyStatus < 200 || c.DenyStatus > 599) {
		bad("DenyStatus %d: want 200..599", c.DenyStatus)
	}
	if len(c.Servers) == 0 {
		bad("Servers: at least one backend server")
	}
	for i, s := range c.Servers {
		host, port, err := net.SplitHostPort(s)
		if err != nil || net.ParseIP(host) == nil {
			bad("Servers[%d] %q: want IP:port", i, s)
			continue
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			bad("Servers[%d] %q: bad port", i, s)
		}
	}
	if strings.ContainsAny(c.ClockLua, " \t\r\n\"'\\#") {
		bad("ClockLua %q: a path without white space, quotes, backslashes or '#'", c.ClockLua)
	}
	if c.Timeout < 0 || c.Timeout%time.Millisecond != 0 {
		bad("Timeout %v: want whole milliseconds", c.Timeout)
	}
	return errors.Join(errs...)
}

// haproxyMs renders d as HAProxy's time "<n>ms".
func haproxyMs(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }

// HAProxyLogFields are the keys of one line of the log HAProxyLogFormat renders, with the log-format variables
// they come from (https://docs.haproxy.org/2.6/configuration.html#8.2.4); every value is a JSON string ("-"
// when HAProxy has none):
//   - id: the request's X-Rlbench-Id (http-request capture, before any deny);
//   - accept_s, accept_ms: %Ts and %ms, the accept date (unix seconds, milliseconds part);
//   - now_ms: HAProxy's internal clock at the rule (ClockLua; "-" without it), the clock its freq_ctr read;
//   - decide_us: date(0,us) sampled by the rule right after track-sc0, HAProxy's cached date of the poll loop
//     that evaluated the rule (the clock its freq_ctr used, to the ms);
//   - rate: sc_http_req_rate(0) as the deny rule read it, the request itself counted;
//   - key: the tracked key (src or the header's value);
//   - status %ST, term %ts (termination state, "PR--" for a deny), th %Th, ti %Ti, treq %TR, tw %Tw, tc %Tc,
//     tr %Tr, ta %Ta, tt %Tt (ms; -1: the step did not happen), backend %b, server %s, method %HM, rt %rt
//     (request counter), cp %cp (client port).
var HAProxyLogFields = []string{"id", "accept_s", "accept_ms", "now_ms", "decide_us", "rate", "key", "status", "term", "th", "ti",
	"treq", "tw", "tc", "tr", "ta", "tt", "backend", "server", "method", "rt", "cp"}

// haproxyLogVars are the log-format expressions of HAProxyLogFields, in order.
var haproxyLogVars = []string{"%[capture.req.hdr(0),json(utf8s)]", "%Ts", "%ms", "%[var(txn.rl_now)]", "%[var(txn.rl_us)]",
	"%[var(txn.rl_rate)]", "%[var(txn.rl_key),json(utf8s)]", "%ST", "%ts", "%Th", "%Ti", "%TR", "%Tw", "%Tc", "%Tr",
	"%Ta", "%Tt", "%b", "%s", "%HM", "%rt", "%cp"}

// HAProxyLogFormat is the frontend's log-format: one JSON object per request, every value a string (see
// HAProxyLogFields), quoted for the config file.
func HAProxyLogFormat() string {
	var b strings.Builder
	b.WriteString(`"{`)
	for i, k := range HAProxyLogFields {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`\"` + k + `\":\"` + haproxyLogVars[i] + `\"`)
	}
	b.WriteString(`}"`)
	return b.String()
}

// trackExpr is the track-sc0 key expression.
func (c HAProxyConfig) trackExpr() string {
	if c.KeyType == HAProxyKeyString {
		return "req.hdr(" + strings.ToLower(c.Header) + ")"
	}
	return "src"
}

// RenderHAProxyConf validates cfg and renders the configuration of a HAProxy listening on 127.0.0.1:port, e.g.
// for Limit 10, Period 1s, an ip key:
//
//	frontend fe
//	    bind 127.0.0.1:PORT
//	    stick-table type ip size 100k expire 2000ms store http_req_rate(1000ms)
//	    http-request capture req.hdr(X-Rlbench-Id) len 128
//	    http-request track-sc0 src
//	    http-request set-var(txn.rl_us) date(0,us)
//	    http-request set-var(txn.rl_rate) sc_http_req_rate(0)
//	    http-request set-var(txn.rl_key) src
//	    http-request deny deny_status 429 hdr X-Rlbench-Limiter haproxy-stick-table if { sc_http_req_rate(0) gt 10 }
//	    default_backend be
func RenderHAProxyConf(cfg HAProxyConfig, port int) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("realparts: HAProxy port %d: want 1..65535", port)
	}
	keyType, size, expire, status, timeout := cfg.KeyType, cfg.Size, cfg.Expire, cfg.DenyStatus, cfg.Timeout
	if keyType == "" {
		keyType = HAProxyKeyIP
	}
	if size == "" {
		size = "100k"
	}
	if expire == 0 {
		expire = 2 * cfg.Period
	}
	if status == 0 {
		status = 429
	}
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	table := "type " + keyType
	if keyType == HAProxyKeyString {
		table += " len " + strconv.Itoa(HAProxyStringKeyLen)
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("# rendered by rlbench (internal/realparts RenderHAProxyConf)")
	w("global")
	w("    nbthread 1")
	w("    maxconn 4096")
	if cfg.ClockLua != "" {
		w("    lua-load %s", cfg.ClockLua)
	}
	w("")
	w("defaults")
	w("    mode http")
	w("    timeout connect %s", haproxyMs(timeout))
	w("    timeout client %s", haproxyMs(timeout))
	w("    timeout server %s", haproxyMs(timeout))
	w("")
	w("frontend %s", HAProxyFrontend)
	w("    bind 127.0.0.1:%d", port)
	w("    log stdout format raw local0 info")
	w("    log-format %s", HAProxyLogFormat())
	w("    stick-table %s size %s expire %s store http_req_rate(%s)", table, size, haproxyMs(expire), haproxyMs(cfg.Period))
	w("    http-request capture req.hdr(X-Rlbench-Id) len %d", haproxyIDCaptureLen)
	w("    http-request track-sc0 %s", cfg.trackExpr())
	w("    http-request set-var(txn.rl_us) date(0,us)")
	if cfg.ClockLua != "" {
		w("    http-request set-var(txn.rl_now) lua.%s", HAProxyClockFetch)
	}
	w("    http-request set-var(txn.rl_rate) sc_http_req_rate(0)")
	w("    http-request set-var(txn.rl_key) %s", cfg.trackExpr())
	w("    http-request deny deny_status %d hdr %s %s if { sc_http_req_rate(0) gt %d }", status, HAProxyLimiterHeader, HAProxyLimiterValue, cfg.Limit)
	w("    default_backend %s", HAProxyBackend)
	w("")
	w("backend %s", HAProxyBackend)
	w("    balance roundrobin")
	for i, s := range cfg.Servers {
		w("    server s%d %s", i, s)
	}
	return []byte(b.String()), nil
}
