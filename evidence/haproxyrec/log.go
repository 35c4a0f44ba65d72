// Package haproxyrec holds the record of the log a private HAProxy with a stick-table rate limit writes (one JSON
// object per request, the log-format internal/realparts.RenderHAProxyConf renders) and its codec, for the
// evidence directory's haproxy/<proxy>/ files.
//
// The package reads readers and returns data and errors; it never prints and never exits. Parse errors name the
// source and the 1-based line. What HAProxy logs for a value it does not have ("-", or -1 for a timer of a step
// that did not happen) is read as absent, never as an error. It is a leaf: it imports no rlbench package.
//
// Semantics follow HAProxy's configuration manual, section 8.2.4 (the log-format variables %Ts, %ms, %ST, %ts,
// %Th, %Ti, %TR, %Tw, %Tc, %Tr, %Ta, %Tt) and 8.4 (timing events), https://docs.haproxy.org/2.6/configuration.html,
// and its sources src/http_act.c (http_action_track_sc counts the request in http_req_rate when tracking starts)
// and src/stick_table.c (smp_fetch_sc_http_req_rate reads the counter with read_freq_ctr_period).
package haproxyrec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// NoServer is %s for a request that reached no server (denied, or failed before one was chosen).
const NoServer = "<NOSRV>"

// LogRecord is one request of HAProxy's log, as a line of the evidence file evidence.HAProxyLogFile. Timers are
// HAProxy's, in whole ms; -1 means the step did not happen (or was not logged).
type LogRecord struct {
	// Line is the 1-based line number in the source log.
	Line int `json:"line"`
	// ID is the captured X-Rlbench-Id request header; "" when the request had none.
	ID string `json:"id,omitempty"`
	// AcceptMs is the accept date, unix ms (%Ts * 1000 + %ms); for a later request of a keep-alive connection,
	// when the connection became ready for it. 0 when absent.
	AcceptMs int64 `json:"accept_ms,omitempty"`
	// NowMs is HAProxy's internal clock at the rule, in ms (now_ms, logged through a Lua fetch of core.now()):
	// the clock its stick table's freq_ctr read. It follows the system date but for an offset HAProxy changes
	// when it detects a clock jump (src/clock.c clock_update_date). 0 when absent (a build without Lua).
	NowMs int64 `json:"now_ms,omitempty"`
	// DecideUs is date(0,us) sampled by the rule after track-sc0: HAProxy's cached date of the poll loop that ran
	// the rate limit rule, unix µs (the clock the stick table's freq_ctr read, at its 1 ms resolution). 0 when
	// absent (the rules did not run).
	DecideUs int64 `json:"decide_us,omitempty"`
	// Rate is sc_http_req_rate(0) as the rule read it, the request itself counted; nil when the request was not
	// tracked (no key: a string table's header was absent).
	Rate *int64 `json:"rate,omitempty"`
	// Key is the tracked key (the source address, or the header's value).
	Key string `json:"key,omitempty"`
	// Status is %ST, the status sent to the client; 0 when absent.
	Status int `json:"status"`
	// Term is %ts, the termination state (two characters; "PR" for a request the proxy denied).
	Term string `json:"term,omitempty"`
	// Th, Ti, TR, Tw, Tc, Tr, Ta, Tt are the timers %Th (handshake), %Ti (idle before the request), %TR (receive
	// the request), %Tw (queues), %Tc (connect to the server), %Tr (server response headers), %Ta (active, from
	// the request's first byte to the end), %Tt (total, from accept), in ms; -1: the step did not happen.
	Th int64 `json:"th"`
	Ti int64 `json:"ti"`
	TR int64 `json:"treq"`
	Tw int64 `json:"tw"`
	Tc int64 `json:"tc"`
	Tr int64 `json:"tr"`
	Ta int64 `json:"ta"`
	Tt int64 `json:"tt"`
	// Backend and Server are %b and %s (NoServer when no server was chosen).
	Backend string `json:"backend,omitempty"`
	Server  string `json:"server,omitempty"`
	// Method is %HM.
	Method string `json:"method,omitempty"`
	// RequestCounter is %rt, the frontend's request counter; ClientPort is %cp.
	RequestCounter int64 `json:"rt,omitempty"`
	ClientPort     int   `json:"cp,omitempty"`
}

// Tracked reports whether the stick table tracked the request (its rate was read).
func (r LogRecord) Tracked() bool { return r.Rate != nil }

// DeniedBy reports whether the rule "deny if { sc_http_req_rate(0) gt limit }" denied the request: it was
// tracked with a rate greater than limit (the request itself counted) and reached no server.
func (r LogRecord) DeniedBy(limit int64) bool {
	return r.Rate != nil && *r.Rate > limit && r.Server == NoServer
}

// Denied reports whether the proxy itself refused the tracked request: termination state "PR" (the proxy
// aborted it while it was being received, as http-request deny does) and no server.
func (r LogRecord) Denied() bool {
	return r.Rate != nil && r.Server == NoServer && strings.HasPrefix(r.Term, "PR")
}

// Forwarded reports whether HAProxy connected to a server for the request (%Tc >= 0).
func (r LogRecord) Forwarded() bool { return r.Server != "" && r.Server != NoServer && r.Tc >= 0 }

// DecideMs is the rule's time at HAProxy's 1 ms resolution (DecideUs / 1000); ok is false without it.
func (r LogRecord) DecideMs() (int64, bool) {
	if r.DecideUs <= 0 {
		return 0, false
	}
	return r.DecideUs / 1000, true
}

// ForwardMs is when HAProxy had connected to the server and sent the request, by its own clock: accept +
// Th + Ti + TR + Tw + Tc (each truncated to the ms, so up to 5 ms early); ok is false when it was not forwarded
// or a timer is absent.
func (r LogRecord) ForwardMs() (int64, bool) {
	if !r.Forwarded() || r.AcceptMs <= 0 {
		return 0, false
	}
	t := r.AcceptMs
	for _, v := range []int64{r.Th, r.Ti, r.TR, r.Tw, r.Tc} {
		if v < 0 {
			return 0, false
		}
		t += v
	}
	return t, true
}

// maxLine bounds one log line.
const maxLine = 1 << 20

// ParseLog reads HAProxy's JSON log from r (name is used in errors, "<name>:<line>: ...") and returns its records
// in order. See ReadLog.
func ParseLog(r io.Reader, name string) ([]LogRecord, error) {
	var out []LogRecord
	err := ReadLog(r, name, func(a LogRecord) error {
		out = append(out, a)
		return nil
	})
	return out, err
}

// ReadLog reads HAProxy's JSON log from r and calls fn with each record in order; an error from fn stops the read
// and is returned. HAProxy's own messages to the proxy's log (IsNotice) are skipped. Each other non-blank line
// must be one JSON object whose values are strings or numbers (keys: see
// internal/realparts.HAProxyLogFields; others are ignored); "-" and "" are absent. A line that is not such an
// object, or a value that does not parse, is an error naming the line.
func ReadLog(r io.Reader, name string, fn func(LogRecord) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || IsNotice(line) {
			continue
		}
		a, err := parseLine(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", name, lineNo, err)
		}
		a.Line = lineNo
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: line longer than %d bytes", name, lineNo+1, maxLine)
		}
		return fmt.Errorf("%s:%d: read: %v", name, lineNo+1, err)
	}
	return nil
}

// noticeRE matches the messages HAProxy sends to a proxy's log besides its traffic (send_log(p, ...) in
// src/proxy.c): "Proxy fe stopped (cumulated conns: FE: 30, BE: 0).", "Proxy fe hard-stopped (...)",
// "Frontend fe failed to enter pause mode.", "Port 80 busy while trying to enable ...", "Bind on socket ...".
var noticeRE = regexp.MustCompile(`^(Proxy \S+ (stopped|hard-stopped) \(|(Proxy|Frontend|Backend|Listener) \S+ failed to enter pause mode\.|Port \d+ busy while trying to enable |Bind on socket \d+ busy while trying to enable )`)

// IsNotice reports whether line (trimmed) is one of HAProxy's own messages to the proxy's log, not a request.
func IsNotice(line []byte) bool { return len(line) > 0 && line[0] != '{' && noticeRE.Match(line) }

func parseLine(line []byte) (LogRecord, error) {
	a := LogRecord{Th: -1, Ti: -1, TR: -1, Tw: -1, Tc: -1, Tr: -1, Ta: -1, Tt: -1}
	if line[0] != '{' {
		return a, fmt.Errorf("not a JSON object (want rlbench's HAProxy log-format): %q", clip(string(line)))
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return a, fmt.Errorf("not a JSON object: %v", err)
	}
	val := func(k string) (string, bool, error) {
		v, ok := raw[k]
		if !ok {
			return "", false, nil
		}
		var s string
		if len(v) > 0 && v[0] == '"' {
			if err := json.Unmarshal(v, &s); err != nil {
				return "", false, fmt.Errorf("%s: %v", k, err)
			}
		} else {
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return "", false, fmt.Errorf("%s: want a string or a number, got %s", k, clip(string(v)))
			}
			s = n.String()
		}
		if s == "" || s == "-" {
			return "", false, nil
		}
		return s, true, nil
	}
	num := func(k string, dst *int64, min int64) error {
		s, ok, err := val(k)
		if err != nil || !ok {
			return err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < min {
			return fmt.Errorf("%s %q: want an integer >= %d", k, clip(s), min)
		}
		*dst = n
		return nil
	}
	str := func(k string, dst *string) error {
		s, _, err := val(k)
		*dst = s
		return err
	}
	var acceptS, acceptMs, status, port int64 = -1, -1, 0, 0
	var rate int64 = -1
	errs := []error{
		str("id", &a.ID), num("accept_s", &acceptS, 0), num("accept_ms", &acceptMs, 0), num("now_ms", &a.NowMs, 0), num("decide_us", &a.DecideUs, 0),
		num("rate", &rate, 0), str("key", &a.Key), num("status", &status, 0), str("term", &a.Term),
		num("th", &a.Th, -1), num("ti", &a.Ti, -1), num("treq", &a.TR, -1), num("tw", &a.Tw, -1), num("tc", &a.Tc, -1),
		num("tr", &a.Tr, -1), num("ta", &a.Ta, -1), num("tt", &a.Tt, -1),
		str("backend", &a.Backend), str("server", &a.Server), str("method", &a.Method),
		num("rt", &a.RequestCounter, 0), num("cp", &port, 0),
	}
	if err := errors.Join(errs...); err != nil {
		return a, err
	}
	switch {
	case acceptS >= 0 && acceptMs >= 0:
		if acceptMs > 999 || acceptS > 1<<40 {
			return a, fmt.Errorf("accept_s %d, accept_ms %d: not a date", acceptS, acceptMs)
		}
		a.AcceptMs = acceptS*1000 + acceptMs
	case acceptS >= 0 || acceptMs >= 0:
		return a, errors.New("accept_s and accept_ms go together")
	}
	if a.NowMs > 1<<50 {
		return a, fmt.Errorf("now_ms %d: not a date", a.NowMs)
	}
	if a.DecideUs > 1<<60 {
		return a, fmt.Errorf("decide_us %d: not a date", a.DecideUs)
	}
	if status > 999 {
		return a, fmt.Errorf("status %d: want 100..999", status)
	}
	if port > 65535 {
		return a, fmt.Errorf("cp %d: not a port", port)
	}
	a.Status, a.ClientPort = int(status), int(port)
	if rate >= 0 {
		a.Rate = &rate
	}
	return a, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// Summary counts one HAProxy's records.
type Summary struct {
	// Requests is the number of records; Tracked those the stick table tracked; Forwarded those sent to a
	// server; ByStatus the records per %ST.
	Requests, Tracked, Forwarded int
	ByStatus                     map[int]int
}

// Summarize counts recs.
func Summarize(recs []LogRecord) Summary {
	s := Summary{ByStatus: map[int]int{}}
	for _, r := range recs {
		s.Requests++
		if r.Tracked() {
			s.Tracked++
		}
		if r.Forwarded() {
			s.Forwarded++
		}
		s.ByStatus[r.Status]++
	}
	return s
}
