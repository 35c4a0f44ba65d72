package rls

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
)

// Time resolutions of the two logrus envelopes, in ns.
const (
	// TextResolutionNs is the resolution of the logrus TextFormatter default
	// timestamp (time.RFC3339, whole seconds).
	TextResolutionNs int64 = int64(time.Second)
	// JSONResolutionNs is the resolution of the RLS JSON formatter
	// (TimestampFormat time.RFC3339Nano).
	JSONResolutionNs int64 = 1
)

// Envelope formats of a log line.
const (
	FormatText = "text" // time="..." level=... msg="..."
	FormatJSON = "json" // {"@message":...,"@timestamp":...,"level":...}
)

// Error kinds of ErrorLine.Kind.
const (
	// ErrorKindCall is `caught error during call: %v` (service/ratelimit.go),
	// logged at debug once per failed ShouldRateLimit call.
	ErrorKindCall = "call"
	// ErrorKindRedisConnection is `creating redis connection error : %v`
	// (radix pool dial failures, level error, about every 4 s while Redis is down).
	ErrorKindRedisConnection = "redis_connection"
	// ErrorKindJSONEndpoint is the /json handler's `error: %s` warning
	// (server/server_impl.go): bad body or a ShouldRateLimit error, HTTP 400.
	ErrorKindJSONEndpoint = "json_endpoint"
	// ErrorKindLocalCache is `Failing to set local cache key: %s` (limiter/base_limiter.go).
	ErrorKindLocalCache = "local_cache"
	// ErrorKindConfigLoad is `Error loading new configuration: %s`.
	ErrorKindConfigLoad = "config_load"
)

// Error classes of ErrorLine.Class; the first two are the suffixes of the RLS
// stats ratelimit.service.call.should_rate_limit.{redis_error,service_error}.
const (
	ClassRedis      = "redis_error"
	ClassService    = "service_error"
	ClassBadRequest = "bad_request"
)

// serviceErrors are the serviceError strings of service/ratelimit.go; any
// other caught error is a backend (Redis) error, as the RLS's type switch
// counts it under redis_error.
var serviceErrors = []string{
	"rate limit domain must not be empty",
	"rate limit descriptor list must not be empty",
	"no rate limit configuration loaded",
}

// ClassifyCallError returns ClassService for the RLS serviceError messages
// and ClassRedis for everything else, mirroring the recover() type switch
// of envoyproxy/ratelimit service/ratelimit.go.
func ClassifyCallError(msg string) string {
	for _, s := range serviceErrors {
		if strings.Contains(msg, s) {
			return ClassService
		}
	}
	return ClassRedis
}

// Decision is one descriptor decision reconstructed from RLS debug lines.
//
// Anchor: a decision of a limited descriptor is anchored on its
// `cache key: K current: N` line (the counter after INCRBY, limiter/base_limiter.go)
// or, for local-cache hits, on `cache key is over the limit: K`; an ERROR
// decision on the `caught error during call` line; a no-limit decision on its
// `descriptor does not match any limit` / `descriptor is unlimited` line.
// Line, TimeNs and TimeResolutionNs are those of the anchor line.
type Decision struct {
	Line             int    `json:"line"`
	TimeNs           int64  `json:"time_ns"`
	TimeResolutionNs int64  `json:"time_resolution_ns"`
	Domain           string `json:"domain,omitempty"`
	// DomainSource tells how Domain was found: "descriptor" (cache key minus
	// the descriptor's `_k_v_…_<window>` suffix; includes CACHE_KEY_PREFIX if
	// one is set), "key_prefix" (text before the first `_` of the key: wrong
	// for domains containing `_`), "unknown_domain" (from `unknown domain 'x'`).
	// A no-limit decision (no match, unlimited) has no line that names its
	// domain; it gets "config" (DomainSourceConfig) or "call"
	// (DomainSourceCall) when the log tells it, else "" (Domain unknown, never
	// a domain "": the RLS refuses an empty domain).
	DomainSource string                       `json:"domain_source,omitempty"`
	Descriptor   []descriptor.DescriptorEntry `json:"descriptor,omitempty"`
	Key          string                       `json:"key,omitempty"`
	// WindowStart is the key's numeric suffix: floor(now/unit_s)*unit_s, unix s.
	WindowStart int64 `json:"window_start,omitempty"`
	// Current is the counter after the increment; HasCurrent is false for
	// local-cache hits, errors and no-limit decisions.
	Current    uint64 `json:"current,omitempty"`
	HasCurrent bool   `json:"has_current"`
	Limit      uint32 `json:"limit,omitempty"`
	Unit       string `json:"unit,omitempty"`
	// Code is "OK", "OVER_LIMIT", "ERROR" or "UNKNOWN" (no response line and
	// no limit known to derive it from).
	Code string `json:"code"`
	// CodeDerived is true when no response line was paired: the code was
	// derived as OK iff current <= limit (or shadow), OVER_LIMIT otherwise.
	CodeDerived bool `json:"code_derived"`
	// ResponseLine is the paired `returning normal response` line, 0 if none.
	ResponseLine   int    `json:"response_line,omitempty"`
	LimitRemaining uint32 `json:"limit_remaining,omitempty"`
	// Shadow is set by `Limit with key %s, is in shadow_mode` or the local
	// cache shadow line: the status was forced to OK.
	Shadow bool `json:"shadow,omitempty"`
	// LocalCache is set for `cache key is over the limit` (freecache hit, no Redis INCRBY).
	LocalCache bool `json:"local_cache,omitempty"`
	// NoLimit: descriptor matched no rule (or unknown domain); Unlimited: an
	// `unlimited: true` rule. Both are OK without touching the cache.
	NoLimit   bool   `json:"no_limit,omitempty"`
	Unlimited bool   `json:"unlimited,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Domain sources of a no-limit decision (Decision.DomainSource).
const (
	// DomainSourceConfig: the only domain of the configuration in force,
	// from its `loading domain: %s` (or `patching domain: %s`) lines
	// (src/config/config_impl.go), and no `unknown domain '%s'` line for the
	// descriptor: GetLimit logs that line for every domain the configuration
	// lacks.
	DomainSourceConfig = "config"
	// DomainSourceCall: the domain of the cache keys (`looking up cache key:
	// %s`) of the other descriptors of the same ShouldRateLimit call
	// (src/service/ratelimit.go: one `got descriptor` per descriptor, then one
	// `starting cache lookup`, the call's cache keys, one `returning normal
	// response` with a status per descriptor), taken only where the log shows
	// that call's lines without another call's in between.
	DomainSourceCall = "call"
)

// ErrorLine is one error-bearing log line.
type ErrorLine struct {
	Line             int    `json:"line"`
	TimeNs           int64  `json:"time_ns"`
	TimeResolutionNs int64  `json:"time_resolution_ns"`
	Level            string `json:"level"`
	// Kind is one of the ErrorKind constants.
	Kind string `json:"kind"`
	// Class is ClassRedis or ClassService for ErrorKindCall and
	// ErrorKindJSONEndpoint (ClassBadRequest for a body the /json handler
	// could not decode: protojson errors start with "proto:"), else "".
	Class   string `json:"class,omitempty"`
	Message string `json:"message"`
}

// Event is a recognised log line with its position and an optional argument
// (a domain, a cache key, an address, a signal, a sink name).
type Event struct {
	Line             int    `json:"line"`
	TimeNs           int64  `json:"time_ns"`
	TimeResolutionNs int64  `json:"time_resolution_ns"`
	Kind             string `json:"kind,omitempty"`
	Value            string `json:"value,omitempty"`
}

// LimitDef is one `loading descriptor: key=<domain>.<path>[ ratelimit={requests_per_unit=N, unit=U, ...}]`
// line (config/config_impl.go). HasLimit is false for intermediate nodes.
type LimitDef struct {
	Line            int    `json:"line"`
	Key             string `json:"key"`
	HasLimit        bool   `json:"has_limit"`
	RequestsPerUnit uint32 `json:"requests_per_unit,omitempty"`
	Unit            string `json:"unit,omitempty"`
	Unlimited       bool   `json:"unlimited,omitempty"`
	ShadowMode      bool   `json:"shadow_mode,omitempty"`
	QuotaMode       bool   `json:"quota_mode,omitempty"`
}

// UnparsedLine is a line that matched neither envelope nor a known side format.
type UnparsedLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// Log is everything ParseLog extracted from one RLS log.
type Log struct {
	Name string `json:"name"`
	// Lines counts all lines; TextLines and JSONLines the RLS envelopes;
	// SinkLines the gostats logging-sink JSON lines; FlushLines the
	// Prometheus sink's `FlushCounter:`/`FlushGauge:`/`FlushTimer:` messages.
	Lines      int `json:"lines"`
	TextLines  int `json:"text_lines"`
	JSONLines  int `json:"json_lines"`
	SinkLines  int `json:"sink_lines"`
	FlushLines int `json:"flush_lines"`
	// Counts counts recognised messages by template id (e.g. "got_descriptor",
	// "cache_key", "response", "resp", "caught_error", "other").
	Counts map[string]int `json:"counts"`
	// Levels counts lines by logrus level.
	Levels    map[string]int `json:"levels"`
	Decisions []Decision     `json:"decisions"`
	Errors    []ErrorLine    `json:"errors,omitempty"`
	// PendingLookups are `looking up cache key` lines never followed by their
	// `cache key: K current:` line nor an error: calls hung (Redis outage) or
	// cut off by the end of the log.
	PendingLookups []Event                  `json:"pending_lookups,omitempty"`
	ConfigLoads    []evidence.RLSConfigLoad `json:"config_loads,omitempty"`
	Domains        []Event                  `json:"domains,omitempty"`
	LimitDefs      []LimitDef               `json:"limit_defs,omitempty"`
	UnknownDomains []Event                  `json:"unknown_domains,omitempty"`
	NoMatch        []Event                  `json:"no_match,omitempty"`
	LocalCacheHits []Event                  `json:"local_cache_hits,omitempty"`
	ShadowLines    []Event                  `json:"shadow_lines,omitempty"`
	// Listeners: Kind is "debug", "HTTP" or "gRPC", Value the address.
	Listeners []Event `json:"listeners,omitempty"`
	// Starts are `Stats initialized for X` / `Stats disabled` lines, the first
	// line of every RLS process: more than one means a restart in the log.
	Starts    []Event `json:"starts,omitempty"`
	Shutdowns []Event `json:"shutdowns,omitempty"`
	// UnmatchedStatuses counts response statuses no open decision fitted.
	UnmatchedStatuses int `json:"unmatched_statuses"`
	// Sink holds the stats that the gostats logging sink and the Prometheus
	// sink's Flush* debug lines reported (counter deltas summed).
	Sink     *StatsdTotals  `json:"sink,omitempty"`
	Unparsed []UnparsedLine `json:"unparsed,omitempty"`
	// Warnings say why a log yields nothing to judge, e.g. no decision
	// line because the RLS did not run at LOG_LEVEL=debug (see
	// WarnNoDebugLines).
	Warnings []string `json:"warnings,omitempty"`
}

// WarnNoDebugLines is the start of the warning of a log without decisions
// and without any debug-level line: envoyproxy/ratelimit logs its
// per-request lines (`got descriptor`, `cache key: ... current:`,
// `returning normal response`) only at debug, and its default LOG_LEVEL is
// WARN (src/settings/settings.go).
const WarnNoDebugLines = "no decision lines: was LOG_LEVEL=debug?"

var (
	reApplying = regexp.MustCompile(`^applying limit: (\d+) requests per (\w+)(?:, shadow_mode: (true|false))?(?:, quota: (true|false))?`)
	// Cache keys and full keys hold the descriptor values verbatim
	// (limiter/cache_key.go GenerateCacheKey writes entry.Value unescaped),
	// so they may contain spaces: each key runs to the fixed text that
	// follows it in its template, the last such text on the line.
	reCacheKey   = regexp.MustCompile(`^cache key: (.+) current: (\d+)(?: limit: (\d+))?\s*$`)
	reShadowKey  = regexp.MustCompile(`^Limit with key (.+), is in shadow_mode`)
	reLocalOver  = regexp.MustCompile(`^cache key is over the limit: (.+)$`)
	reLocalShad  = regexp.MustCompile(`^Cache key (.+) would be rate limited but shadow mode is enabled`)
	reUnknownDom = regexp.MustCompile(`^unknown domain '(.*)'$`)
	reListening  = regexp.MustCompile(`^Listening for (\S+) on '(.*)'$`)
	reLoadDesc   = regexp.MustCompile(`^loading descriptor: key=(.+?)(?: ratelimit=\{(.*)\})?$`)
	reFlush      = regexp.MustCompile(`^Flush(Counter|Gauge|Timer): (\S+) (-?[0-9.eE+]+)$`)
	reWindow     = regexp.MustCompile(`_(\d+)$`)
)

// ParseLog reads an envoyproxy/ratelimit log (stderr) and reconstructs its
// decisions, errors and lifecycle events. Text (logrus TextFormatter) and
// JSON (LOG_FORMAT=json) lines may be mixed in one file: the RLS logs its
// first lines in text before installing the JSON formatter. gostats
// logging-sink JSON lines and Prometheus-sink Flush* lines are recognised and
// summed into Log.Sink. Lines that match nothing are kept in Log.Unparsed with
// their numbers; they are not errors. The only errors are read errors, named
// "name: ...".
//
// Pairing (no request id exists in RLS logs; see Decision for anchors):
//   - `applying limit`, `descriptor does not match…` and `descriptor is
//     unlimited…` resolve the oldest open `got descriptor` line (FIFO); the
//     limit applied is remembered per descriptor text.
//   - a `cache key: K current: N` line closes the oldest open
//     `looking up cache key: K` line and opens a decision; its descriptor is
//     the logged descriptor whose `_k_v_…_` encoding is the longest suffix of
//     K before the window (cache_key.go builds prefix+domain_k_v_…_window).
//   - each status of a `returning normal response: …` line closes the oldest
//     open decision it is consistent with: same limit and unit; OK with
//     limit_remaining R>0 needs N = limit-R; OK without it needs N = limit
//     (or a shadow-marked decision); OVER_LIMIT needs N > limit. Within a
//     window key each N is unique, so OK decisions pair exactly; OVER_LIMIT
//     statuses of one rule are identical, so which one pairs is immaterial.
//   - a redis-class `caught error during call` closes the most recent open
//     lookup (LIFO: calls that hang leave old lookups open) as an ERROR decision.
//
// Decisions never paired with a response get CodeDerived=true. A log that
// yields no decision carries a warning in Log.Warnings (WarnNoDebugLines when
// no line is at level debug).
func ParseLog(r io.Reader, name string) (*Log, error) {
	p := newLogParser(name)
	br := bufio.NewReaderSize(r, 256<<10)
	for {
		line, long, err := readLogLine(br)
		switch {
		case long:
			p.n++
			p.log.Lines++
			p.unparsed(fmt.Sprintf("(line longer than %d bytes, not read) %s", MaxLogLine, line))
		case len(line) > 0:
			p.line(strings.TrimRight(line, "\r\n"))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, p.n+1, err)
		}
	}
	return p.finish(), nil
}

// MaxLogLine bounds one line of an RLS log (1 MiB): a longer line is kept
// in Log.Unparsed, cut, and not interpreted. envoyproxy/ratelimit's longest
// lines (a response with many statuses) are a few KB.
const MaxLogLine = 1 << 20

// readLogLine reads one line (with its newline) of at most MaxLogLine
// bytes; a longer one is returned cut, with long set, and the rest of it is
// skipped.
func readLogLine(br *bufio.Reader) (line string, long bool, err error) {
	var buf []byte
	for {
		b, err := br.ReadSlice('\n')
		if len(buf)+len(b) > MaxLogLine {
			if !long {
				buf = append(buf, b[:MaxLogLine-len(buf)]...)
				long = true
			}
		} else {
			buf = append(buf, b...)
		}
		if err != bufio.ErrBufferFull {
			return string(buf), long, err
		}
	}
}

type limitInfo struct {
	limit  uint32
	unit   string
	shadow bool
	known  bool
}

type openDesc struct {
	ev      Event
	raw     string
	entries []descriptor.DescriptorEntry
	domain  string
}

type logParser struct {
	log *Log
	n   int
	// debugMsgs counts RLS envelope lines at level debug.
	debugMsgs int
	descs     []*openDesc
	byDesc    map[string]limitInfo                    // descriptor text -> last applied limit
	encIndex  map[string][]descriptor.DescriptorEntry // "_k_v_..._" -> entries
	lookups   []Event
	open      []*Decision // limited decisions awaiting a response status
	noLimit   []*Decision // no-limit decisions awaiting a status
	all       []*Decision
	// cfgActive are the domains of the configuration in force, cfgPending
	// those of one being loaded (cfgLoading); cfgKnown is false until a
	// configuration load was seen.
	cfgActive, cfgPending []string
	cfgLoading, cfgKnown  bool
	// call is the ShouldRateLimit call whose lines are being read (nil: none,
	// or its lines are mixed with another call's).
	call *callLines
}

// callLines is one ShouldRateLimit call as its lines come: its descriptors,
// its no-limit decisions without a domain, and the domain of its cache keys.
type callLines struct {
	descs   int
	noDom   []*Decision
	lookups bool   // `starting cache lookup` seen
	domain  string // of its cache keys
	mixed   bool   // another call's lines, or keys of two domains, came between
}

func newLogParser(name string) *logParser {
	return &logParser{
		log: &Log{
			Name:   name,
			Counts: map[string]int{},
			Levels: map[string]int{},
			Sink:   newStatsdTotals(name),
		},
		byDesc:   map[string]limitInfo{},
		encIndex: map[string][]descriptor.DescriptorEntry{},
	}
}

type envelope struct {
	format string
	level  string
	msg    string
	timeNs int64
	res    int64
}

func (p *logParser) line(s string) {
	p.n++
	p.log.Lines++
	t := strings.TrimSpace(s)
	if t == "" {
		return
	}
	if strings.HasPrefix(t, "{") {
		p.jsonLine(t)
		return
	}
	if env, ok := parseTextEnvelope(t); ok {
		p.log.TextLines++
		p.message(env)
		return
	}
	p.unparsed(s)
}

func (p *logParser) unparsed(s string) {
	if len(s) > 300 {
		s = s[:300]
	}
	p.log.Unparsed = append(p.log.Unparsed, UnparsedLine{Line: p.n, Text: s})
}

type jsonEnv struct {
	Message   *string  `json:"@message"`
	Timestamp string   `json:"@timestamp"`
	Level     string   `json:"level"`
	Logger    string   `json:"logger"`
	Msg       string   `json:"msg"`
	TS        *float64 `json:"ts"`
	JSON      *struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"json"`
}

func (p *logParser) jsonLine(t string) {
	var j jsonEnv
	if err := json.Unmarshal([]byte(t), &j); err != nil {
		p.unparsed(t)
		return
	}
	switch {
	case j.Message != nil:
		p.log.JSONLines++
		env := envelope{format: FormatJSON, level: j.Level, msg: *j.Message, res: JSONResolutionNs}
		if ts, err := time.Parse(time.RFC3339Nano, j.Timestamp); err == nil {
			env.timeNs = ts.UnixNano()
		}
		p.message(env)
	case j.Logger != "" && j.Msg != "":
		// lyft/gostats logging_sink.go: {"level","ts","logger":"gostats.loggingsink","msg":"flushing counter","json":{...}}
		p.log.SinkLines++
		p.log.Levels[j.Level]++
		if j.JSON != nil && j.JSON.Name != "" {
			v, err := strconv.ParseFloat(j.JSON.Value, 64)
			if err == nil {
				var tns int64
				if j.TS != nil && finite(*j.TS) {
					tns = int64(math.Round(*j.TS*1e6) * 1e3)
				}
				p.sinkAdd(j.JSON.Name, v, sinkKind(j.JSON.Type), tns)
			}
		}
	default:
		p.unparsed(t)
	}
}

func sinkKind(t string) string {
	switch t {
	case "counter":
		return "c"
	case "gauge":
		return "g"
	case "timer":
		return "ms"
	}
	return t
}

// parseTextEnvelope parses logrus TextFormatter key=value lines; values are
// Go-quoted (%q) when they contain anything but [A-Za-z0-9-._/@^+].
func parseTextEnvelope(s string) (envelope, bool) {
	env := envelope{format: FormatText, res: TextResolutionNs}
	hasMsg, hasLevel := false, false
	i := 0
	for i < len(s) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			break
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 {
			return env, false
		}
		key := s[i : i+eq]
		if strings.ContainsAny(key, " \"") {
			return env, false
		}
		i += eq + 1
		var val string
		if i < len(s) && s[i] == '"' {
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return env, false
			}
			u, err := strconv.Unquote(s[i : j+1])
			if err != nil {
				return env, false
			}
			val = u
			i = j + 1
		} else {
			j := strings.IndexByte(s[i:], ' ')
			if j < 0 {
				j = len(s) - i
			}
			val = s[i : i+j]
			i += j
		}
		switch key {
		case "time":
			ts, err := time.Parse(time.RFC3339Nano, val)
			if err != nil {
				return env, false
			}
			env.timeNs = ts.UnixNano()
			if strings.Contains(val, ".") {
				// A custom TimestampFormat with fractions; RFC3339Nano trims
				// trailing zeros, so the digits do not tell the precision.
				env.res = 1
			}
		case "level":
			env.level = val
			hasLevel = true
		case "msg":
			env.msg = val
			hasMsg = true
		}
	}
	return env, hasMsg && hasLevel
}

func (p *logParser) ev(env envelope, kind, value string) Event {
	return Event{Line: p.n, TimeNs: env.timeNs, TimeResolutionNs: env.res, Kind: kind, Value: value}
}

func (p *logParser) message(env envelope) {
	p.log.Levels[env.level]++
	if env.level == "debug" {
		p.debugMsgs++
	}
	m := env.msg
	count := func(id string) { p.log.Counts[id]++ }
	switch {
	case strings.HasPrefix(m, "got descriptor: "):
		count("got_descriptor")
		raw := strings.TrimPrefix(m, "got descriptor: ")
		entries := parseDescriptor(raw)
		p.startServing()
		if p.call == nil {
			p.call = &callLines{}
		}
		p.call.descs++
		p.call.mixed = p.call.mixed || p.call.lookups // another call's descriptor during this one's cache lookup
		p.descs = append(p.descs, &openDesc{ev: p.ev(env, "", raw), raw: raw, entries: entries})
		if len(entries) > 0 {
			p.encIndex[encodeEntries(entries)] = entries
		}
	case strings.HasPrefix(m, "unknown domain '"):
		count("unknown_domain")
		d := ""
		if mm := reUnknownDom.FindStringSubmatch(m); mm != nil {
			d = mm[1]
		}
		p.log.UnknownDomains = append(p.log.UnknownDomains, p.ev(env, "", d))
		if len(p.descs) > 0 {
			p.descs[0].domain = d
		}
	case strings.HasPrefix(m, "applying limit: "):
		count("applying_limit")
		li := limitInfo{}
		if mm := reApplying.FindStringSubmatch(m); mm != nil {
			v, _ := strconv.ParseUint(mm[1], 10, 32)
			li = limitInfo{limit: uint32(v), unit: mm[2], shadow: mm[3] == "true", known: true}
		}
		if d := p.popDesc(); d != nil && li.known {
			p.byDesc[d.raw] = li
		}
	case strings.HasPrefix(m, "descriptor does not match any limit"), strings.HasPrefix(m, "descriptor is unlimited"):
		unlimited := strings.HasPrefix(m, "descriptor is unlimited")
		if unlimited {
			count("unlimited")
		} else {
			count("no_match")
			p.log.NoMatch = append(p.log.NoMatch, p.ev(env, "", ""))
		}
		d := &Decision{Line: p.n, TimeNs: env.timeNs, TimeResolutionNs: env.res, Code: "OK", CodeDerived: true,
			NoLimit: !unlimited, Unlimited: unlimited}
		if od := p.popDesc(); od != nil {
			d.Descriptor = od.entries
			if od.domain != "" {
				d.Domain, d.DomainSource = od.domain, "unknown_domain"
			}
		}
		if d.Domain == "" && len(p.cfgActive) == 1 {
			d.Domain, d.DomainSource = p.cfgActive[0], DomainSourceConfig
		}
		if d.Domain == "" && p.call != nil {
			p.call.noDom = append(p.call.noDom, d)
		}
		p.noLimit = append(p.noLimit, d)
		p.all = append(p.all, d)
	case strings.HasPrefix(m, "looking up cache key: "):
		count("lookup_cache_key")
		// Not trimmed: the key is compared with the `cache key:` line's.
		key := strings.TrimPrefix(m, "looking up cache key: ")
		p.lookups = append(p.lookups, p.ev(env, "", key))
		p.callKey(key)
	case strings.HasPrefix(m, "cache key: "):
		mm := reCacheKey.FindStringSubmatch(m)
		if mm == nil {
			count("other")
			return
		}
		count("cache_key")
		key := mm[1]
		cur, _ := strconv.ParseUint(mm[2], 10, 64)
		p.closeLookup(key)
		d := p.newKeyDecision(env, key)
		d.Current, d.HasCurrent = cur, true
		if mm[3] != "" {
			v, _ := strconv.ParseUint(mm[3], 10, 32)
			d.Limit = uint32(v)
		}
		p.open = append(p.open, d)
		p.all = append(p.all, d)
	case strings.HasPrefix(m, "cache key is over the limit: "), strings.HasPrefix(m, "Cache key ") && strings.Contains(m, "would be rate limited but shadow mode"):
		var key string
		shadow := false
		if mm := reLocalOver.FindStringSubmatch(m); mm != nil {
			key = mm[1]
		} else if mm := reLocalShad.FindStringSubmatch(m); mm != nil {
			key, shadow = mm[1], true
		}
		count("local_cache_over_limit")
		p.log.LocalCacheHits = append(p.log.LocalCacheHits, p.ev(env, map[bool]string{true: "shadow", false: ""}[shadow], key))
		d := p.newKeyDecision(env, key)
		d.LocalCache, d.Shadow = true, shadow
		p.open = append(p.open, d)
		p.all = append(p.all, d)
	case strings.HasPrefix(m, "Limit with key "):
		count("shadow")
		sk := ""
		if mm := reShadowKey.FindStringSubmatch(m); mm != nil {
			sk = mm[1]
		}
		p.log.ShadowLines = append(p.log.ShadowLines, p.ev(env, "", sk))
		p.markShadow(sk)
	case strings.HasPrefix(m, "returning normal response"):
		count("response")
		rest := strings.TrimPrefix(m, "returning normal response")
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
		if rest == "" {
			p.call = nil // no statuses to tell the call's descriptors
			// Pre-2025 template without the response: it still ends one
			// call, so it closes the oldest open decision, whose code stays
			// derived (a multi-descriptor call leaves its others open).
			if len(p.open) > 0 {
				p.open[0].ResponseLine = p.n
				p.deriveCode(p.open[0])
				p.open = p.open[1:]
			}
			return
		}
		resp, err := ParseResponseText(rest)
		if err != nil {
			p.call = nil
			count("response_unparsed")
			return
		}
		p.endCall(len(resp.Statuses))
		p.pairResponse(resp)
	case strings.HasPrefix(m, "resp:"):
		count("resp")
	case strings.HasPrefix(m, "caught error during call: "):
		count("caught_error")
		p.call = nil
		msg := strings.TrimPrefix(m, "caught error during call: ")
		class := ClassifyCallError(msg)
		p.addError(env, ErrorKindCall, class, msg)
		if class == ClassRedis && len(p.lookups) > 0 {
			lk := p.lookups[len(p.lookups)-1]
			p.lookups = p.lookups[:len(p.lookups)-1]
			d := p.newKeyDecision(env, lk.Value)
			d.Code, d.Error = "ERROR", msg
			if li, ok := p.limitForDecision(d); ok {
				d.Limit, d.Unit, d.Shadow = li.limit, li.unit, li.shadow
			}
			p.all = append(p.all, d)
		}
	case strings.HasPrefix(m, "creating redis connection error"):
		count("redis_connection_error")
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(m, "creating redis connection error"), " :"))
		p.addError(env, ErrorKindRedisConnection, ClassRedis, msg)
	case strings.HasPrefix(m, "error: "):
		count("json_error")
		msg := strings.TrimPrefix(m, "error: ")
		class := ClassifyCallError(msg)
		if strings.HasPrefix(msg, "proto:") {
			class = ClassBadRequest
		}
		p.addError(env, ErrorKindJSONEndpoint, class, msg)
	case strings.HasPrefix(m, "Failing to set local cache key: "):
		count("local_cache_error")
		p.addError(env, ErrorKindLocalCache, "", strings.TrimPrefix(m, "Failing to set local cache key: "))
	case strings.HasPrefix(m, "Error loading new configuration"):
		count("config_load_error")
		p.cfgLoading = false // the configuration in force stays
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(m, "Error loading new configuration"), ":"))
		p.log.ConfigLoads = append(p.log.ConfigLoads, evidence.RLSConfigLoad{Line: p.n, TimeNs: env.timeNs, OK: false, Message: m})
		p.addError(env, ErrorKindConfigLoad, "", msg)
	case strings.HasPrefix(m, "Successfully loaded new configuration"), strings.HasPrefix(m, "Successfully loaded the initial ratelimit configs"):
		count("config_loaded")
		p.configLoaded()
		p.log.ConfigLoads = append(p.log.ConfigLoads, evidence.RLSConfigLoad{Line: p.n, TimeNs: env.timeNs, OK: true,
			Initial: strings.Contains(m, "initial"), Message: m})
	case strings.HasPrefix(m, "loading domain: "), strings.HasPrefix(m, "patching domain: "):
		dom := strings.TrimPrefix(m, "loading domain: ")
		if strings.HasPrefix(m, "patching domain: ") {
			count("patching_domain")
			dom = strings.TrimPrefix(m, "patching domain: ")
		} else {
			count("loading_domain")
			p.log.Domains = append(p.log.Domains, p.ev(env, "", dom))
		}
		if !p.cfgLoading {
			p.cfgPending, p.cfgLoading = nil, true
		}
		if !slices.Contains(p.cfgPending, dom) {
			p.cfgPending = append(p.cfgPending, dom)
		}
	case strings.HasPrefix(m, "loading descriptor: "):
		count("loading_descriptor")
		if mm := reLoadDesc.FindStringSubmatch(m); mm != nil {
			p.log.LimitDefs = append(p.log.LimitDefs, parseLimitDef(p.n, mm[1], mm[2]))
		}
	case strings.HasPrefix(m, "Listening for "):
		count("listening")
		if mm := reListening.FindStringSubmatch(m); mm != nil {
			p.log.Listeners = append(p.log.Listeners, p.ev(env, mm[1], mm[2]))
		}
	case strings.HasPrefix(m, "Stats initialized for "), m == "Stats disabled":
		count("start")
		p.log.Starts = append(p.log.Starts, p.ev(env, "", strings.TrimPrefix(m, "Stats initialized for ")))
	case strings.HasPrefix(m, "Ratelimit server received "), strings.HasPrefix(m, "Received signal "):
		count("shutdown")
		sig := strings.TrimPrefix(strings.TrimPrefix(m, "Ratelimit server received "), "Received signal ")
		if i := strings.IndexByte(sig, ','); i >= 0 {
			sig = sig[:i]
		}
		p.log.Shutdowns = append(p.log.Shutdowns, p.ev(env, "", sig))
	case strings.HasPrefix(m, "Flush"):
		if mm := reFlush.FindStringSubmatch(m); mm != nil {
			count("flush")
			p.log.FlushLines++
			v, _ := strconv.ParseFloat(mm[3], 64) // out of range: ±Inf, refused by sinkAdd
			kind := map[string]string{"Counter": "c", "Gauge": "g", "Timer": "ms"}[mm[1]]
			p.sinkAdd(mm[2], v, kind, env.timeNs)
		} else {
			count("other")
		}
	case m == "starting get limit lookup":
		count("get_limit_lookup")
	case m == "starting cache lookup":
		count("cache_lookup")
		if c := p.call; c != nil {
			c.mixed = c.mixed || c.lookups // a second call's cache lookup
			c.lookups = true
		}
	case strings.HasPrefix(m, "looking up key: "):
		count("looking_up_key")
	case strings.HasPrefix(m, "found rate limit: "):
		count("found_rate_limit")
	default:
		count("other")
	}
}

// configLoaded makes the configuration being loaded the one in force
// (`Successfully loaded new configuration`; the `initial ratelimit configs`
// line that follows it changes nothing).
func (p *logParser) configLoaded() {
	if p.cfgLoading {
		p.cfgActive, p.cfgLoading, p.cfgKnown = p.cfgPending, false, true
	}
}

// startServing is called on a request line: a configuration whose
// `loading domain` lines were not followed by a success line (older RLS
// versions, a cut log) is in force once the RLS answers calls, if no other
// was loaded before.
func (p *logParser) startServing() {
	if p.cfgLoading && !p.cfgKnown {
		p.configLoaded()
	}
}

// callKey notes the domain of a cache key of the call being read.
func (p *logParser) callKey(key string) {
	c := p.call
	if c == nil {
		return
	}
	dom, src, _ := p.keyDomain(key)
	switch {
	case !c.lookups || src != "descriptor":
		c.mixed = true
	case c.domain == "":
		c.domain = dom
	case c.domain != dom:
		c.mixed = true
	}
}

// endCall ends the call being read at its response with n statuses: when
// its lines were its own (one status per descriptor, one cache lookup, one
// domain in its cache keys), its no-limit decisions take that domain.
func (p *logParser) endCall(n int) {
	c := p.call
	p.call = nil
	if c == nil || c.mixed || !c.lookups || c.domain == "" || n != c.descs {
		return
	}
	for _, d := range c.noDom {
		if d.Domain == "" {
			d.Domain, d.DomainSource = c.domain, DomainSourceCall
		}
	}
}

// sinkAdd sums a stats sink line into Log.Sink; a value that cannot be
// summed is named in Sink.RejectedLines instead.
func (p *logParser) sinkAdd(name string, v float64, kind string, ns int64) {
	if err := p.log.Sink.add(name, v, kind, ns); err != nil {
		p.log.Sink.reject(fmt.Sprintf("%s:%d", p.log.Name, p.n), err)
	}
}

func (p *logParser) addError(env envelope, kind, class, msg string) {
	p.log.Errors = append(p.log.Errors, ErrorLine{Line: p.n, TimeNs: env.timeNs, TimeResolutionNs: env.res,
		Level: env.level, Kind: kind, Class: class, Message: msg})
}

func (p *logParser) popDesc() *openDesc {
	if len(p.descs) == 0 {
		return nil
	}
	d := p.descs[0]
	p.descs = p.descs[1:]
	return d
}

func (p *logParser) closeLookup(key string) {
	for i, lk := range p.lookups {
		if lk.Value == key {
			p.lookups = append(p.lookups[:i], p.lookups[i+1:]...)
			return
		}
	}
}

// newKeyDecision fills key, window, domain and descriptor of a decision on key.
func (p *logParser) newKeyDecision(env envelope, key string) *Decision {
	d := &Decision{Line: p.n, TimeNs: env.timeNs, TimeResolutionNs: env.res, Key: key}
	if mm := reWindow.FindStringSubmatch(key); mm != nil {
		d.WindowStart, _ = strconv.ParseInt(mm[1], 10, 64)
	}
	d.Domain, d.DomainSource, d.Descriptor = p.keyDomain(key)
	if li, ok := p.limitForDecision(d); ok {
		d.Limit, d.Unit = li.limit, li.unit
	}
	return d
}

// keyDomain splits a cache key (prefix+domain_k_v_..._window,
// limiter/cache_key.go) into its domain and descriptor: the longest
// `_k_v_..._` suffix of the key before its window that a logged descriptor
// encodes (source "descriptor"), else the text before the first `_`
// ("key_prefix", no descriptor), else nothing.
func (p *logParser) keyDomain(key string) (domain, source string, entries []descriptor.DescriptorEntry) {
	stem := key
	if mm := reWindow.FindStringSubmatch(key); mm != nil {
		stem = key[:len(key)-len(mm[1])] // keeps the trailing "_"
	}
	for i := 1; i < len(stem); i++ {
		if stem[i] != '_' {
			continue
		}
		if es, ok := p.encIndex[stem[i:]]; ok {
			return stem[:i], "descriptor", es
		}
	}
	if i := strings.IndexByte(key, '_'); i > 0 {
		return key[:i], "key_prefix", nil
	}
	return "", "", nil
}

func (p *logParser) limitForDecision(d *Decision) (limitInfo, bool) {
	if d.Descriptor == nil {
		return limitInfo{}, false
	}
	li, ok := p.byDesc[descriptorText(d.Descriptor)]
	return li, ok && li.known
}

func (p *logParser) markShadow(statKey string) {
	prefix := strings.ReplaceAll(statKey, ".", "_") + "_"
	for _, d := range p.open {
		if d.Shadow || !d.HasCurrent || (d.Limit > 0 && d.Current <= uint64(d.Limit)) {
			continue
		}
		if strings.HasPrefix(d.Key, prefix) || strings.Contains(d.Key, "_"+prefix) {
			d.Shadow = true
			return
		}
	}
}

func compatible(d *Decision, s Status) bool {
	if d.Limit != 0 && d.Limit != s.Limit {
		return false
	}
	if d.Unit != "" && s.Unit != "" && d.Unit != s.Unit {
		return false
	}
	L := uint64(s.Limit)
	if d.LocalCache {
		return (s.Code == "OVER_LIMIT" && !d.Shadow) || (s.Code == "OK" && d.Shadow)
	}
	switch s.Code {
	case "OK":
		if s.LimitRemaining > 0 {
			return uint64(s.LimitRemaining) <= L && d.Current == L-uint64(s.LimitRemaining)
		}
		return d.Current == L || (d.Shadow && d.Current > L)
	case "OVER_LIMIT":
		return d.Current > L && !d.Shadow
	}
	return false
}

func (p *logParser) pairResponse(resp *Response) {
	for _, s := range resp.Statuses {
		if !s.HasLimit {
			unl := s.Unlimited()
			matched := false
			for i, d := range p.noLimit {
				if d.Unlimited == unl {
					d.ResponseLine, d.CodeDerived, d.Code = p.n, false, s.Code
					p.noLimit = append(p.noLimit[:i], p.noLimit[i+1:]...)
					matched = true
					break
				}
			}
			if !matched {
				p.log.UnmatchedStatuses++
			}
			continue
		}
		matched := false
		for i, d := range p.open {
			if !compatible(d, s) {
				continue
			}
			d.Code, d.CodeDerived, d.ResponseLine = s.Code, false, p.n
			d.Limit, d.Unit, d.LimitRemaining = s.Limit, s.Unit, s.LimitRemaining
			p.open = append(p.open[:i], p.open[i+1:]...)
			matched = true
			break
		}
		if !matched {
			p.log.UnmatchedStatuses++
		}
	}
}

// deriveCode sets the code of a decision no response status was paired
// with: OK iff current <= limit (limiter/base_limiter.go), OK for shadow,
// OVER_LIMIT for a local-cache hit, UNKNOWN when the limit is not known.
func (p *logParser) deriveCode(d *Decision) {
	d.CodeDerived = true
	switch {
	case d.Shadow:
		d.Code = "OK"
	case d.LocalCache:
		d.Code = "OVER_LIMIT"
	case d.Limit == 0:
		d.Code = "UNKNOWN"
	case d.Current <= uint64(d.Limit):
		d.Code = "OK"
	default:
		d.Code = "OVER_LIMIT"
	}
}

func (p *logParser) finish() *Log {
	for _, d := range p.open {
		p.deriveCode(d)
	}
	p.log.PendingLookups = p.lookups
	p.log.Decisions = make([]Decision, 0, len(p.all))
	for _, d := range p.all {
		p.log.Decisions = append(p.log.Decisions, *d)
	}
	sort.SliceStable(p.log.Decisions, func(i, j int) bool { return p.log.Decisions[i].Line < p.log.Decisions[j].Line })
	if len(p.log.Decisions) == 0 {
		rls := p.log.TextLines + p.log.JSONLines
		switch {
		case p.log.Lines == 0:
			p.log.Warnings = append(p.log.Warnings, "no decision lines: the log is empty")
		case p.debugMsgs == 0:
			p.log.Warnings = append(p.log.Warnings, fmt.Sprintf("%s none of the %d envoyproxy/ratelimit lines is at level debug, the only level at which the RLS logs its decisions (its default LOG_LEVEL is WARN)", WarnNoDebugLines, rls))
		default:
			p.log.Warnings = append(p.log.Warnings, fmt.Sprintf("no decision lines, though %d lines are at level debug: the RLS answered no ShouldRateLimit call in this log", p.debugMsgs))
		}
	}
	return p.log
}

// parseDescriptor splits `(k=v),(k2=v2)` (service/ratelimit.go joins
// fmt.Sprintf("(%s=%s)") entries with ","). The key ends at the first '=';
// a value containing "),(" cannot be told apart from an entry boundary.
func parseDescriptor(raw string) []descriptor.DescriptorEntry {
	s := strings.TrimSpace(raw)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return nil
	}
	s = s[1 : len(s)-1]
	var out []descriptor.DescriptorEntry
	for _, part := range strings.Split(s, "),(") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil
		}
		out = append(out, descriptor.DescriptorEntry{Key: k, Value: v})
	}
	return out
}

// encodeEntries is the descriptor part of a cache key, "_k_v_k2_v2_"
// (descriptor.CacheKeyPrefix without a domain).
func encodeEntries(es []descriptor.DescriptorEntry) string { return descriptor.CacheKeyPrefix("", es) }

func descriptorText(es []descriptor.DescriptorEntry) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = "(" + e.Key + "=" + e.Value + ")"
	}
	return strings.Join(parts, ",")
}

func parseLimitDef(line int, key, body string) LimitDef {
	ld := LimitDef{Line: line, Key: key}
	if body == "" {
		return ld
	}
	ld.HasLimit = true
	for _, kv := range strings.Split(body, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "requests_per_unit":
			n, _ := strconv.ParseUint(v, 10, 32)
			ld.RequestsPerUnit = uint32(n)
		case "unit":
			ld.Unit = v
		case "unlimited":
			ld.Unlimited = v == "true"
		case "shadow_mode":
			ld.ShadowMode = v == "true"
		case "quota_mode":
			ld.QuotaMode = v == "true"
		}
	}
	return ld
}

// CountCodes counts decisions by Code.
func (l *Log) CountCodes() map[string]int {
	m := map[string]int{}
	for _, d := range l.Decisions {
		m[d.Code]++
	}
	return m
}

// EvidenceDecisions converts the decisions to the shared evidence.Decision
// lines of rls/decisions.jsonl, in log order: Shadow is set for a
// shadow-mode hit over its limit, NoLimit and Unlimited as parsed. Time
// resolution, pairing and the local-cache flag are dropped; use
// Log.Decisions for them.
func (l *Log) EvidenceDecisions() []evidence.Decision {
	out := make([]evidence.Decision, 0, len(l.Decisions))
	for _, d := range l.Decisions {
		out = append(out, evidence.Decision{
			TimeNs: d.TimeNs, Domain: d.Domain, Descriptor: d.Descriptor, Key: d.Key,
			WindowStart: d.WindowStart, Current: d.Current, Limit: d.Limit, Unit: d.Unit,
			Code: d.Code, Error: d.Error, Shadow: d.Shadow && d.HasCurrent && d.Limit > 0 && d.Current > uint64(d.Limit),
			NoLimit: d.NoLimit, Unlimited: d.Unlimited,
		})
	}
	return out
}
