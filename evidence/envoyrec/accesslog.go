package envoyrec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// AccessLogEntry is one parsed Envoy HTTP access log line. Text fields that
// Envoy rendered as "-" (absent) are "".
type AccessLogEntry struct {
	// Line is the 1-based line number in the source.
	Line int `json:"line"`
	// Time is %START_TIME% (zero when absent or not in a recognised format);
	// StartTime keeps the text as logged.
	Time      time.Time `json:"time"`
	StartTime string    `json:"start_time,omitempty"`
	Method    string    `json:"method,omitempty"`
	Path      string    `json:"path,omitempty"`
	Protocol  string    `json:"protocol,omitempty"`
	// Code is %RESPONSE_CODE%; 0 means no response was sent (e.g. reset).
	Code int `json:"code"`
	// Flags are %RESPONSE_FLAGS% in short form ("RL", "UO", ...); long forms
	// (%RESPONSE_FLAGS_LONG%, e.g. "RateLimited") are mapped to short ones.
	// nil when Envoy logged "-".
	Flags []string `json:"flags,omitempty"`
	// CodeDetails is %RESPONSE_CODE_DETAILS%, e.g. "local_rate_limited",
	// "request_rate_limited", "rate_limiter_error", "via_upstream".
	CodeDetails string `json:"code_details,omitempty"`
	// RequestID is %REQ(X-REQUEST-ID)%.
	RequestID string `json:"request_id,omitempty"`
	// RlbenchID is the X-Rlbench-Id request header, when the log format records it.
	RlbenchID    string `json:"rlbench_id,omitempty"`
	Authority    string `json:"authority,omitempty"`
	UserAgent    string `json:"user_agent,omitempty"`
	UpstreamHost string `json:"upstream_host,omitempty"`
	// UpstreamCluster is %UPSTREAM_CLUSTER% (Istio format and JSON logs only).
	UpstreamCluster string `json:"upstream_cluster,omitempty"`
	// DurationMs is %DURATION% in ms; nil when absent.
	DurationMs    *int64 `json:"duration_ms,omitempty"`
	BytesReceived uint64 `json:"bytes_received"`
	BytesSent     uint64 `json:"bytes_sent"`
	// The proxy's own times of the request, unix ns, read from JSON lines
	// that carry them (rlbench's lab proxy, internal/lab/proxy, writes
	// them; Envoy's own formats have no such operators); 0 when absent:
	// StartNs when it had read the request, LocalNs when its local token
	// bucket decided it (the time the bucket refilled to), RLSStartNs and
	// RLSEndNs when its call to the rate limit service left and when the
	// answer came or the call failed, UpstreamStartNs when it began writing
	// the request upstream (the forward).
	StartNs         int64 `json:"start_ns,omitempty"`
	LocalNs         int64 `json:"local_ns,omitempty"`
	RLSStartNs      int64 `json:"rls_start_ns,omitempty"`
	RLSEndNs        int64 `json:"rls_end_ns,omitempty"`
	UpstreamStartNs int64 `json:"upstream_start_ns,omitempty"`
}

// HasFlag reports whether the entry carries the short response flag f.
func (e AccessLogEntry) HasFlag(f string) bool {
	for _, x := range e.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// longFlags maps %RESPONSE_FLAGS_LONG% names to %RESPONSE_FLAGS% short names
// (Envoy source/common/stream_info/utility.h ResponseFlagUtils; DO and DR from
// newer releases).
var longFlags = map[string]string{
	"DownstreamConnectionTermination":  "DC",
	"FailedLocalHealthCheck":           "LH",
	"NoHealthyUpstream":                "UH",
	"UpstreamRequestTimeout":           "UT",
	"LocalReset":                       "LR",
	"UpstreamRemoteReset":              "UR",
	"UpstreamConnectionFailure":        "UF",
	"UpstreamConnectionTermination":    "UC",
	"UpstreamOverflow":                 "UO",
	"UpstreamRetryLimitExceeded":       "URX",
	"NoRouteFound":                     "NR",
	"DelayInjected":                    "DI",
	"FaultInjected":                    "FI",
	"RateLimited":                      "RL",
	"UnauthorizedExternalService":      "UAEX",
	"RateLimitServiceError":            "RLSE",
	"StreamIdleTimeout":                "SI",
	"InvalidEnvoyRequestHeaders":       "IH",
	"DownstreamProtocolError":          "DPE",
	"UpstreamMaxStreamDurationReached": "UMSDR",
	"ResponseFromCacheFilter":          "RFCF",
	"NoFilterConfigFound":              "NFCF",
	"DurationTimeout":                  "DT",
	"UpstreamProtocolError":            "UPE",
	"NoClusterFound":                   "NC",
	"OverloadManagerTerminated":        "OM",
	"OverloadManager":                  "OM",
	"DnsResolutionFailed":              "DF",
	"DropOverload":                     "DO",
	"DownstreamRemoteReset":            "DR",
}

// ShortFlag maps a long response flag name (e.g. "RateLimited") to its short
// form ("RL"); short or unknown names are returned unchanged.
func ShortFlag(f string) string {
	if s, ok := longFlags[f]; ok {
		return s
	}
	return f
}

// ParseFlags splits a %RESPONSE_FLAGS% or %RESPONSE_FLAGS_LONG% value
// ("-", "RL", "UF,URX", "RateLimited") into short flags; "-" and "" give nil.
func ParseFlags(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" || s == "-" {
		return nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && f != "-" {
			out = append(out, ShortFlag(f))
		}
	}
	return out
}

var (
	// Envoy's default format (docs v1.11+; pattern envoy_access_default):
	// [%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS%
	// %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%"
	// "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"
	reAccessDefault = regexp.MustCompile(`^\[(\S+)\] "(\S+) (\S+) (\S+)" (\d{1,3}) (\S+) (\d+) (\d+) (\d+|-) (\S+) "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)"$`)
	// Istio's default format (1.9+): as above plus %RESPONSE_CODE_DETAILS%
	// %CONNECTION_TERMINATION_DETAILS% "%UPSTREAM_TRANSPORT_FAILURE_REASON%"
	// after the flags and %UPSTREAM_CLUSTER% ... after the upstream host.
	reAccessIstio = regexp.MustCompile(`^\[(\S+)\] "(\S+) (\S+) (\S+)" (\d{1,3}) (\S+) (\S+) (\S+) "([^"]*)" (\d+) (\d+) (\d+|-) (\S+) "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)"(?: (\S+))?(?: .*)?$`)
)

// ParseAccessLog parses an Envoy HTTP access log read from r, one entry per
// non-blank line; name is used in errors ("<name>:<line>: ..."). Each line
// may be:
//   - Envoy's default text format (see reAccessDefault; it carries no
//     response code details);
//   - Istio's default text format (adds details and the upstream cluster);
//   - a JSON object (json_format access logs). Keys are user-chosen; these are
//     recognised, case-insensitively (of keys differing only in case the
//     lower-case one, else the first in byte order), first match wins:
//     time: start_time, timestamp, time, @timestamp (RFC 3339 string, or unix
//     s/ms/us/ns number); method: method, request_method, :method; path: path,
//     request_path, x-envoy-original-path, uri, url; protocol;
//     code: response_code, status, status_code, code; flags: response_flags,
//     response_flags_long, flags (string or array); details:
//     response_code_details, code_details, details; request id: x-request-id,
//     x_request_id, request_id, requestid; rlbench id: x-rlbench-id,
//     x_rlbench_id, rlbench_id; upstream_host, upstream; upstream_cluster;
//     authority, :authority, host; user_agent, user-agent;
//     duration, duration_ms; bytes_received; bytes_sent; the lab proxy's
//     times start_ns, local_ns, rls_start_ns, rls_end_ns, upstream_start_ns
//     (unix ns, integers >= 0; 0 or "-" is absent).
//
// Any other line, a line of a text format whose fields do not parse, or a
// JSON line with an unusable value type is an error naming the line.
func ParseAccessLog(r io.Reader, name string) ([]AccessLogEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var out []AccessLogEntry
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e AccessLogEntry
		var err error
		switch {
		case line[0] == '{':
			e, err = parseJSONAccess([]byte(line))
		case line[0] == '[':
			e, err = parseTextAccess(line)
		default:
			err = fmt.Errorf("not an Envoy access log line (want [START_TIME] ... or a JSON object): %q", clip(line))
		}
		if err != nil {
			return nil, lineErr(name, lineNo, "%v", err)
		}
		e.Line = lineNo
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, lineErr(name, lineNo+1, "read: %v", err)
	}
	return out, nil
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

func parseTextAccess(line string) (AccessLogEntry, error) {
	var e AccessLogEntry
	var fields struct {
		start, method, path, proto, code, flags, details, rx, tx, dur, xff, ua, reqID, auth, host, cluster string
	}
	if m := reAccessDefault.FindStringSubmatch(line); m != nil {
		f := &fields
		f.start, f.method, f.path, f.proto, f.code, f.flags = m[1], m[2], m[3], m[4], m[5], m[6]
		f.rx, f.tx, f.dur = m[7], m[8], m[9]
		f.xff, f.ua, f.reqID, f.auth, f.host = m[11], m[12], m[13], m[14], m[15]
	} else if m := reAccessIstio.FindStringSubmatch(line); m != nil {
		f := &fields
		f.start, f.method, f.path, f.proto, f.code, f.flags, f.details = m[1], m[2], m[3], m[4], m[5], m[6], m[7]
		f.rx, f.tx, f.dur = m[10], m[11], m[12]
		f.xff, f.ua, f.reqID, f.auth, f.host, f.cluster = m[14], m[15], m[16], m[17], m[18], m[19]
	} else {
		return e, fmt.Errorf("line does not match Envoy's or Istio's default access log format: %q", clip(line))
	}
	t, err := time.Parse(time.RFC3339Nano, fields.start)
	if err != nil {
		return e, fmt.Errorf("start time %q: %v", fields.start, err)
	}
	e.Time, e.StartTime = t, fields.start
	e.Method, e.Path, e.Protocol = dash(fields.method), dash(fields.path), dash(fields.proto)
	e.Code, _ = strconv.Atoi(fields.code)
	e.Flags = ParseFlags(fields.flags)
	e.CodeDetails = dash(fields.details)
	e.BytesReceived, _ = strconv.ParseUint(fields.rx, 10, 64)
	e.BytesSent, _ = strconv.ParseUint(fields.tx, 10, 64)
	if d, err := strconv.ParseInt(fields.dur, 10, 64); err == nil {
		e.DurationMs = &d
	}
	e.UserAgent, e.RequestID, e.Authority = dash(fields.ua), dash(fields.reqID), dash(fields.auth)
	e.UpstreamHost, e.UpstreamCluster = dash(fields.host), dash(fields.cluster)
	return e, nil
}

func parseJSONAccess(line []byte) (AccessLogEntry, error) {
	var e AccessLogEntry
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return e, fmt.Errorf("invalid JSON access log line: %v", err)
	}
	// Keys match case-insensitively. When several keys of a line differ
	// only in case, the lower-case one wins, else the first in byte order,
	// so that the result does not depend on map iteration order.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lower := make(map[string]any, len(obj))
	for _, k := range keys {
		lk := strings.ToLower(k)
		if _, dup := lower[lk]; !dup || k == lk {
			lower[lk] = obj[k]
		}
	}
	pick := func(keys ...string) (any, string, bool) {
		for _, k := range keys {
			if v, ok := lower[k]; ok && v != nil {
				return v, k, true
			}
		}
		return nil, "", false
	}
	str := func(keys ...string) (string, error) {
		v, k, ok := pick(keys...)
		if !ok {
			return "", nil
		}
		switch x := v.(type) {
		case string:
			return dash(x), nil
		case json.Number:
			return x.String(), nil
		}
		return "", fmt.Errorf("key %q: want a string, got %T", k, v)
	}
	num := func(keys ...string) (*int64, error) {
		v, k, ok := pick(keys...)
		if !ok {
			return nil, nil
		}
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
			if s == "" || s == "-" {
				return nil, nil
			}
		case json.Number:
			s = x.String()
		default:
			return nil, fmt.Errorf("key %q: want a number, got %T", k, v)
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("key %q: %q is not a number", k, s)
			}
			if f = math.Round(f); f < math.MinInt64 || f >= math.MaxInt64 {
				return nil, fmt.Errorf("key %q: %q is out of range", k, s)
			}
			n = int64(f)
		}
		return &n, nil
	}
	var err error
	set := func(dst *string, keys ...string) {
		if err != nil {
			return
		}
		*dst, err = str(keys...)
	}
	set(&e.StartTime, "start_time", "timestamp", "time", "@timestamp")
	set(&e.Method, "method", "request_method", ":method")
	set(&e.Path, "path", "request_path", "x-envoy-original-path", "uri", "url")
	set(&e.Protocol, "protocol")
	set(&e.CodeDetails, "response_code_details", "code_details", "details")
	set(&e.RequestID, "x-request-id", "x_request_id", "request_id", "requestid")
	set(&e.RlbenchID, "x-rlbench-id", "x_rlbench_id", "rlbench_id")
	set(&e.UpstreamHost, "upstream_host", "upstream")
	set(&e.UpstreamCluster, "upstream_cluster")
	set(&e.Authority, "authority", ":authority", "host")
	set(&e.UserAgent, "user_agent", "user-agent")
	if err != nil {
		return e, err
	}
	if e.StartTime != "" {
		if t, perr := time.Parse(time.RFC3339Nano, e.StartTime); perr == nil {
			e.Time = t
		} else if v, _, _ := pick("start_time", "timestamp", "time", "@timestamp"); v != nil {
			if n, isNum := v.(json.Number); isNum {
				e.Time = epochTime(n)
			}
		}
	}
	code, err := num("response_code", "status", "status_code", "code")
	if err != nil {
		return e, err
	}
	if code != nil {
		e.Code = int(*code)
	}
	if e.DurationMs, err = num("duration", "duration_ms"); err != nil {
		return e, err
	}
	for _, b := range []struct {
		dst *uint64
		key string
	}{{&e.BytesReceived, "bytes_received"}, {&e.BytesSent, "bytes_sent"}} {
		n, err := num(b.key)
		if err != nil {
			return e, err
		}
		if n != nil && *n >= 0 {
			*b.dst = uint64(*n)
		}
	}
	for _, t := range []struct {
		dst *int64
		key string
	}{{&e.StartNs, "start_ns"}, {&e.LocalNs, "local_ns"}, {&e.RLSStartNs, "rls_start_ns"}, {&e.RLSEndNs, "rls_end_ns"},
		{&e.UpstreamStartNs, "upstream_start_ns"}} {
		n, err := num(t.key)
		if err != nil {
			return e, err
		}
		if n != nil && *n < 0 {
			return e, fmt.Errorf("key %q: %d is not a unix ns time", t.key, *n)
		}
		if n != nil {
			*t.dst = *n
		}
	}
	if v, k, ok := pick("response_flags", "response_flags_long", "flags"); ok {
		switch x := v.(type) {
		case string:
			e.Flags = ParseFlags(x)
		case []any:
			for _, f := range x {
				s, ok := f.(string)
				if !ok {
					return e, fmt.Errorf("key %q: flag %v is not a string", k, f)
				}
				e.Flags = append(e.Flags, ParseFlags(s)...)
			}
		default:
			return e, fmt.Errorf("key %q: want a string or array of strings, got %T", k, v)
		}
	}
	return e, nil
}

// epochTime interprets a unix timestamp number by magnitude: s, ms, us or ns.
func epochTime(n json.Number) time.Time {
	f, err := n.Float64()
	if err != nil || f <= 0 {
		return time.Time{}
	}
	switch {
	case f >= 1e17:
		return time.Unix(0, int64(f)).UTC()
	case f >= 1e14:
		return time.UnixMicro(int64(f)).UTC()
	case f >= 1e11:
		return time.UnixMilli(int64(f)).UTC()
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// Producers returned by Producer: which component
// produced a response (see Producer for the rules).
const (
	ProducerLocalLimiter    = "local_limiter"
	ProducerGlobalLimiter   = "global_limiter"
	ProducerRLSError        = "rls_error"
	ProducerCircuitBreaker  = "circuit_breaker"
	ProducerUpstreamFailure = "upstream_failure"
	ProducerBackend         = "backend"
	ProducerOther           = "other"
)

// Producer classifies which component produced the response of an access
// log entry, first match wins:
//   - "rls_error": flag RLSE (global filter, RLS failed and failure_mode_deny; details rate_limiter_error);
//   - "local_limiter": flag RL with details "local_rate_limited" (local_ratelimit filter);
//     When no details were logged (Envoy's default format has none), RL with
//     %BYTES_SENT% = 18 (len("local_rate_limited"), the local reply body) is
//     also "local_limiter";
//   - "global_limiter": flag RL otherwise, e.g. details "request_rate_limited"
//     (ratelimit filter; its 429 body is the RLS raw_body, empty by default);
//   - "circuit_breaker": flag UO (upstream overflow);
//   - "upstream_failure": any of UF, UC, URX, UH, UT, UR, LR;
//   - "backend": no flag at all (a 429 without flag came from the backend). When
//     the log has no flags but the details name a limiter ("local_rate_limited",
//     "request_rate_limited", "rate_limiter_error") that limiter's class is
//     returned instead, for JSON formats that log details but not flags;
//   - "other": any other flag (NR, DC, UAEX, DPE, ...).
func Producer(e AccessLogEntry) string {
	switch {
	case e.HasFlag("RLSE"):
		return ProducerRLSError
	case e.HasFlag("RL"):
		if e.CodeDetails == "local_rate_limited" {
			return ProducerLocalLimiter
		}
		if e.CodeDetails == "" && e.BytesSent == uint64(len(LocalRateLimitedBody)) {
			// Envoy's default format logs no details: fall back on the
			// local reply's 18-byte body (the global filter's is empty by default).
			return ProducerLocalLimiter
		}
		return ProducerGlobalLimiter
	case e.HasFlag("UO"):
		return ProducerCircuitBreaker
	}
	for _, f := range []string{"UF", "UC", "URX", "UH", "UT", "UR", "LR"} {
		if e.HasFlag(f) {
			return ProducerUpstreamFailure
		}
	}
	if len(e.Flags) > 0 {
		return ProducerOther
	}
	switch e.CodeDetails {
	case "local_rate_limited":
		return ProducerLocalLimiter
	case "request_rate_limited":
		return ProducerGlobalLimiter
	case "rate_limiter_error":
		return ProducerRLSError
	}
	return ProducerBackend
}

// LocalRateLimitedBody is the body of the local rate limit filter's local
// reply (sendLocalReply(..., "local_rate_limited", ...) in local_ratelimit.cc),
// sent with content-type text/plain, hence content-length 18.
const LocalRateLimitedBody = "local_rate_limited"

// maxLine bounds one access log line (as collect/envoy bounds a /stats line).
const maxLine = 16 << 20

// clip shortens s to 120 bytes for an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
