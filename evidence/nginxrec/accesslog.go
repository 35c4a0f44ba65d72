package nginxrec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Values of $limit_req_status (nginx 1.17.6, ngx_http_limit_req_status in ngx_http_limit_req_module.c). An
// undelayed admission under nodelay or delay=N is PASSED. The variable is not found, logged as "" under
// escape=json and read as LimitReqNone, when no limit_req ran for the request or its key was empty.
const (
	LimitReqPassed         = "PASSED"
	LimitReqDelayed        = "DELAYED"
	LimitReqRejected       = "REJECTED"
	LimitReqDelayedDryRun  = "DELAYED_DRY_RUN"
	LimitReqRejectedDryRun = "REJECTED_DRY_RUN"
	LimitReqNone           = ""
)

// AccessRecord is one request of an nginx JSON access log, as rlbench's log_format writes it (see
// internal/realparts.RenderNginxConf), and as a line of the evidence file evidence.NginxAccessFile. Values nginx
// logged as "" or "-" (not found) are zero or nil.
type AccessRecord struct {
	// Line is the 1-based line number in the source log.
	Line int `json:"line"`
	// ID is the X-Rlbench-Id request header ($http_x_rlbench_id); "" when the request had none.
	ID string `json:"id,omitempty"`
	// Status is the response status ($status); 0 when nginx logged "000" (no status was set).
	Status int `json:"status"`
	// Method and URI are $request_method and $request_uri.
	Method string `json:"method,omitempty"`
	URI    string `json:"uri,omitempty"`
	// TimeMs is $msec in unix milliseconds: when nginx wrote the log line, i.e. when the request ended, read from
	// nginx's cached clock (exact to the ms, as nginx prints it). 0 when absent.
	TimeMs int64 `json:"time_ms,omitempty"`
	// RequestTimeMs is $request_time in ms: from the request's creation to the log line; nil when absent.
	RequestTimeMs *int64 `json:"request_time_ms,omitempty"`
	// LimitReqStatus is $limit_req_status, one of the LimitReq* constants (other values are a parse error);
	// LimitReqNone when not found.
	LimitReqStatus string `json:"limit_req_status,omitempty"`
	// Upstreams has one entry per upstream try, in order ($upstream_addr, $upstream_status and
	// $upstream_response_time read together); empty when the request was not proxied (e.g. rejected).
	Upstreams []UpstreamTry `json:"upstreams,omitempty"`
	// Connection is $connection, the connection serial number; the error log's "*N" names the same number.
	Connection int64 `json:"connection,omitempty"`
	// RemoteAddr is $remote_addr.
	RemoteAddr string `json:"remote_addr,omitempty"`
	// Pid is $pid, the process ID of the worker that served the request (an embedded variable of the core module,
	// https://nginx.org/en/docs/ngx_core_module.html#variables); 0 when absent.
	// Each worker decides limit_req on its own cached clock (ngx_current_msec, updated when its event loop wakes:
	// src/core/ngx_times.c ngx_time_update), so with several workers the logged times are not the order of the
	// decisions; Pid tells the workers apart.
	Pid int64 `json:"pid,omitempty"`
	// Keys maps each limit_req zone name to the request's key in that zone, when the log format records them.
	Keys map[string]string `json:"keys,omitempty"`
}

// UpstreamTry is one entry of the $upstream_* lists: one try to pass the request to an upstream server.
type UpstreamTry struct {
	// Addr is the server's address (IP:port, [IPv6]:port or unix:path), or the upstream group's name when nginx
	// found no usable server (it then logs "no live upstreams" and records status 502 without connecting).
	Addr string `json:"addr"`
	// Server is true when Addr is a server address, false for a group name: only a server try can have reached a
	// backend (a connect() failure is a server try that did not; see ErrorLog.ConnectFailed).
	Server bool `json:"server"`
	// Status is the try's $upstream_status entry: the upstream's status, or 502 (error) / 504 (timeout) recorded by
	// nginx for a failed try; 0 when nginx logged "-" (no status, e.g. the client went away first).
	Status int `json:"status,omitempty"`
	// ResponseTimeMs is the try's $upstream_response_time entry in ms; nil when nginx logged "-".
	ResponseTimeMs *int64 `json:"response_time_ms,omitempty"`
	// Group counts the internal redirects before this try: entries separated by " : " belong to different
	// upstream groups (0 for the first).
	Group int `json:"group,omitempty"`
}

// AcceptMs is when nginx began the request by its own cached clock, unix ms: $msec minus $request_time (the time
// from the first bytes read from the client to the log write, https://nginx.org/en/docs/http/ngx_http_log_module.html).
// limit_req decides in the preaccess phase from the same cached clock (ngx_current_msec), so this is the time the
// limiter saw, to the millisecond. ok is false when either variable is absent.
func (a AccessRecord) AcceptMs() (ms int64, ok bool) {
	if a.TimeMs == 0 || a.RequestTimeMs == nil || *a.RequestTimeMs < 0 || *a.RequestTimeMs > a.TimeMs {
		return 0, false
	}
	return a.TimeMs - *a.RequestTimeMs, true
}

// ForwardMs is when nginx passed the request to its first upstream server, unix ms on its cached clock: $msec minus
// the sum of the tries' $upstream_response_time (each the time from the try's start to the end of its response:
// https://nginx.org/en/docs/http/ngx_http_upstream_module.html#var_upstream_response_time). Time between the tries
// and between the last response and the log write only makes it later than the real forward, never earlier. ok is
// false without $msec, without a try that went to a server (not a request nginx forwarded), or when a try's time was
// not logged ("-").
func (a AccessRecord) ForwardMs() (ms int64, ok bool) {
	if a.TimeMs <= 0 || a.ServerTries() == 0 {
		return 0, false
	}
	sum := int64(0)
	for _, u := range a.Upstreams {
		if u.ResponseTimeMs == nil {
			return 0, false
		}
		sum += *u.ResponseTimeMs
	}
	return a.TimeMs - sum, true
}

// Tries is the number of upstream tries nginx made for the request (entries of $upstream_addr).
func (a AccessRecord) Tries() int { return len(a.Upstreams) }

// ServerTries is the number of tries that went to a server address (not a group name): an upper bound of the
// upstream receipts the request caused.
func (a AccessRecord) ServerTries() int {
	n := 0
	for _, u := range a.Upstreams {
		if u.Server {
			n++
		}
	}
	return n
}

// Retries is Tries()-1 for a proxied request (the tries after the first, made by proxy_next_upstream), else 0.
func (a AccessRecord) Retries() int { return max(len(a.Upstreams)-1, 0) }

// PassedLimiter reports whether limit_req let the request through: $limit_req_status PASSED or DELAYED, or any
// dry-run value (dry run rejects nothing). A request no limit_req looked at (LimitReqNone) is false.
func (a AccessRecord) PassedLimiter() bool {
	switch a.LimitReqStatus {
	case LimitReqPassed, LimitReqDelayed, LimitReqDelayedDryRun, LimitReqRejectedDryRun:
		return true
	}
	return false
}

// maxAccessLine bounds one access log line.
const maxAccessLine = 16 << 20

// ParseAccessLog reads a JSON access log from r (name is used in errors, "<name>:<line>: ...") and returns its
// records in order. See ReadAccessLog.
func ParseAccessLog(r io.Reader, name string) ([]AccessRecord, error) {
	var out []AccessRecord
	err := ReadAccessLog(r, name, func(a AccessRecord) error {
		out = append(out, a)
		return nil
	})
	return out, err
}

// ReadAccessLog reads a JSON access log from r and calls fn with each record in order; an error from fn stops the
// read and is returned. Each non-blank line must be one JSON object (log_format escape=json). Keys are rlbench's
// (id, status, upstream_status, upstream_addr, request_time, upstream_response_time, limit_req_status, msec,
// method, uri, connection, remote_addr, pid, keys) or the nginx variable names (request_method, request_uri,
// http_x_rlbench_id); other keys are ignored. Values may be JSON strings or numbers; "" and "-" are absent. An
// unquoted "status":000 (what `"status":$status` gives for a request without status) is read as 0.
// The $upstream_* lists are split on ", " (tries) and " : " (internal redirects), and must agree in shape.
// A line that is not such an object, or a value that does not parse, is an error naming the line.
func ReadAccessLog(r io.Reader, name string, fn func(AccessRecord) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAccessLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		a, err := parseAccessLine(line)
		if err != nil {
			return lineErr(name, lineNo, "%v", err)
		}
		a.Line = lineNo
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return lineErr(name, lineNo+1, "line longer than %d bytes", maxAccessLine)
		}
		return lineErr(name, lineNo+1, "read: %v", err)
	}
	return nil
}

// rawAccess holds the known keys of one line; encoding/json matches keys case-insensitively.
type rawAccess struct {
	ID             json.RawMessage `json:"id"`
	HTTPID         json.RawMessage `json:"http_x_rlbench_id"`
	Status         json.RawMessage `json:"status"`
	UpstreamStatus json.RawMessage `json:"upstream_status"`
	UpstreamAddr   json.RawMessage `json:"upstream_addr"`
	RequestTime    json.RawMessage `json:"request_time"`
	UpstreamTime   json.RawMessage `json:"upstream_response_time"`
	LimitReq       json.RawMessage `json:"limit_req_status"`
	Msec           json.RawMessage `json:"msec"`
	Method         json.RawMessage `json:"method"`
	RequestMethod  json.RawMessage `json:"request_method"`
	URI            json.RawMessage `json:"uri"`
	RequestURI     json.RawMessage `json:"request_uri"`
	Connection     json.RawMessage `json:"connection"`
	RemoteAddr     json.RawMessage `json:"remote_addr"`
	Pid            json.RawMessage `json:"pid"`
	Keys           json.RawMessage `json:"keys"`
}

// statusZeros matches an unquoted status with leading zeros ("status":000) at a key position.
var statusZeros = regexp.MustCompile(`([{,]\s*"status"\s*:\s*)0+([0-9])`)

func parseAccessLine(line []byte) (AccessRecord, error) {
	var a AccessRecord
	if line[0] != '{' {
		return a, fmt.Errorf("not a JSON object (want log_format ... escape=json): %q", clip(string(line)))
	}
	var raw rawAccess
	if err := json.Unmarshal(line, &raw); err != nil {
		fixed := statusZeros.ReplaceAll(line, []byte("${1}${2}"))
		if bytes.Equal(fixed, line) || json.Unmarshal(fixed, &raw) != nil {
			return a, fmt.Errorf("invalid JSON (is the log_format escape=json?): %v", err)
		}
	}
	var err error
	pick := func(key string, vs ...json.RawMessage) (string, error) {
		for _, v := range vs {
			s, ok, err := text(v)
			if err != nil {
				return "", fmt.Errorf("key %q: %v", key, err)
			}
			if ok {
				return s, nil
			}
		}
		return "", nil
	}
	set := func(dst *string, key string, vs ...json.RawMessage) {
		if err == nil {
			*dst, err = pick(key, vs...)
		}
	}
	var status, reqTime, msec, conn, pid, ustatus, uaddr, utime string
	set(&a.ID, "id", raw.ID, raw.HTTPID)
	set(&status, "status", raw.Status)
	set(&a.Method, "method", raw.Method, raw.RequestMethod)
	set(&a.URI, "uri", raw.URI, raw.RequestURI)
	set(&a.LimitReqStatus, "limit_req_status", raw.LimitReq)
	set(&a.RemoteAddr, "remote_addr", raw.RemoteAddr)
	set(&reqTime, "request_time", raw.RequestTime)
	set(&msec, "msec", raw.Msec)
	set(&conn, "connection", raw.Connection)
	set(&pid, "pid", raw.Pid)
	set(&ustatus, "upstream_status", raw.UpstreamStatus)
	set(&uaddr, "upstream_addr", raw.UpstreamAddr)
	set(&utime, "upstream_response_time", raw.UpstreamTime)
	if err != nil {
		return a, err
	}
	switch a.LimitReqStatus {
	case LimitReqNone, LimitReqPassed, LimitReqDelayed, LimitReqRejected, LimitReqDelayedDryRun, LimitReqRejectedDryRun:
	default:
		return a, fmt.Errorf("key \"limit_req_status\": %q is not a $limit_req_status value (PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN)", clip(a.LimitReqStatus))
	}
	if status != "" {
		n, perr := strconv.ParseUint(status, 10, 16)
		if perr != nil || n > 999 {
			return a, fmt.Errorf("key \"status\": %q is not an HTTP status", status)
		}
		a.Status = int(n)
	}
	if reqTime != "" {
		ms, perr := ParseMillis(reqTime)
		if perr != nil {
			return a, fmt.Errorf("key \"request_time\": %v", perr)
		}
		a.RequestTimeMs = &ms
	}
	if msec != "" {
		if a.TimeMs, err = ParseMillis(msec); err != nil {
			return a, fmt.Errorf("key \"msec\": %v", err)
		}
	}
	if conn != "" {
		if a.Connection, err = strconv.ParseInt(conn, 10, 64); err != nil || a.Connection < 0 {
			return a, fmt.Errorf("key \"connection\": %q is not a connection number", conn)
		}
	}
	if pid != "" {
		if a.Pid, err = strconv.ParseInt(pid, 10, 64); err != nil || a.Pid <= 0 {
			return a, fmt.Errorf("key \"pid\": %q is not a process ID", pid)
		}
	}
	if len(raw.Keys) > 0 && !bytes.Equal(raw.Keys, []byte("null")) {
		if err := json.Unmarshal(raw.Keys, &a.Keys); err != nil {
			return a, fmt.Errorf("key \"keys\": want an object of strings: %v", err)
		}
	}
	if a.Upstreams, err = upstreamTries(uaddr, ustatus, utime); err != nil {
		return a, err
	}
	return a, nil
}

// text returns a JSON string's or number's text; ok is false for an absent value, null, "" and "-".
func text(v json.RawMessage) (s string, ok bool, err error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || bytes.Equal(v, []byte("null")) {
		return "", false, nil
	}
	switch v[0] {
	case '"':
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s = string(v)
	default:
		return "", false, fmt.Errorf("want a string or a number, got %s", clip(string(v)))
	}
	s = strings.TrimSpace(s)
	if s == "" || s == "-" {
		return "", false, nil
	}
	return s, true, nil
}

// ParseMillis parses nginx's seconds-with-milliseconds text ("%T.%03M": "0.301", "1796115530.382"; also "12" or
// fewer decimals) into integer milliseconds, exactly; digits after the third decimal are truncated. Negative, empty
// or non-decimal text is an error.
func ParseMillis(s string) (int64, error) {
	secs, frac, _ := strings.Cut(s, ".")
	if secs == "" || strings.Trim(secs, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || len(secs) > 12 {
		return 0, fmt.Errorf("%q is not a time in seconds", s)
	}
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a time in seconds", s)
	}
	ms := n * 1000
	for i, scale := 0, int64(100); i < 3 && i < len(frac); i, scale = i+1, scale/10 {
		ms += int64(frac[i]-'0') * scale
	}
	return ms, nil
}

// splitUpstream splits an $upstream_* value into groups (" : ", an internal redirect) of tries (", ").
func splitUpstream(s string) [][]string {
	if s == "" {
		return nil
	}
	groups := strings.Split(s, " : ")
	out := make([][]string, len(groups))
	for i, g := range groups {
		out[i] = strings.Split(g, ", ")
	}
	return out
}

// upstreamTries combines $upstream_addr, $upstream_status and $upstream_response_time, which nginx builds from one
// list of states and therefore have the same shape. Any of them may be absent from the log format; those present
// must agree.
func upstreamTries(addr, status, rtime string) ([]UpstreamTry, error) {
	lists := []struct {
		key    string
		groups [][]string
	}{{"upstream_addr", splitUpstream(addr)}, {"upstream_status", splitUpstream(status)},
		{"upstream_response_time", splitUpstream(rtime)}}
	var shape [][]string
	shapeKey := ""
	for _, l := range lists {
		if l.groups == nil {
			continue
		}
		if shape == nil {
			shape, shapeKey = l.groups, l.key
			continue
		}
		same := len(l.groups) == len(shape)
		for i := 0; same && i < len(shape); i++ {
			same = len(l.groups[i]) == len(shape[i])
		}
		if !same {
			return nil, fmt.Errorf("keys %q and %q: different numbers of upstream tries (%q vs %q)", shapeKey, l.key,
				joinUpstream(shape), joinUpstream(l.groups))
		}
	}
	if shape == nil {
		return nil, nil
	}
	var out []UpstreamTry
	for g, tries := range shape {
		for i := range tries {
			t := UpstreamTry{Group: g}
			if a := lists[0].groups; a != nil {
				t.Addr = a[g][i]
				t.Server = IsServerAddr(t.Addr)
			}
			if st := lists[1].groups; st != nil && st[g][i] != "-" {
				n, err := strconv.ParseUint(st[g][i], 10, 16)
				if err != nil || n > 999 {
					return nil, fmt.Errorf("key \"upstream_status\": entry %q is not an HTTP status", st[g][i])
				}
				t.Status = int(n)
			}
			if rt := lists[2].groups; rt != nil && rt[g][i] != "-" {
				ms, err := ParseMillis(rt[g][i])
				if err != nil {
					return nil, fmt.Errorf("key \"upstream_response_time\": entry %v", err)
				}
				t.ResponseTimeMs = &ms
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func joinUpstream(groups [][]string) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = strings.Join(g, ", ")
	}
	return strings.Join(parts, " : ")
}

// IsServerAddr reports whether an $upstream_addr entry is a server address (IP:port, [IPv6]:port, or unix:path)
// rather than an upstream group name, which nginx writes when no server could be chosen.
func IsServerAddr(s string) bool {
	if strings.HasPrefix(s, "unix:") {
		return len(s) > len("unix:")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || net.ParseIP(host) == nil {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p > 0 && p <= 65535
}

// AccessSummary counts an access log's records.
type AccessSummary struct {
	// Requests is the number of records.
	Requests int `json:"requests"`
	// ByStatus counts $status values (key "0" for "000").
	ByStatus map[int]int `json:"by_status"`
	// ByLimitReqStatus counts $limit_req_status values; requests without one are under "none".
	ByLimitReqStatus map[string]int `json:"by_limit_req_status"`
	// Proxied counts requests with at least one upstream try; Retried those with more than one.
	Proxied int `json:"proxied"`
	Retried int `json:"retried"`
	// Tries and ServerTries sum AccessRecord.Tries and ServerTries.
	Tries       int `json:"tries"`
	ServerTries int `json:"server_tries"`
	// TriesByAddr counts the tries per $upstream_addr entry (servers and group names).
	TriesByAddr map[string]int `json:"tries_by_addr"`
	// IDs counts records carrying an X-Rlbench-Id; DuplicateIDs lists IDs logged more than once, sorted.
	IDs          int      `json:"ids"`
	DuplicateIDs []string `json:"duplicate_ids,omitempty"`
}

// LimitReqNoneKey is the AccessSummary.ByLimitReqStatus key of requests without $limit_req_status.
const LimitReqNoneKey = "none"

// Summarize counts records.
func Summarize(recs []AccessRecord) AccessSummary {
	s := AccessSummary{ByStatus: map[int]int{}, ByLimitReqStatus: map[string]int{}, TriesByAddr: map[string]int{}}
	seen := map[string]int{}
	for _, a := range recs {
		s.Requests++
		s.ByStatus[a.Status]++
		k := a.LimitReqStatus
		if k == LimitReqNone {
			k = LimitReqNoneKey
		}
		s.ByLimitReqStatus[k]++
		if len(a.Upstreams) > 0 {
			s.Proxied++
		}
		if len(a.Upstreams) > 1 {
			s.Retried++
		}
		s.Tries += a.Tries()
		s.ServerTries += a.ServerTries()
		for _, u := range a.Upstreams {
			s.TriesByAddr[u.Addr]++
		}
		if a.ID != "" {
			s.IDs++
			seen[a.ID]++
			if seen[a.ID] == 2 {
				s.DuplicateIDs = append(s.DuplicateIDs, a.ID)
			}
		}
	}
	sort.Strings(s.DuplicateIDs)
	return s
}
