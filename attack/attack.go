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
// http.ReadResponse. Each worker goroutine writes a request once (on Linux,
// over plain TCP, first in one raw non-blocking write(2) that keeps its P,
// then through the connection's Write for what the socket did not take at
// once), reads its response, and reuses the connection when the response
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
// a request to a Transport: it writes each byte of an ID's request once
// (one raw write(2), then one conn.Write of what that left), and when the
// write fails after any byte left, the request is recorded as
// indeterminate (code 0), never written again. Only a write that
// put not one byte on a reused connection (the server had closed it) is tried
// once more on a new connection: nothing of it reached the server. Before a
// connection idle for more than a millisecond is reused, a non-blocking
// MSG_PEEK checks that the server has not closed it. As a guard, the writes
// per ID are counted; a count above 1 is reported in the line's Error and in
// evidence.AttackSummary.Resent. TestRunNeverResends proves it against a backend that kills
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
// leave within a send spread that evidence.AttackSummary reports (evidence.AttackBurst, SendSpreadNs).
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
// start+(k+1)/rate. Over HTTP/1.1 with keep-alive it writes the request
// itself (a direct send, evidence.AttackPacing.DirectSends) on a warm connection whose
// worker is parked reading it; the worker reads the response when the
// network poller wakes it and parks again. No goroutine is scheduled
// between the due time and the write, and on Linux the dispatcher sleeps
// its last few milliseconds in clock_nanosleep(2), as the runtime's timers
// can fire a millisecond late on an idle process. A wake-up can still be
// late by milliseconds (a virtual CPU the hypervisor runs later, a busy
// core), and every ID due meanwhile with it; a relief dispatcher (Linux)
// waits in the network poller and sends, directly, each ID still unclaimed
// 200 µs after its intended time (evidence.AttackPacing.ReliefSends). The two claim IDs
// from one counter, so each ID still leaves once. When no parked connection is free (or over HTTP/2,
// without keep-alive, or for a flow with a request longer than 4 KB, whose
// write could wait for the server to read it) the ID goes to an idle
// worker instead; when parked connections hold every MaxConnections slot
// of a target, its IDs wait for one of them. The pool starts
// with warm connections, and grows only when a request is due and no worker is idle,
// up to a bound sized from the rate and the observed latency: rate*10ms at
// first, then, once, rate*max(4*L, 10ms) with L the mean latency of the
// first 200 responses; at least 16, at most the descriptor cap, never
// unbounded, and never re-sized from later latencies, which an overloaded
// client inflates itself. Such a client falls behind its schedule, which
// the pacing error shows, instead of opening thousands of connections. Each
// line records IntendedNs; evidence.AttackSummary reports the pacing error (SentNs minus
// intended) and the latency from the intended send time (coordinated
// omission) besides the latency from the actual send.
//
// # Flows
//
// An attack may hold several flows (Options.Flows, issue 11): each is a
// client of its own — a user at 300/s with "x-user: A", another at 20/s,
// an endpoint /report next to /ping — with its own IDs, rate (or all at
// once), method, path, headers, body, split over the attack's targets,
// concurrency and keep-alive, and its own connections (an Envoy
// per-connection bucket is never shared by two flows). Every flow is warmed
// first; then they start at one instant: one OnStart, one barrier that
// releases the first requests of all unpaced flows, and the schedules of
// all paced flows counted from it (open loop per flow: hit k of a flow at
// rate r is due (k+1)/r after the common start, whatever the other flows
// do). Each line records its flow (evidence.Request.Flow); evidence.AttackSummary.Flows
// holds each flow's configuration, counts and burst or pacing figures. The
// no-replay guarantee below holds for every flow: flows share the engine.
// A flow with Requests (request templates, as read from vegeta's target
// formats) sends ID k as template k mod len(Requests), each to its own
// target, path, method, headers and body.
//
// # Shards
//
// Options.Shard (K of N, issue 15) sends only the IDs at positions k with
// k mod N == K of every flow: targets are assigned over the whole flow
// first and paced flows keep the whole flow's schedule, so N shards
// started at one instant send exactly the unsharded attack between them.
// evidence.AttackSummary.Shard records K, N, the counts and digests of the ID set and of
// every flow's configuration, so that a merge can check that the shards
// cover the attack exactly once; evidence.AttackSummary.Host and evidence.AttackSummary.Clock (wall and
// monotonic clocks at the start, the kernel's clock source and NTP state)
// help bound the clock offsets between hosts.
//
// # Synchronised start
//
// Options.StartAt holds the start until a wall-clock instant: Run waits
// until WarmAhead before it, warms every connection, and waits for the
// instant, so the first requests leave at it rather than after a warm-up of
// unknown length. evidence.AttackSummary.StartAt records how late the start was (the
// release instant minus StartAt: warming that took longer than WarmAhead,
// an instant already past, scheduling).
//
// # HTTP/2
//
// With Protocol ProtoH2 (TLS with ALPN h2) or ProtoH2C (cleartext with
// prior knowledge), Run dials each connection itself, hands it to
// golang.org/x/net/http2 as a ClientConn (Transport.NewClientConn) and
// warms it with the client preface, the SETTINGS exchange and one PING
// round trip — no request. Requests go through ClientConn.RoundTrip, which
// writes a stream's HEADERS once; http2.Transport.RoundTrip, which retries
// a request on another connection after RST_STREAM REFUSED_STREAM, a
// GOAWAY or an unusable connection (x/net/http2 transport_common.go
// roundTripViaPool, shouldRetryRequest, canRetryError), is never used. A
// request whose HEADERS were never written (httptrace WroteHeaders did not
// fire and RoundTrip returned without its context ending) did not leave and
// is tried once on another connection, like a zero-byte HTTP/1.1 write;
// one whose HEADERS were written is never sent again: a refused stream, a
// GOAWAY or a connection closed mid-stream record it with code 0.
// TestRunH2NeverResends proves it against a server that does all three
// (TestH2TransportResends shows http2.Transport re-sending there). Each
// connection carries at most the server's SETTINGS_MAX_CONCURRENT_STREAMS
// streams at once (at most 1000); beyond that another connection is opened
// (warmed before a burst), so no request waits inside the ClientConn for a
// stream slot. Lines record the version (evidence.Request.Proto).
//
// Envoy's local_rate_limit_per_downstream_connection bucket is per
// downstream connection, and over HTTP/2 one connection carries many
// streams: all requests multiplexed on a connection share its bucket
// (Filter::getPerConnectionRateLimiter keys the limiter on the connection's
// filter state, not on the stream). A burst of N requests over HTTP/2 thus
// meets about N/MAX_CONCURRENT_STREAMS buckets, not N as over HTTP/1.1;
// DisableKeepAlives gives each HTTP/2 request its own connection (and
// bucket) again.
//
// # Descriptors
//
// Each connection is a file descriptor. Go raises the soft RLIMIT_NOFILE to
// the hard limit at startup (syscall/rlimit.go, go.dev/issue/46279); Run
// raises it too if it is still lower, and caps the default number of workers
// at half of the descriptors still free (evidence.AttackConfig.FDCap), leaving the rest to an
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

// Defaults applied by Run to zero-valued Options fields.
const (
	DefaultTimeout    = 10 * time.Second
	DefaultBodyPrefix = 64
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
// reached the upstream), x-envoy-overloaded (a circuit breaker's 503,
// source/common/router/router.cc) and server.
var DefaultCaptureHeaders = []string{
	"x-envoy-ratelimited",
	"x-ratelimit-limit",
	"x-ratelimit-remaining",
	"x-ratelimit-reset",
	"ratelimit-*",
	"retry-after",
	"x-envoy-upstream-service-time",
	"x-envoy-overloaded",
	"server",
}

// Options configures one Run.
type Options struct {
	// IDs are the request IDs of a single-flow attack, sent in this order;
	// they must be unique and valid header values (see ReadIDs). With
	// Flows, leave IDs empty: each flow has its own.
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
	// default: without a Rate, all IDs at once, capped at evidence.AttackConfig.FDCap; with
	// a Rate, a pool sized from the rate and the observed latency (package
	// doc, "Fixed rates"). With a Rate, a cap that is reached makes the
	// attack fall behind its schedule (reported as pacing error).
	Concurrency int
	// Rate paces the sends open-loop on vegeta's ConstantPacer schedule
	// (hit k at (k+1)*Per/Freq after the start); the zero value sends as
	// fast as the workers allow. Negative values are an error.
	Rate vegeta.Rate

	// Flows, when not empty, makes a multi-flow attack (package doc,
	// "Flows"): each flow has its own IDs, rate, request and split, and
	// all start together. IDs, Split, Seed, Method, Path, Header, Body,
	// Concurrency and Rate above must then be unset.
	Flows []Flow
	// Shard, when Count > 0, sends only the Index-th of Count
	// deterministic slices of every flow's IDs (package doc, "Shards").
	Shard Shard
	// StartAt, when set, holds the start (the barrier's release and the
	// schedule's origin) until that wall-clock instant; connections are
	// warmed before it (package doc, "Synchronised start"). WarmAhead is
	// how long before StartAt warming begins (default DefaultWarmAhead).
	StartAt   time.Time
	WarmAhead time.Duration
	// Node names the machine whose clock the attack reads when that is
	// not its host name (evidence.AttackSummary.Node; the CLI takes it from
	// evidence.NodeName): shards with one Node share one clock in a merge.
	Node string

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
	// IDHeader carries the ID on each request; default evidence.IDHeader. It
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
	// block; it is not called when nothing is sent. A multi-flow attack
	// calls it once: all flows start at that instant.
	OnStart func(time.Time)
	// Progress, if set, receives live counters while Run runs (read them
	// with Progress.Snapshot from any goroutine); see Progress.
	Progress *Progress

	// DisableKeepAlives opens a new connection for every request and sends
	// "Connection: close". Envoy's local rate limit with
	// local_rate_limit_per_downstream_connection keeps one bucket per
	// connection, so this gives every request its own bucket (package doc,
	// "Bursts and per-connection buckets"). In a multi-flow attack it
	// applies to every flow (Flow.DisableKeepAlives sets it for one).
	DisableKeepAlives bool
	// MaxConnections caps the open connections per target (per flow); 0 is
	// no cap beyond the workers. Requests beyond it wait for an idle
	// connection and the wait does not count as latency (it is not on the
	// wire).
	MaxConnections int
	// TLSConfig is used for https targets; nil uses Go's defaults. Run uses
	// a copy with ServerName set from the URL when empty and NextProtos
	// ["http/1.1"] (["h2"] with ProtoH2).
	TLSConfig *tls.Config
	// Protocol is the HTTP version: ProtoHTTP1 (""), ProtoH2 (HTTP/2 over
	// TLS, ALPN h2: https targets only) or ProtoH2C (HTTP/2 over cleartext
	// TCP with prior knowledge, RFC 9113 section 3.3: http targets only).
	// See the package doc, "HTTP/2".
	Protocol string
	// Engine is how the flows are sent: EngineAuto (the default) runs
	// each flow that can (closed loop, HTTP/1.1 over plain TCP with
	// keep-alive, to one target whose host has one address, no
	// MaxConnections, no Pipeline; Linux only) on event loops, wrk's design
	// (github.com/wg/wrk src/ae.c): GOMAXPROCS loops, each with its own
	// epoll instance and the non-blocking sockets it dials, instead of a
	// goroutine per connection, at less CPU per request; every other flow
	// on a goroutine per connection. EngineGoroutines runs every flow on
	// goroutines. The evidence lines are the same either way (TestEvloop*
	// compare them); AttackConfig.Engine records which ran. On the loops, a
	// response without a Content-Length (chunked, or ended by the close)
	// is streamed by a goroutine past its first 64 KB.
	Engine string
	// Pipeline, above 1, is the HTTP/1.1 pipelining depth (RFC 9112
	// section 9.3.2): each worker of an unpaced flow writes the next
	// Pipeline IDs' requests (consecutive IDs) back to back in one write on
	// its keep-alive connection, then reads their responses in order; the
	// burst's first writes carry a chunk each. Concurrency (and the default
	// number of workers) then counts connections, each with up to Pipeline
	// requests in flight, and the Timeout of each request runs from that
	// write. A server answers pipelined requests one after another on a
	// connection, so a burst of N requests on N/Pipeline connections
	// reaches it in fewer reads (the microburst a small client cannot make
	// with a connection per request). At most once holds: a write that put
	// not one byte of a request on the wire records that request not sent,
	// and a response that ends the connection (an error, "Connection:
	// close") leaves the requests after it recorded as sent without a
	// response (code 0), never written again. HTTP/1.1 with keep-alive
	// only, not with a Rate, and each flow to one target; at most
	// MaxPipeline. 0 or 1: one request at a time (the default).
	Pipeline int

	// testResend makes the engine write a request a second time on a new
	// connection after a reused connection failed, as net/http's Transport
	// does (tests only: it proves that the resend guard detects it).
	testResend bool
	// testDial replaces the TCP dial (tests only: it injects dial errors
	// such as EMFILE).
	testDial func(ctx context.Context, addr string) (net.Conn, error)
	// testHold runs in a paced flow's dispatcher before it waits for ID k
	// (tests only: blocking it stalls the dispatcher, as a late wake-up
	// would).
	testHold func(k int)
	// testWait runs each time a paced flow's dispatcher is about to block
	// for a worker for ID k (tests only).
	testWait func(k int)
	// testIdle runs when ID i is about to go on the connection that carried
	// the slot's previous request (an unpaced flow's worker's own, or an
	// event loop's slot), before its liveness check; fd is its socket
	// (tests only: the test server closes it there, or writes on it, as a
	// server ending an idle keep-alive connection).
	testIdle func(i int, fd uintptr)
	// testPeekWarm runs right before the burst's warm connections are
	// peeked (engine.peekWarm, evLoop.peekWarm; tests only: the test server
	// has then ended the connections it means to).
	testPeekWarm func()
	// testReuse runs when ID i is about to be written on a connection that
	// carried a request, after its liveness check, right before the write;
	// fd is its socket (tests only: the test server closes it there, as a
	// server closing it between the check and the write, so that the write
	// puts not one byte on the wire).
	testReuse func(i int, fd uintptr)
}

// Protocols of Options.Protocol, named as evidence.Request.Proto records
// them ("HTTP/1.1", "HTTP/2.0") by protoName.
const (
	ProtoHTTP1 = "http1"
	ProtoH2    = "h2"
	ProtoH2C   = "h2c"
)

// DefaultWarmAhead is Options.WarmAhead's default: connections are opened
// this long before Options.StartAt, so that a server's idle timeout (Envoy's
// default idle_timeout is 1 h, nginx's keepalive_timeout 75 s) does not
// close them while they wait.
const DefaultWarmAhead = 5 * time.Second

// Flow is one stream of requests of a multi-flow attack (Options.Flows): a
// user or a client with its own IDs, rate, request and split over the
// attack's targets. Fields mean what the Options fields of the same name
// mean for a single-flow attack.
type Flow struct {
	// Name identifies the flow in evidence (evidence.Request.Flow) and in
	// evidence.AttackSummary.Flows; required, unique within the attack, without control
	// characters.
	Name string
	// IDs are the flow's request IDs; IDs must be unique over all flows.
	IDs   []string
	Split Split
	Seed  int64
	// Method, Path, Header and Body describe the flow's request.
	Method, Path string
	Header       http.Header
	Body         []byte
	// Rate paces the flow on its own open-loop schedule from the attack's
	// common start; zero sends all the flow's IDs at once (released from
	// the attack's one barrier).
	Rate        vegeta.Rate
	Concurrency int
	// DisableKeepAlives gives this flow a new connection per request.
	DisableKeepAlives bool
	// Requests, when not empty, are the flow's request templates and
	// replace Split, Method, Path, Header and Body: ID k (0-based, in IDs
	// order) is sent as Requests[k mod len(Requests)], the order in which
	// vegeta's attacker cycles through a list of targets (`rlbench attack
	// --targets-file`).
	Requests []RequestTemplate
}

// RequestTemplate is one request of Flow.Requests.
type RequestTemplate struct {
	// Target names one of Options.Targets ("" is the first).
	Target string
	// Method (default GET), Path, Header and Body as in Options.
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Run sends every ID in opts.IDs (or in every flow of opts.Flows) once, to
// the target Assign picks, and writes one evidence.Request per result to
// out as soon as it arrives (out flushes at least every evidence.FlushEvery;
// Run does not close out).
//
// The ID travels in opts.IDHeader. Timing: evidence.Request.SentNs is when
// the request's write began on an open connection (connection setup is not
// latency); LatencyNs runs from then until the body was read or the request
// failed; paced attacks also record IntendedNs.
//
// Cancellation: when ctx is cancelled Run sends no further IDs, waits for
// requests already in flight (at most opts.InterruptGrace, then cancels
// them: code 0), records them, and returns the evidence.AttackSummary with
// Interrupted=true, Complete=false and a nil error — the interruption is
// reported only in the evidence.AttackSummary, so a caller that writes the evidence.AttackSummary on nil
// error keeps the evidence.
//
// Errors: invalid options return (nil, error wrapping ErrInvalidOptions)
// before anything is sent; a failing write to out stops the attack and
// returns the evidence.AttackSummary (with Error set, Complete=false) together with that
// error. Requests not sent make the evidence.AttackSummary incomplete but are not an error
// of Run.
func Run(ctx context.Context, opts Options, out *evidence.Writer) (*evidence.AttackSummary, error) {
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
	flows    []*flowPrep
	tnames   []string // per target: name
	turls    []string // per target: base URL
	idKey    string   // canonical ID header name
	capture  []string // lower-case exact names
	prefixes []string // lower-case prefixes
	multi    bool     // Options.Flows was given
	ids      int      // IDs this Run sends (after sharding)
	config   evidence.AttackConfig
	shard    *evidence.AttackShard
}

// flowPrep is one validated flow (a single-flow attack has one, unnamed).
type flowPrep struct {
	name   string
	ids    []string // the IDs this Run sends, in order
	sched  []int64  // sharded: per ID, its index in the unsharded flow (the schedule's hit number); nil = its own index
	tmpls  []tmplPrep
	assign []int32 // per ID: template index
	rate   vegeta.Rate
	paced  bool
	perSec float64
	keep   bool
	conc   int
	// pipe is Options.Pipeline, at least 1: the IDs a worker writes at once.
	pipe int
	// workers bound the requests in flight at the start; maxWork is the
	// absolute bound (a paced flow may grow to it).
	workers, maxWork int
	config           evidence.AttackConfig
}

// tmplPrep is one request shape of a flow: for a Split, one per target.
type tmplPrep struct {
	target       int
	method, path string
	header       http.Header
	body         []byte
}

// fdMargin descriptors are kept free besides the halving (package doc).
const fdMargin = 64

// flowSpec is a Flow before validation; a single-flow attack's Options
// become one.
type flowSpec = Flow

func prepare(o Options) (*prepared, error) {
	if len(o.Targets) == 0 {
		return nil, invalid("no targets")
	}
	multi := len(o.Flows) > 0
	var specs []flowSpec
	if multi {
		if len(o.IDs) > 0 || o.Split.Mode != "" || o.Seed != 0 || o.Method != "" || o.Path != "" || len(o.Header) > 0 ||
			len(o.Body) > 0 || o.Concurrency != 0 || o.Rate != (vegeta.Rate{}) {
			return nil, invalid("with flows, set ids, split, seed, method, path, header, body, concurrency and rate per flow, not for the attack")
		}
		specs = o.Flows
	} else {
		if len(o.IDs) == 0 {
			return nil, invalid("no ids")
		}
		specs = []flowSpec{{IDs: o.IDs, Split: o.Split, Seed: o.Seed, Method: o.Method, Path: o.Path, Header: o.Header,
			Body: o.Body, Rate: o.Rate, Concurrency: o.Concurrency}}
	}
	total := 0
	for _, fs := range specs {
		total += len(fs.IDs)
	}
	if err := CheckIDs("ids", total); err != nil {
		return nil, invalid("%v", err)
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
		o.IDHeader = evidence.IDHeader
	}
	if !httpguts.ValidHeaderFieldName(o.IDHeader) {
		return nil, invalid("id header %q is not an HTTP token", o.IDHeader)
	}
	if o.CaptureHeaders == nil {
		o.CaptureHeaders = DefaultCaptureHeaders
	}
	if o.MaxConnections < 0 {
		return nil, invalid("negative max connections %d", o.MaxConnections)
	}
	if o.InterruptGrace < 0 {
		return nil, invalid("negative interrupt grace %s", o.InterruptGrace)
	}
	if o.WarmAhead < 0 {
		return nil, invalid("negative warm-ahead %s", o.WarmAhead)
	}
	if o.WarmAhead == 0 {
		o.WarmAhead = DefaultWarmAhead
	}
	switch o.Protocol {
	case "":
		o.Protocol = ProtoHTTP1
	case ProtoHTTP1, ProtoH2, ProtoH2C:
	default:
		return nil, invalid("protocol %q: want %s, %s or %s", o.Protocol, ProtoHTTP1, ProtoH2, ProtoH2C)
	}
	if err := o.Shard.check(); err != nil {
		return nil, invalid("%v", err)
	}
	if o.Engine != EngineAuto && o.Engine != EngineGoroutines {
		return nil, invalid("engine %q: want EngineAuto (\"\", the default) or %q", o.Engine, EngineGoroutines)
	}
	if o.Pipeline < 0 || o.Pipeline > MaxPipeline {
		return nil, invalid("pipeline %d: want 0 .. %d", o.Pipeline, MaxPipeline)
	}
	if o.Pipeline > 1 && o.Protocol != ProtoHTTP1 {
		return nil, invalid("pipeline %d: HTTP/1.1 pipelining, not with protocol %s (HTTP/2 multiplexes instead)", o.Pipeline, o.Protocol)
	}

	names := map[string]int{}
	ts := make([]Target, len(o.Targets))
	for k, t := range o.Targets {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, invalid("target %d url %q: %v", k+1, evidence.RedactText(t.URL), evidence.RedactText(err.Error()))
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, invalid("target %d url %q: want http(s)://host[:port][/prefix]", k+1, u.Redacted())
		}
		if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(t.URL, "?#") {
			return nil, invalid("target %d url %q must not have a query or fragment", k+1, u.Redacted())
		}
		switch {
		case o.Protocol == ProtoH2 && u.Scheme != "https":
			return nil, invalid("target %d url %q: HTTP/2 over TLS (h2) needs an https URL; use h2c for cleartext", k+1, u.Redacted())
		case o.Protocol == ProtoH2C && u.Scheme != "http":
			return nil, invalid("target %d url %q: h2c (cleartext HTTP/2) needs an http URL; use h2 for https", k+1, u.Redacted())
		}
		if t.Name == "" {
			t.Name = u.Host
		}
		if _, dup := names[t.Name]; dup {
			return nil, invalid("duplicate target name %q", t.Name)
		}
		names[t.Name] = k
		t.URL = strings.TrimSuffix(t.URL, "/")
		ts[k] = t
	}
	o.Targets = ts

	p := &prepared{opts: o, multi: multi}
	for _, t := range o.Targets {
		p.tnames = append(p.tnames, t.Name)
		p.turls = append(p.turls, t.URL)
	}
	flowNames := map[string]bool{}
	var all [][]string
	for fi := range specs {
		fs := &specs[fi]
		where := "attack"
		if multi {
			where = fmt.Sprintf("flow %d", fi+1)
			if fs.Name == "" {
				return nil, invalid("%s: a flow needs a name", where)
			}
			if strings.ContainsFunc(fs.Name, func(r rune) bool { return r < ' ' || r == 0x7f }) {
				return nil, invalid("%s: name %q contains control characters", where, fs.Name)
			}
			where = fmt.Sprintf("flow %q", fs.Name)
			if flowNames[fs.Name] {
				return nil, invalid("%s: duplicate flow name", where)
			}
			flowNames[fs.Name] = true
		}
		fp, err := prepareFlow(o, fs, names, where)
		if err != nil {
			return nil, err
		}
		all = append(all, fs.IDs)
		p.flows = append(p.flows, fp)
	}
	if err := checkUniqueIDs(all, specs, multi); err != nil {
		return nil, err
	}
	if o.Shard.Count > 0 {
		p.shard = shardInfo(o, specs, p.flows)
		for _, fp := range p.flows {
			fp.applyShard(o.Shard)
		}
	}
	if err := p.sizeWorkers(); err != nil {
		return nil, err
	}

	for _, c := range o.CaptureHeaders {
		c = strings.ToLower(strings.TrimSpace(c))
		if pre, ok := strings.CutSuffix(c, "*"); ok {
			p.prefixes = append(p.prefixes, pre)
		} else if c != "" {
			p.capture = append(p.capture, c)
		}
	}
	p.idKey = http.CanonicalHeaderKey(o.IDHeader)
	p.buildConfig()
	return p, nil
}

// checkUniqueIDs validates every ID and reports the first duplicate over
// all flows.
func checkUniqueIDs(all [][]string, specs []flowSpec, multi bool) error {
	n := 0
	for _, ids := range all {
		n += len(ids)
	}
	flat := make([]string, 0, n)
	for fi, ids := range all {
		for i, id := range ids {
			if err := checkID(id); err != nil {
				if multi {
					return invalid("flow %q: id %d: %v", specs[fi].Name, i+1, err)
				}
				return invalid("id %d: %v", i+1, err)
			}
		}
		flat = append(flat, ids...)
	}
	i, j, dup := findDuplicate(flat)
	if !dup {
		return nil
	}
	if !multi {
		return invalid("id %d %q duplicates id %d", j+1, flat[j], i+1)
	}
	locate := func(k int) string {
		for fi, ids := range all {
			if k < len(ids) {
				return fmt.Sprintf("id %d of flow %q", k+1, specs[fi].Name)
			}
			k -= len(ids)
		}
		return ""
	}
	return invalid("%s (%q) duplicates %s: every id is sent once in the whole attack", locate(j), flat[j], locate(i))
}

// checkRequest validates one request shape.
func checkRequest(where, method, path string, header http.Header) (string, error) {
	if method == "" {
		method = DefaultMethod
	}
	method = strings.ToUpper(method)
	if !httpguts.ValidHeaderFieldName(method) { // method = token (RFC 9110 9.1)
		return "", invalid("%smethod %q is not an HTTP token", where, method)
	}
	if method == "CONNECT" {
		return "", invalid("%smethod CONNECT is not supported", where)
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		return "", invalid("%spath %q must start with '/'", where, path)
	}
	if strings.Contains(path, "#") {
		return "", invalid("%spath %q must not contain '#'", where, path)
	}
	if strings.ContainsFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", invalid("%spath %q contains spaces or control characters", where, path)
	}
	for k, vs := range header {
		for _, v := range append(vs[:len(vs):len(vs)], "") { // "" checks the name of a header without values
			if err := CheckHeader(k, v); err != nil {
				return "", invalid("%s%v", where, err)
			}
		}
	}
	return method, nil
}

// prepareFlow validates one flow and builds its templates and assignment.
func prepareFlow(o Options, fs *flowSpec, names map[string]int, where string) (*flowPrep, error) {
	pre := ""
	if where != "attack" {
		pre = where + ": "
	}
	if len(fs.IDs) == 0 {
		return nil, invalid("%sno ids", pre)
	}
	if fs.Concurrency < 0 {
		return nil, invalid("%snegative concurrency %d", pre, fs.Concurrency)
	}
	if fs.Rate.Freq < 0 || fs.Rate.Per < 0 {
		return nil, invalid("%snegative rate %s", pre, fs.Rate)
	}
	if fs.Rate.Freq > 0 && fs.Rate.Per > 0 && fs.Rate.Per.Nanoseconds() < int64(fs.Rate.Freq) {
		// vegeta's ConstantPacer divides by the interval Per/Freq in
		// whole nanoseconds (lib/pacer.go), zero here.
		return nil, invalid("%srate %s: more than one request per nanosecond", pre, FormatRate(fs.Rate))
	}
	fp := &flowPrep{name: fs.Name, ids: fs.IDs, rate: fs.Rate, conc: fs.Concurrency, keep: !(o.DisableKeepAlives || fs.DisableKeepAlives)}
	fp.paced = fs.Rate.Freq > 0 && fs.Rate.Per > 0
	if fp.paced {
		fp.perSec = float64(fs.Rate.Freq) / fs.Rate.Per.Seconds()
	}
	n := len(fs.IDs)
	if len(fs.Requests) > 0 {
		if fs.Split.Mode != "" || fs.Method != "" || fs.Path != "" || len(fs.Header) > 0 || len(fs.Body) > 0 {
			return nil, invalid("%swith request templates, set method, path, header and body per template and no split", pre)
		}
		for k, rt := range fs.Requests {
			w := fmt.Sprintf("%srequest %d: ", pre, k+1)
			ti := 0
			if rt.Target != "" {
				var ok bool
				if ti, ok = names[rt.Target]; !ok {
					return nil, invalid("%sno target named %q", w, rt.Target)
				}
			}
			m, err := checkRequest(w, rt.Method, rt.Path, rt.Header)
			if err != nil {
				return nil, err
			}
			fp.tmpls = append(fp.tmpls, tmplPrep{target: ti, method: m, path: rt.Path, header: rt.Header, body: rt.Body})
		}
		fp.assign = make([]int32, n)
		for i := range fp.assign {
			fp.assign[i] = int32(i % len(fs.Requests))
		}
	} else {
		m, err := checkRequest(pre, fs.Method, fs.Path, fs.Header)
		if err != nil {
			return nil, err
		}
		for ti := range o.Targets {
			fp.tmpls = append(fp.tmpls, tmplPrep{target: ti, method: m, path: fs.Path, header: fs.Header, body: fs.Body})
		}
		to, err := assignTargets(n, len(o.Targets), fs.Split, fs.Seed)
		if err != nil {
			return nil, fmt.Errorf("attack: %w: %s%v", ErrInvalidOptions, pre, err)
		}
		fp.assign = to
	}
	split := fs.Split
	fp.config = evidence.AttackConfig{Flow: fs.Name, Split: split.String(), Seed: fs.Seed, Concurrency: fs.Concurrency,
		Rate: "0", DisableKeepAlives: !fp.keep}
	if len(fs.Requests) > 0 {
		fp.config.Split = SplitRequests
		for _, t := range fp.tmpls {
			fp.config.Requests = append(fp.config.Requests, evidence.AttackRequestTemplate{Target: o.Targets[t.target].Name,
				Method: t.method, Path: evidence.RedactURL(t.path), HeaderNames: headerNames(t.header), BodyBytes: len(t.body)})
		}
	} else {
		t := fp.tmpls[0]
		// A query's credentials are not recorded (evidence.RedactURL).
		fp.config.Method, fp.config.Path, fp.config.HeaderNames, fp.config.BodyBytes = t.method, evidence.RedactURL(t.path), headerNames(t.header), len(t.body)
	}
	if fp.paced {
		fp.config.Rate = FormatRate(fs.Rate)
		fp.config.RatePerSec = fp.perSec
	}
	fp.config.Barrier = !fp.paced
	fp.pipe = 1
	if o.Pipeline > 1 {
		switch {
		case fp.paced:
			return nil, invalid("%spipeline %d: not with a rate (pipelined requests are written together, not on a schedule)", pre, o.Pipeline)
		case !fp.keep:
			return nil, invalid("%spipeline %d: needs keep-alive (pipelined requests share a connection)", pre, o.Pipeline)
		}
		for _, t := range fp.tmpls {
			if t.target != fp.tmpls[0].target {
				return nil, invalid("%spipeline %d: every request of a flow to one target (consecutive IDs share a connection)", pre, o.Pipeline)
			}
			if httpguts.HeaderValuesContainsToken(t.header.Values("Connection"), "close") {
				return nil, invalid("%spipeline %d: not with a Connection: close header (the server ends the connection after its first response)", pre, o.Pipeline)
			}
		}
		fp.pipe = o.Pipeline
		fp.config.Pipeline = o.Pipeline
	}
	return fp, nil
}

// Engines of Options.Engine.
const (
	// EngineAuto sends each flow that can on event loops, the others on
	// goroutines (Options.Engine).
	EngineAuto = ""
	// EngineGoroutines sends every flow on a goroutine per connection.
	EngineGoroutines = "goroutines"
)

// MaxPipeline is the largest Options.Pipeline: nginx reads a connection's
// requests into large_client_header_buffers (4 x 8k by default), and a
// server parses pipelined requests one at a time.
const MaxPipeline = 1024

// SplitRequests is AttackConfig.Split of a flow with request templates
// (Flow.Requests): ID k goes to template k mod len(Requests).
const SplitRequests = "requests"

func headerNames(h http.Header) []string {
	var out []string
	for k := range h {
		out = append(out, http.CanonicalHeaderKey(k))
	}
	sort.Strings(out)
	return out
}

// sizeWorkers sets every flow's worker bounds: explicit, or the default
// bounded by its IDs and its share of the descriptors (package doc,
// "Descriptors").
func (p *prepared) sizeWorkers() error {
	fd := fdLimits()
	total := 0
	for _, fp := range p.flows {
		total += len(fp.ids)
	}
	p.ids = total
	explicit := 0
	for _, fp := range p.flows {
		n := len(fp.ids)
		fp.config.IDs = n
		if n == 0 { // a shard without any of this flow's IDs
			fp.config.WorkersFrom = "ids"
			continue
		}
		// A worker (a connection) carries fp.pipe IDs at a time.
		units := (n + fp.pipe - 1) / fp.pipe
		absolute := units
		if c := fd.capacity(); c > 0 {
			share := c
			if len(p.flows) > 1 {
				share = max(1, int(int64(c)*int64(n)/int64(total)))
			}
			absolute = min(absolute, share)
		}
		switch {
		case fp.conc > 0:
			fp.maxWork = min(fp.conc, units)
			fp.workers = fp.maxWork
			fp.config.WorkersFrom = "concurrency"
			explicit += fp.maxWork
		case fp.paced:
			fp.maxWork = absolute
			fp.workers = rateBound(fp.perSec/float64(max(1, p.opts.Shard.Count)), 0, absolute)
			fp.config.WorkersFrom = "rate"
		default:
			fp.maxWork = absolute
			fp.workers = absolute
			fp.config.WorkersFrom = "ids"
			if absolute < units {
				fp.config.WorkersFrom = "fd_limit"
			}
		}
		fp.config.Workers = fp.workers
	}
	if fd.limit > 0 && explicit > fd.free() {
		return invalid("concurrency %d needs more file descriptors than are free (%d open of a limit of %d); raise the limit (ulimit -n) or lower --concurrency",
			explicit, fd.open, fd.limit)
	}
	p.config.FDLimit, p.config.FDOpen, p.config.FDCap = fd.limit, fd.open, fd.capacity()
	return nil
}

// buildConfig fills the attack's and every flow's recorded configuration.
func (p *prepared) buildConfig() {
	o := p.opts
	counts := make([]int, len(o.Targets))
	for _, fp := range p.flows {
		fc := make([]int, len(o.Targets))
		for _, ti := range fp.assign {
			fc[fp.tmpls[ti].target]++
		}
		c := &fp.config
		c.Name, c.TimeoutNs, c.IDHeader, c.CaptureHeaders, c.BodyPrefix = o.Name, int64(o.Timeout), o.IDHeader, o.CaptureHeaders, o.BodyPrefix
		c.MaxConnections, c.Protocol = o.MaxConnections, protocolConfig(o.Protocol)
		c.FDLimit, c.FDOpen, c.FDCap = p.config.FDLimit, p.config.FDOpen, p.config.FDCap
		for k, t := range o.Targets {
			c.Targets = append(c.Targets, evidence.AttackTarget{Name: t.Name, URL: evidence.RedactURL(t.URL), IDs: fc[k]})
			counts[k] += fc[k]
		}
	}
	if !p.multi {
		cfg := p.flows[0].config
		cfg.Flow = ""
		p.config = cfg
		return
	}
	cfg := evidence.AttackConfig{Name: o.Name, Split: "flows", Rate: "0", TimeoutNs: int64(o.Timeout), IDs: p.ids, IDHeader: o.IDHeader,
		CaptureHeaders: o.CaptureHeaders, BodyPrefix: o.BodyPrefix, DisableKeepAlives: o.DisableKeepAlives,
		MaxConnections: o.MaxConnections, FDLimit: p.config.FDLimit, FDOpen: p.config.FDOpen, FDCap: p.config.FDCap,
		WorkersFrom: "flows", Protocol: protocolConfig(o.Protocol)}
	if o.Pipeline > 1 {
		cfg.Pipeline = o.Pipeline
	}
	for k, t := range o.Targets {
		cfg.Targets = append(cfg.Targets, evidence.AttackTarget{Name: t.Name, URL: evidence.RedactURL(t.URL), IDs: counts[k]})
	}
	for _, fp := range p.flows {
		cfg.Workers += fp.workers
		cfg.Barrier = cfg.Barrier || !fp.paced
	}
	p.config = cfg
}

// protocolConfig is AttackConfig.Protocol: "" for HTTP/1.1 (as before it
// existed), else the Options.Protocol.
func protocolConfig(proto string) string {
	if proto == ProtoHTTP1 {
		return ""
	}
	return proto
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

// capturesBytes is captures for a lower-case name in bytes, without
// allocating.
func (p *prepared) capturesBytes(lk []byte) bool {
	for _, c := range p.capture {
		if c == string(lk) {
			return true
		}
	}
	for _, pre := range p.prefixes {
		if len(lk) >= len(pre) && string(lk[:len(pre)]) == pre {
			return true
		}
	}
	return false
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
