package nginxrec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrorEntry is one line of an nginx error log:
//
//	2026/12/01 08:58:50 [error] 28319#28319: *20 limiting requests, excess: 6.000 by zone "rl", client: 127.0.0.1, server: , request: "GET / HTTP/1.1", host: "127.0.0.1"
//
// The part after the message is the request context of ngx_http_log_error_handler (src/http/ngx_http_request.c):
// ", client: C, server: S" then, when known, `, request: "R"`, `, subrequest: "U"`, `, upstream: "U"`,
// `, host: "H"`, `, referrer: "F"`. Fields that were not logged are "".
type ErrorEntry struct {
	// Line is the 1-based line number in the source.
	Line int `json:"line"`
	// Time is the timestamp as logged, "YYYY/MM/DD HH:MM:SS" in the nginx host's local time zone (1 s resolution;
	// see At).
	Time string `json:"time"`
	// Level is the level in brackets: debug, info, notice, warn, error, crit, alert or emerg.
	Level string `json:"level"`
	// PID and TID are the logging process and thread ("PID#TID:").
	PID int `json:"pid"`
	TID int `json:"tid"`
	// Conn is the connection serial number ("*N"; the access log's $connection); 0 when the line has none.
	Conn int64 `json:"conn,omitempty"`
	// Message is the text between the connection number and the request context, including nginx's
	// " while <action>" suffix.
	Message  string `json:"message"`
	Client   string `json:"client,omitempty"`
	Server   string `json:"server,omitempty"`
	Request  string `json:"request,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	Host     string `json:"host,omitempty"`
	Referrer string `json:"referrer,omitempty"`
	// Limit is set for limit_req lines.
	Limit *LimitEvent `json:"limit,omitempty"`
}

// LimitEvent is what a limit_req line says (ngx_http_limit_req_handler and ngx_http_limit_req_lookup in
// src/http/modules/ngx_http_limit_req_module.c):
//
//	limiting requests[, dry run], excess: X.XXX by zone "z"     (reject; at limit_req_log_level, default error)
//	delaying request[, dry run], excess: X.XXX, by zone "z"     (delay; one level lower, default warn)
//	could not allocate node in limit_req zone "z"               (zone full; the request is rejected, alert)
type LimitEvent struct {
	// Action is LimitActionReject, LimitActionDelay or LimitActionNoMemory.
	Action string `json:"action"`
	// DryRun is set for limit_req_dry_run lines (nothing was delayed or rejected).
	DryRun bool `json:"dry_run,omitempty"`
	// ExcessMilli is the printed excess in milli-requests, the unit nginx keeps it in (printed as X.XXX requests).
	// On a reject it is the excess the request would have brought, which exceeds burst; 0 for NoMemory.
	ExcessMilli int64 `json:"excess_milli"`
	// Zone is the zone that rejected or gave the (longest) delay.
	Zone string `json:"zone"`
}

// LimitEvent actions.
const (
	LimitActionReject   = "reject"
	LimitActionDelay    = "delay"
	LimitActionNoMemory = "no_memory"
)

// ErrorLog is a parsed error log.
type ErrorLog struct {
	// Lines is the number of lines read.
	Lines int `json:"lines"`
	// Entries are the lines in nginx's error log format, in order.
	Entries []ErrorEntry `json:"entries"`
	// Unparsed lists the line numbers of other non-blank lines (output of the binary before the error log was
	// opened, or anything else written to the file); they are kept, not treated as errors.
	Unparsed []int `json:"unparsed,omitempty"`
}

var (
	// errorHead matches "YYYY/MM/DD HH:MM:SS [level] PID#TID: [*CONN ]rest" (ngx_log_error_core in
	// src/core/ngx_log.c).
	errorHead = regexp.MustCompile(`^(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) \[([a-z]+)\] (\d+)#(\d+): (?:\*(\d+) )?(.*)$`)
	// errorCtx splits the request context off the message; lazy groups keep the message as short as the context
	// allows.
	errorCtx      = regexp.MustCompile(`^(.*?), client: (.*?), server: (.*?)(?:, request: "(.*?)")?(?:, subrequest: "(.*?)")?(?:, upstream: "(.*?)")?(?:, host: "(.*?)")?(?:, referrer: "(.*?)")?$`)
	limitReject   = regexp.MustCompile(`^limiting requests(, dry run)?, excess: (\d+)\.(\d{3}) by zone "(.*)"$`)
	limitDelay    = regexp.MustCompile(`^delaying request(, dry run)?, excess: (\d+)\.(\d{3}), by zone "(.*)"$`)
	limitNoMemory = regexp.MustCompile(`^could not allocate node in limit_req zone "(.*)"$`)
)

// maxErrorLine bounds one error log line (nginx's own limit is NGX_MAX_ERROR_STR, 2048 bytes).
const maxErrorLine = 1 << 20

// ParseErrorLog reads an nginx error log from r (name is used in errors, "<name>:<line>: ..."). Lines in the
// error log format become Entries; other non-blank lines are listed in Unparsed. A line that starts like a
// limit_req line ("limiting requests", "delaying request", "could not allocate node in limit_req zone") but does
// not parse as one is an error naming the line, so a changed format cannot silently drop decisions.
func ParseErrorLog(r io.Reader, name string) (*ErrorLog, error) {
	l := &ErrorLog{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxErrorLine)
	for sc.Scan() {
		l.Lines++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		m := errorHead.FindStringSubmatch(text)
		if m == nil {
			l.Unparsed = append(l.Unparsed, l.Lines)
			continue
		}
		e := ErrorEntry{Line: l.Lines, Time: m[1], Level: m[2], Message: m[6]}
		var err error
		if e.PID, err = strconv.Atoi(m[3]); err != nil {
			return l, lineErr(name, l.Lines, "pid %q: %v", m[3], err)
		}
		if e.TID, err = strconv.Atoi(m[4]); err != nil {
			return l, lineErr(name, l.Lines, "tid %q: %v", m[4], err)
		}
		if m[5] != "" {
			if e.Conn, err = strconv.ParseInt(m[5], 10, 64); err != nil {
				return l, lineErr(name, l.Lines, "connection %q: %v", m[5], err)
			}
		}
		if c := errorCtx.FindStringSubmatch(e.Message); c != nil {
			e.Message, e.Client, e.Server = c[1], c[2], c[3]
			e.Request, e.Upstream, e.Host, e.Referrer = c[4], c[6], c[7], c[8]
		}
		if e.Limit, err = parseLimit(e.Message); err != nil {
			return l, lineErr(name, l.Lines, "%v", err)
		}
		l.Entries = append(l.Entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return l, lineErr(name, l.Lines+1, "line longer than %d bytes", maxErrorLine)
		}
		return l, lineErr(name, l.Lines+1, "read: %v", err)
	}
	return l, nil
}

func parseLimit(msg string) (*LimitEvent, error) {
	if m := limitReject.FindStringSubmatch(msg); m != nil {
		return limitEvent(LimitActionReject, m)
	}
	if m := limitDelay.FindStringSubmatch(msg); m != nil {
		return limitEvent(LimitActionDelay, m)
	}
	if m := limitNoMemory.FindStringSubmatch(msg); m != nil {
		return &LimitEvent{Action: LimitActionNoMemory, Zone: m[1]}, nil
	}
	for _, p := range []string{"limiting requests", "delaying request", "could not allocate node in limit_req zone"} {
		if strings.HasPrefix(msg, p) {
			return nil, fmt.Errorf("limit_req line does not parse: %q", clip(msg))
		}
	}
	return nil, nil
}

func limitEvent(action string, m []string) (*LimitEvent, error) {
	whole, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || whole > 1<<40 {
		return nil, fmt.Errorf("limit_req excess %s.%s out of range", m[2], m[3])
	}
	frac, _ := strconv.ParseInt(m[3], 10, 64) // three digits, matched
	return &LimitEvent{Action: action, DryRun: m[1] != "", ExcessMilli: whole*1000 + frac, Zone: m[4]}, nil
}

// At parses Time in loc (nginx writes local time with no zone; pass the nginx host's zone, time.Local for a
// private instance on this machine).
func (e ErrorEntry) At(loc *time.Location) (time.Time, error) {
	return time.ParseInLocation("2006/01/02 15:04:05", e.Time, loc)
}

// Limits returns the entries that are limit_req lines, in order.
func (l *ErrorLog) Limits() []ErrorEntry {
	var out []ErrorEntry
	for _, e := range l.Entries {
		if e.Limit != nil {
			out = append(out, e)
		}
	}
	return out
}

// LimitCounts counts the limit_req lines by action, with ", dry run" appended for dry-run lines
// (e.g. "reject", "delay, dry run").
func (l *ErrorLog) LimitCounts() map[string]int {
	out := map[string]int{}
	for _, e := range l.Entries {
		if e.Limit == nil {
			continue
		}
		k := e.Limit.Action
		if e.Limit.DryRun {
			k += ", dry run"
		}
		out[k]++
	}
	return out
}

// UpstreamAddr returns the host:port (or unix:path) of the entry's `upstream: "..."` field, e.g.
// "127.0.0.1:33279" for "http://127.0.0.1:33279/"; "" when the entry names no upstream.
func (e ErrorEntry) UpstreamAddr() string {
	if e.Upstream == "" {
		return ""
	}
	u, err := url.Parse(e.Upstream)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Host
}

// ConnectFailed reports whether the entry says that a connection to an upstream server was never made: connect()
// failed (refused, unreachable) or timed out while connecting. Such a try appears in $upstream_addr (status 502
// or 504) but cannot have reached the server, unlike a try that timed out or failed while reading the response.
func (e ErrorEntry) ConnectFailed() bool {
	if e.Upstream == "" {
		return false
	}
	return strings.HasPrefix(e.Message, "connect() failed") ||
		(strings.HasPrefix(e.Message, "upstream timed out") && strings.HasSuffix(e.Message, "while connecting to upstream"))
}

// UpstreamHits estimates, per server address, how many tries of recs reached the server: every server try of
// $upstream_addr, minus one for each error log entry that says the connection to that server was never made
// (ErrorEntry.ConnectFailed) on the connection of a record with such a try (records logged without $connection
// match such entries by server alone). errs may be nil (then nothing is subtracted). Entries that match no try
// are ignored.
func UpstreamHits(recs []AccessRecord, errs *ErrorLog) map[string]int {
	type connAddr struct {
		conn int64
		addr string
	}
	hits := map[string]int{}
	tries := map[connAddr]int{}
	for _, a := range recs {
		for _, u := range a.Upstreams {
			if u.Server {
				hits[u.Addr]++
				tries[connAddr{a.Connection, u.Addr}]++
			}
		}
	}
	if errs == nil {
		return hits
	}
	for _, e := range errs.Entries {
		if !e.ConnectFailed() {
			continue
		}
		addr := e.UpstreamAddr()
		for _, k := range []connAddr{{e.Conn, addr}, {0, addr}} {
			if tries[k] > 0 {
				tries[k]--
				hits[addr]--
				break
			}
		}
	}
	return hits
}
