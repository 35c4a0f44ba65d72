// Package attack fires a fixed set of request IDs at one or more HTTP targets
// and records the outcome of every request as evidence.Request lines.
//
// Guarantees:
//   - each ID is sent at most once: rlbench has no retry path, and no
//     library under it re-sends (see "No replays");
//   - each ID that was attempted produces exactly one evidence line, written
//     as soon as its result arrives;
//   - a request that never left the client (dial error such as "too many
//     open files", connection refused, TLS handshake failure, nothing
//     written) is recorded with NotSent and makes the attack incomplete; it
//     is never counted as "no response";
//   - an ID that was never attempted (the attack was interrupted) has no line;
//   - invalid options (method, header names and values, IDs, targets, split)
//     are errors wrapping ErrInvalidOptions before anything is sent.
//
// # Engine
//
// Run speaks HTTP/1.1 itself on connections it opens, using net/http's own
// wire code: each target's request is serialized once by (*http.Request).Write
// into a template around the ID header, and responses are parsed by
// http.ReadResponse. Each worker goroutine writes a request with one Write
// call, reads its response, and reuses the connection when the response
// allows it (keep-alive; "Connection: close" and HTTP/1.0 close it). There is
// no per-request goroutine, timer, context or header map, and no request is
// built per ID. net/http's Transport is not used because it cannot open a
// connection without sending a request (needed for warm bursts), and because
// it replays requests (below); vegeta's Attacker is not used on the hot path
// because its per-hit dispatch and result channel cost more CPU than the
// whole target budget (see bench/compare.sh and BenchmarkThroughput). vegeta
// remains the pacing definition: Options.Rate is a vegeta.Rate and the
// schedule is its ConstantPacer's (hit k at (k+1)/rate after the start).
//
// # No replays
//
// Go's net/http Transport silently re-sends a request on a new connection
// when a reused keep-alive connection dies after the request was written, if
// the request is "replayable" (net/http request.go isReplayable: GET, HEAD,
// OPTIONS, TRACE without a body, or any method with an Idempotency-Key /
// X-Idempotency-Key header; transport.go shouldRetryRequest). Run never hands
// a request to a Transport: its only write of an ID's bytes is one
// conn.Write, and when that fails after any byte left, the request is
// recorded as indeterminate (code 0), never written again. Only a write that
// put not one byte on a reused connection (the server had closed it) is tried
// once more on a new connection: nothing of it reached the server. Before a
// connection idle for more than a millisecond is reused, a non-blocking
// MSG_PEEK checks that the server has not closed it. As a guard, the writes
// per ID are counted; a count above 1 is reported in the line's Error and in
// Summary.Resent. TestRunNeverResends proves it against a backend that kills
// kept-alive connections after reading a request (bare vegeta re-sends there,
// TestBareVegetaResends), and TestResendGuardDetects shows the guard catching
// a deliberate re-send.
//
// # Bursts and per-connection buckets
//
// Without a Rate, Run starts one worker per request in flight (all IDs at
// once by default), and each worker first opens and warms its connection
// (TCP connect and, for https, the TLS handshake; no HTTP request, so no
// limiter token is spent) and builds its first request. When every worker is
// ready, all are released together from a barrier, so the first requests
// leave within a send spread that Summary reports (Burst, SendSpreadNs).
//
// Warm connections matter for Envoy's local rate limit with
// local_rate_limit_per_downstream_connection: true, which keeps one token
// bucket per downstream connection, created with the connection's first
// request (envoy source/extensions/filters/http/local_ratelimit/
// local_ratelimit.cc, Filter::getPerConnectionRateLimiter: created in the
// connection's filter state when a request is first checked). A warmed
// connection has no bucket yet, so warming spends nothing.
// In an all-at-once burst every request has its own connection and therefore
// its own full bucket. When requests outnumber workers (Concurrency below
// the number of IDs), later requests reuse idle connections, so several
// requests share one connection's bucket; DisableKeepAlives makes every
// request use a new connection (closed after its response), i.e. one bucket
// per request, at the cost of a TCP (and TLS) handshake per request after the
// first burst. Envoy's default (process-wide bucket) does not depend on
// connections.
//
// # Fixed rates
//
// With a Rate, a dispatcher releases ID k at the intended time
// start+(k+1)/rate to an idle worker. The pool starts small, with warm
// connections, and grows only when a request is due and no worker is idle,
// up to a bound sized from the rate and the observed latency: rate*10ms at
// first, then, once, rate*max(4*L, 10ms) with L the mean latency of the
// first 200 responses; at least 16, at most the descriptor cap, never
// unbounded, and never re-sized from later latencies, which an overloaded
// client inflates itself. Such a client falls behind its schedule, which
// the pacing error shows, instead of opening thousands of connections. Each
// line records IntendedNs; Summary reports the pacing error (SentNs minus
// intended) and the latency from the intended send time (coordinated
// omission) besides the latency from the actual send.
//
// # Descriptors
//
// Each connection is a file descriptor. Go raises the soft RLIMIT_NOFILE to
// the hard limit at startup (syscall/rlimit.go, go.dev/issue/46279); Run
// raises it too if it is still lower, and caps the default number of workers
// at half of the descriptors still free (Config.FDCap), leaving the rest to an
// in-process lab or backend and to the evidence files. An explicit
// Concurrency beyond what the limit allows is an invalid option.
package attack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/net/http/httpguts"

	"github.com/rlbench/rlbench/evidence"
)

// Schema is the value of Summary.Schema.
const Schema = evidence.AttackSummarySchema

// Defaults applied by Run to zero-valued Options fields.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultBodyPrefix = 64
	DefaultIDHeader   = "X-Rlbench-Id"
	DefaultMethod     = http.MethodGet
)

// ErrInvalidOptions is wrapped by every error Run returns before sending
// anything because of its Options (IDs, targets, split, method, headers,
// path, negative values, a concurrency the descriptor limit cannot hold).
// Callers map it to a usage error.
var ErrInvalidOptions = errors.New("invalid attack options")

func invalid(format string, a ...any) error {
	return fmt.Errorf("attack: %w: %s", ErrInvalidOptions, fmt.Sprintf(format, a...))
}

// DefaultCaptureHeaders are the response headers recorded when
// Options.CaptureHeaders is nil. An entry ending in '*' matches every header
// with that prefix. They are the rate-limit headers Envoy and
// envoyproxy/ratelimit emit: x-envoy-ratelimited (Envoy global rate limit
// filter on OVER_LIMIT), x-ratelimit-limit/-remaining/-reset (Envoy
// enable_x_ratelimit_headers: DRAFT_VERSION_03, local and global filters),
// ratelimit-* (envoyproxy/ratelimit LIMIT_RESPONSE_HEADERS_ENABLED),
// retry-after, x-envoy-upstream-service-time (present only when the request
// reached the upstream) and server.
var DefaultCaptureHeaders = []string{
	"x-envoy-ratelimited",
	"x-ratelimit-limit",
	"x-ratelimit-remaining",
	"x-ratelimit-reset",
	"ratelimit-*",
	"retry-after",
	"x-envoy-upstream-service-time",
	"server",
}

// Options configures one Run.
type Options struct {
	// IDs are the request IDs, sent in this order; they must be unique and
	// valid header values (see ReadIDs).
	IDs []string
	// Targets receive the IDs according to Split (see Assign).
	Targets []Target
	Split   Split
	// Seed drives SplitWeights' shuffle.
	Seed int64

	// Method defaults to GET (upper-cased; must be an RFC 9110 token). Path
	// is appended to each Target.URL verbatim (it may carry a query); it
	// must be empty or start with '/' and must not contain '#'.
	Method, Path string
	// Header is sent with every request (a "Host" entry sets the Host).
	// Names must be RFC 9110 tokens and values must not contain CR, LF or
	// other control characters except tab.
	Header http.Header
	// Body is sent with every request (Content-Length set).
	Body []byte

	// Concurrency caps the requests in flight (workers). 0 means the
	// default: without a Rate, all IDs at once, capped at Config.FDCap; with
	// a Rate, a pool sized from the rate and the observed latency (package
	// doc, "Fixed rates"). With a Rate, a cap that is reached makes the
	// attack fall behind its schedule (reported as pacing error).
	Concurrency int
	// Rate paces the sends open-loop on vegeta's ConstantPacer schedule
	// (hit k at (k+1)*Per/Freq after the start); the zero value sends as
	// fast as the workers allow. Negative values are an error.
	Rate vegeta.Rate
	// InterruptGrace is how long an interrupted attack waits for requests
	// already in flight before cancelling them (they are then recorded with
	// code 0, indeterminate); default 1s.
	InterruptGrace time.Duration
	// Timeout bounds each request from the start of its write until its body
	// was read, and each dial plus TLS handshake; default 10s. A timed-out
	// request is recorded with code 0: it may still have been processed by
	// the backend.
	Timeout time.Duration
	// CaptureHeaders lists the response header names (case-insensitive, a
	// trailing '*' is a prefix) copied into evidence.Request.Headers under
	// lower-case names; nil means DefaultCaptureHeaders, an empty non-nil
	// slice captures none.
	CaptureHeaders []string
	// BodyPrefix is how many leading bytes of each response body are kept
	// in evidence.Request.Body; 0 means DefaultBodyPrefix, negative keeps none.
	BodyPrefix int
	// IDHeader carries the ID on each request; default "X-Rlbench-Id". It
	// replaces a header of the same name in Header.
	IDHeader string
	// Name names the attack; it is recorded as each line's Phase.
	Name string
	// OnStart, if set, is called once with the instant the sends begin:
	// after every connection was warmed, when the barrier of an unpaced
	// attack opens or the schedule of a paced one starts (its first request
	// is due one interval later). Callers that time something relative to
	// the attack (a fault at an offset into it) start their clocks there,
	// not when they called Run: warming may take a while. It must not
	// block; it is not called when nothing is sent.
	OnStart func(time.Time)

	// DisableKeepAlives opens a new connection for every request and sends
	// "Connection: close". Envoy's local rate limit with
	// local_rate_limit_per_downstream_connection keeps one bucket per
	// connection, so this gives every request its own bucket (package doc,
	// "Bursts and per-connection buckets").
	DisableKeepAlives bool
	// MaxConnections caps the open connections per target; 0 is no cap
	// beyond the workers. Requests beyond it wait for an idle connection and
	// the wait does not count as latency (it is not on the wire).
	MaxConnections int
	// TLSConfig is used for https targets; nil uses Go's defaults. Run uses
	// a copy with ServerName set from the URL when empty and NextProtos
	// ["http/1.1"].
	TLSConfig *tls.Config

	// testResend makes the engine write a request a second time on a new
	// connection after a reused connection failed, as net/http's Transport
	// does (tests only: it proves that the resend guard detects it).
	testResend bool
	// testDial replaces the TCP dial (tests only: it injects dial errors
	// such as EMFILE).
	testDial func(ctx context.Context, addr string) (net.Conn, error)
}

// TargetConfig is one target as recorded in Summary.Config.
type TargetConfig = evidence.AttackTarget

// Config records the effective options of an attack (defaults applied).
type Config = evidence.AttackConfig

// Quantiles summarises a distribution of durations (evidence.AttackQuantiles).
type Quantiles = evidence.AttackQuantiles

// Burst describes the barrier-released first requests of an unpaced attack
// (evidence.AttackBurst).
type Burst = evidence.AttackBurst

// Pacing describes a paced attack against its schedule (evidence.AttackPacing).
type Pacing = evidence.AttackPacing

// Summary describes a finished (or interrupted) attack; callers add it to
// attack.json (evidence.Attack) after requests.jsonl is closed. The record
// type is evidence's (evidence.AttackSummary).
type Summary = evidence.AttackSummary

// Run sends every ID in opts.IDs once, to the target Assign picks, and
// writes one evidence.Request per result to out as soon as it arrives (out
// flushes at least every evidence.FlushEvery; Run does not close out).
//
// The ID travels in opts.IDHeader. Timing: evidence.Request.SentNs is when
// the request's write began on an open connection (connection setup is not
// latency); LatencyNs runs from then until the body was read or the request
// failed; paced attacks also record IntendedNs.
//
// Cancellation: when ctx is cancelled Run sends no further IDs, waits for
// requests already in flight (at most opts.InterruptGrace, then cancels
// them: code 0), records them, and returns the Summary with
// Interrupted=true, Complete=false and a nil error — the interruption is
// reported only in the Summary, so a caller that writes the Summary on nil
// error keeps the evidence.
//
// Errors: invalid options return (nil, error wrapping ErrInvalidOptions)
// before anything is sent; a failing write to out stops the attack and
// returns the Summary (with Error set, Complete=false) together with that
// error. Requests not sent make the Summary incomplete but are not an error
// of Run.
func Run(ctx context.Context, opts Options, out *evidence.Writer) (*Summary, error) {
	if out == nil {
		return nil, errors.New("attack: nil evidence writer")
	}
	p, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(p, out)
	if err != nil {
		return nil, err
	}
	return e.run(ctx)
}

// Check reports the error Run would return for opts before sending anything
// (wrapping ErrInvalidOptions), without sending or writing anything.
func Check(opts Options) error {
	p, err := prepare(opts)
	if err != nil {
		return err
	}
	_, err = newEngine(p, nil)
	return err
}

// prepared holds validated options and everything precomputed for a Run.
type prepared struct {
	opts     Options
	assign   []int32  // per ID index: target index
	tnames   []string // per target: name
	urls     []string // per target: URL+Path
	idKey    string   // canonical ID header name
	capture  []string // lower-case exact names
	prefixes []string // lower-case prefixes
	workers  int      // bound on workers at the start
	maxWork  int      // absolute bound (rate mode may grow to it)
	config   Config
}

// fdMargin descriptors are kept free besides the halving (package doc).
const fdMargin = 64

func prepare(o Options) (*prepared, error) {
	if len(o.IDs) == 0 {
		return nil, invalid("no ids")
	}
	if len(o.Targets) == 0 {
		return nil, invalid("no targets")
	}
	for i, id := range o.IDs {
		if err := checkID(id); err != nil {
			return nil, invalid("id %d: %v", i+1, err)
		}
	}
	if i, j, dup := findDuplicate(o.IDs); dup {
		return nil, invalid("id %d %q duplicates id %d", j+1, o.IDs[j], i+1)
	}
	if o.Method == "" {
		o.Method = DefaultMethod
	}
	o.Method = strings.ToUpper(o.Method)
	if !httpguts.ValidHeaderFieldName(o.Method) { // method = token (RFC 9110 9.1)
		return nil, invalid("method %q is not an HTTP token", o.Method)
	}
	if o.Method == "CONNECT" {
		return nil, invalid("method CONNECT is not supported")
	}
	if o.Path != "" && !strings.HasPrefix(o.Path, "/") {
		return nil, invalid("path %q must start with '/'", o.Path)
	}
	if strings.Contains(o.Path, "#") {
		return nil, invalid("path %q must not contain '#'", o.Path)
	}
	if strings.ContainsFunc(o.Path, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, invalid("path %q contains spaces or control characters", o.Path)
	}
	for k, vs := range o.Header {
		for _, v := range append(vs[:len(vs):len(vs)], "") { // "" checks the name of a header without values
			if err := CheckHeader(k, v); err != nil {
				return nil, invalid("%v", err)
			}
		}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < 0 {
		return nil, invalid("negative timeout %s", o.Timeout)
	}
	if o.BodyPrefix == 0 {
		o.BodyPrefix = DefaultBodyPrefix
	}
	if o.IDHeader == "" {
		o.IDHeader = DefaultIDHeader
	}
	if !httpguts.ValidHeaderFieldName(o.IDHeader) {
		return nil, invalid("id header %q is not an HTTP token", o.IDHeader)
	}
	if o.CaptureHeaders == nil {
		o.CaptureHeaders = DefaultCaptureHeaders
	}
	if o.Concurrency < 0 {
		return nil, invalid("negative concurrency %d", o.Concurrency)
	}
	if o.MaxConnections < 0 {
		return nil, invalid("negative max connections %d", o.MaxConnections)
	}
	if o.Rate.Freq < 0 || o.Rate.Per < 0 {
		return nil, invalid("negative rate %s", o.Rate)
	}
	if o.InterruptGrace < 0 {
		return nil, invalid("negative interrupt grace %s", o.InterruptGrace)
	}

	names := map[string]bool{}
	ts := make([]Target, len(o.Targets))
	for k, t := range o.Targets {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, invalid("target %d url %q: %v", k+1, t.URL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, invalid("target %d url %q: want http(s)://host[:port][/prefix]", k+1, t.URL)
		}
		if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(t.URL, "?#") {
			return nil, invalid("target %d url %q must not have a query or fragment", k+1, t.URL)
		}
		if u.User != nil {
			return nil, invalid("target %d url %q must not carry user info", k+1, t.URL)
		}
		if t.Name == "" {
			t.Name = u.Host
		}
		if names[t.Name] {
			return nil, invalid("duplicate target name %q", t.Name)
		}
		names[t.Name] = true
		t.URL = strings.TrimSuffix(t.URL, "/")
		if o.Path == "" && t.URL == u.Scheme+"://"+u.Host {
			t.URL += "/"
		}
		ts[k] = t
	}
	o.Targets = ts

	to, err := assignTargets(len(o.IDs), len(o.Targets), o.Split, o.Seed)
	if err != nil {
		return nil, fmt.Errorf("attack: %w: %v", ErrInvalidOptions, err)
	}

	p := &prepared{opts: o, assign: to}
	n := len(o.IDs)
	fd := fdLimits()
	cfg := Config{
		Name: o.Name, Split: o.Split.String(), Seed: o.Seed, Method: o.Method, Path: o.Path,
		BodyBytes: len(o.Body), Concurrency: o.Concurrency,
		Rate: "0", TimeoutNs: int64(o.Timeout), IDs: n, IDHeader: o.IDHeader,
		CaptureHeaders: o.CaptureHeaders, BodyPrefix: o.BodyPrefix,
		DisableKeepAlives: o.DisableKeepAlives, MaxConnections: o.MaxConnections,
		FDLimit: fd.limit, FDOpen: fd.open, FDCap: fd.capacity(),
	}
	paced := o.Rate.Freq > 0 && o.Rate.Per > 0
	if paced {
		cfg.Rate = FormatRate(o.Rate)
		cfg.RatePerSec = float64(o.Rate.Freq) / o.Rate.Per.Seconds()
	}
	cfg.Barrier = !paced

	// Workers: explicit, or the default bounded by IDs and descriptors.
	absolute := n
	if cfg.FDCap > 0 && cfg.FDCap < absolute {
		absolute = cfg.FDCap
	}
	switch {
	case o.Concurrency > 0:
		p.maxWork = min(o.Concurrency, n)
		if fd.limit > 0 && p.maxWork > fd.free() {
			return nil, invalid("concurrency %d needs more file descriptors than are free (%d open of a limit of %d); raise the limit (ulimit -n) or lower --concurrency",
				p.maxWork, fd.open, fd.limit)
		}
		p.workers = p.maxWork
		cfg.WorkersFrom = "concurrency"
	case paced:
		p.maxWork = absolute
		p.workers = rateBound(cfg.RatePerSec, 0, absolute)
		cfg.WorkersFrom = "rate"
	default:
		p.maxWork = absolute
		p.workers = absolute
		cfg.WorkersFrom = "ids"
		if absolute < n {
			cfg.WorkersFrom = "fd_limit"
		}
	}
	cfg.Workers = p.workers

	for _, c := range o.CaptureHeaders {
		c = strings.ToLower(strings.TrimSpace(c))
		if pre, ok := strings.CutSuffix(c, "*"); ok {
			p.prefixes = append(p.prefixes, pre)
		} else if c != "" {
			p.capture = append(p.capture, c)
		}
	}
	p.idKey = http.CanonicalHeaderKey(o.IDHeader)
	counts := make([]int, len(o.Targets))
	for _, t := range to {
		counts[t]++
	}
	for k, t := range o.Targets {
		p.tnames = append(p.tnames, t.Name)
		p.urls = append(p.urls, t.URL+o.Path)
		cfg.Targets = append(cfg.Targets, TargetConfig{Name: t.Name, URL: t.URL, IDs: counts[k]})
	}
	for k := range o.Header {
		cfg.HeaderNames = append(cfg.HeaderNames, http.CanonicalHeaderKey(k))
	}
	sort.Strings(cfg.HeaderNames)
	p.config = cfg
	return p, nil
}

// rateBound is the worker bound for a paced attack at perSec requests/s
// with an observed latency lat: Little's law (in flight = rate x latency)
// with 4x headroom and at least 10 ms of latency, at least 16 workers, at
// most limit.
func rateBound(perSec float64, lat time.Duration, limit int) int {
	l := max(4*lat, 10*time.Millisecond)
	b := int(math.Ceil(perSec * l.Seconds()))
	b = max(b, 16)
	return max(1, min(b, limit))
}

// findDuplicate reports the first pair i<j of equal IDs, using an
// open-addressing table of indexes (4 bytes per slot, two slots per ID)
// instead of a map[string]int (about 10 times the memory at 1 M IDs).
func findDuplicate(ids []string) (i, j int, dup bool) {
	size := 1
	for size < 2*len(ids) {
		size <<= 1
	}
	table := make([]int32, size) // index+1; 0 = empty
	seed := maphash.MakeSeed()
	mask := uint64(size - 1)
	for k, id := range ids {
		h := maphash.String(seed, id) & mask
		for {
			v := table[h]
			if v == 0 {
				table[h] = int32(k + 1)
				break
			}
			if ids[v-1] == id {
				return int(v - 1), k, true
			}
			h = (h + 1) & mask
		}
	}
	return 0, 0, false
}

func (p *prepared) captures(lk string) bool {
	for _, c := range p.capture {
		if c == lk {
			return true
		}
	}
	for _, pre := range p.prefixes {
		if strings.HasPrefix(lk, pre) {
			return true
		}
	}
	return false
}
