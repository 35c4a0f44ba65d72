// Package attack fires a fixed set of request IDs at one or more HTTP targets
// and records the outcome of every request as evidence.Request lines.
//
// Guarantees:
//   - each ID is sent at most once: never retried by rlbench, by vegeta or by
//     net/http;
//   - each ID that was handed to the transport produces exactly one
//     evidence line, written as soon as its result arrives;
//   - an ID that was never sent (the attack was interrupted) has no line.
//
// No replays: Go's net/http silently re-sends a request on a new connection
// when a reused keep-alive connection dies after the request was written,
// if the request is "replayable" (net/http request.go isReplayable:
// GET/HEAD/OPTIONS/TRACE without a body or with GetBody, or any method with
// an Idempotency-Key / X-Idempotency-Key header; transport.go
// shouldRetryRequest). Run's transport therefore hands net/http a copy of
// each request with GetBody nil and, when there is no body, a non-nil empty
// body: such a request is not replayable. For GET, HEAD, DELETE, OPTIONS,
// PROPFIND and SEARCH net/http probes that body, finds it empty and sends
// no body and no Transfer-Encoding, so the wire format is unchanged
// (transfer.go probeRequestBody); Run refuses the combinations where it
// would change (body-less TRACE, and Idempotency-Key headers on body-less
// requests of other methods). As a guard, an httptrace hook counts header
// writes per request; a count above 1 is reported in the line's Error and
// in Summary.Resent. TestRunNeverResends proves it against a backend that
// kills kept-alive connections after reading a request (bare vegeta re-sends
// 9 of 10 IDs there, TestBareVegetaResends).
//
// It is built on github.com/tsenart/vegeta/v12/lib v12.13.0: one Attacker
// per Run, a custom Targeter that yields the (ID, target) pairs Assign
// computed, in ID order, and a Pacer that stops after the last ID, so
// vegeta's bogus "no targets to attack" results do not occur in normal runs
// (they are dropped when they do, e.g. after an interruption). Redirects are
// not followed (a 3xx is recorded as is); HTTP/1.1 is used, also over https;
// no proxy is used; the dialer does not bind a local address.
package attack

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

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

	// Method defaults to GET (upper-cased). Path is appended to each
	// Target.URL verbatim (it may carry a query); it must be empty or start
	// with '/' and must not contain '#'.
	Method, Path string
	// Header is sent with every request (a "Host" entry sets the Host).
	// Idempotency-Key / X-Idempotency-Key are refused on body-less requests
	// whose method net/http would then replay (see onceTransport).
	Header http.Header
	// Body is sent with every request (Content-Length set).
	Body []byte

	// Concurrency caps the requests in flight (vegeta MaxWorkers); 0 means
	// one worker per ID, i.e. all IDs at once when Rate is zero. With a Rate,
	// a cap that is reached makes vegeta fall behind and then send in
	// catch-up bursts (vegeta notes, gotcha 7): leave it 0 for open loop.
	Concurrency int
	// Rate paces the sends open-loop (vegeta ConstantPacer, first send after
	// one interval); the zero value sends as fast as the workers allow.
	// Negative values are an error.
	Rate vegeta.Rate
	// InterruptGrace is how long an interrupted attack waits for requests
	// already in flight before cancelling them (they are then recorded with
	// code 0, indeterminate); default 1s.
	InterruptGrace time.Duration
	// Timeout bounds each request including reading its body; default 10s.
	// A timed-out request is recorded with code 0: it may still have been
	// processed by the backend.
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
	// Name names the attack (vegeta sends it as X-Vegeta-Attack).
	Name string

	// DisableKeepAlives opens a new connection for every request. Envoy's
	// local rate limit with local_rate_limit_per_downstream_connection keeps
	// one bucket per connection, so this changes what a limiter admits.
	DisableKeepAlives bool
	// MaxConnections caps connections per target host (http.Transport
	// MaxConnsPerHost); 0 is unlimited. Requests beyond it queue inside the
	// transport and the queueing counts as latency.
	MaxConnections int
	// TLSConfig is used for https targets; nil uses Go's defaults.
	TLSConfig *tls.Config

	// allowReplay disables the no-replay request copy (tests only: it
	// proves that the attempts guard detects a net/http re-send).
	allowReplay bool
}

// TargetConfig is one target as recorded in Summary.Config.
type TargetConfig = evidence.AttackTarget

// Config records the effective options of an attack (defaults applied).
type Config = evidence.AttackConfig

// Summary describes a finished (or interrupted) attack; callers add it to
// attack.json (evidence.Attack) after requests.jsonl is closed. The record
// type is evidence's (evidence.AttackSummary).
type Summary = evidence.AttackSummary

// Run sends every ID in opts.IDs once, to the target Assign picks, and
// writes one evidence.Request per result to out as soon as it arrives (out
// flushes at least every evidence.FlushEvery; Run does not close out).
//
// ID transport: the ID travels in opts.IDHeader. To join vegeta's Results
// (which carry no request headers, and whose Seq is not the targeter's
// order) back to IDs, each vegeta target URL carries the ID's index as a URL
// fragment ("#17"); net/http never sends fragments (the request line is
// URL.RequestURI()), so the wire carries exactly Target.URL+Path. The
// recorded URL is without the fragment.
//
// Timing: evidence.Request.SentNs is when the request was handed to the
// net/http transport; LatencyNs runs from then until the body was read or
// the request failed.
//
// Cancellation: when ctx is cancelled Run stops the vegeta attacker, sends no
// further IDs, waits for requests already in flight (at most opts.Timeout),
// records them, and returns the Summary with Interrupted=true,
// Complete=false and a nil error — the interruption is reported only in the
// Summary, so a caller that writes the Summary on nil error keeps the
// evidence. If every ID had been sent before the cancellation, the run is
// complete and not interrupted.
//
// Errors: invalid options return (nil, error) before anything is sent; a
// failing write to out stops the attack and returns the Summary (with
// Error set, Complete=false) together with that error.
func Run(ctx context.Context, opts Options, out *evidence.Writer) (*Summary, error) {
	if out == nil {
		return nil, errors.New("attack: nil evidence writer")
	}
	p, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	n := len(p.opts.IDs)

	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: p.opts.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     p.opts.TLSConfig,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: p.workers,
		MaxConnsPerHost:     p.opts.MaxConnections,
		DisableKeepAlives:   p.opts.DisableKeepAlives,
		IdleConnTimeout:     90 * time.Second,
	}
	defer transport.CloseIdleConnections()
	slots := make([]slot, n)
	grace := p.opts.InterruptGrace
	if grace <= 0 {
		grace = time.Second
	}
	abort, abortNow := context.WithCancel(context.WithoutCancel(ctx))
	defer abortNow()
	stopGrace := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(grace, abortNow)
		context.AfterFunc(abort, func() { t.Stop() })
	})
	defer stopGrace()
	client := &http.Client{
		Transport: &onceTransport{base: transport, slots: slots, timeout: p.opts.Timeout, allowReplay: p.opts.allowReplay, abort: abort},
		// Client.Timeout stays 0: onceTransport applies the timeout itself.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	maxBody := int64(p.opts.BodyPrefix)
	if maxBody < 0 {
		maxBody = 0
	}
	initial := p.workers
	if initial > maxInitialWorkers {
		initial = maxInitialWorkers
	}
	// Client first: it replaces the whole http.Client, and Redirects then
	// sets CheckRedirect on the copy (gotcha 9 of the vegeta notes).
	atk := vegeta.NewAttacker(
		vegeta.Client(client),
		vegeta.Redirects(vegeta.NoFollow),
		vegeta.Workers(uint64(initial)),
		vegeta.MaxWorkers(uint64(p.workers)),
		vegeta.MaxBody(maxBody),
	)

	var next, sent atomic.Int64
	targeter := func(t *vegeta.Target) error {
		if t == nil {
			return vegeta.ErrNilTarget
		}
		if ctx.Err() != nil {
			return vegeta.ErrNoTargets
		}
		i := next.Add(1) - 1
		if i >= int64(n) {
			return vegeta.ErrNoTargets
		}
		sent.Add(1)
		p.target(t, int(i))
		return nil
	}
	pacer := &stopAfter{inner: p.opts.Rate, n: uint64(n)}

	sum := &Summary{Schema: Schema, Config: p.config, CodesByTarget: map[string]map[string]int{}}
	for _, tc := range p.config.Targets {
		sum.CodesByTarget[tc.Name] = map[string]int{}
	}

	start := time.Now()
	results := atk.Attack(vegeta.Targeter(targeter), pacer, 0, p.opts.Name)

	// Watch ctx; stop the attacker on cancellation.
	done := make(chan struct{})
	var watch sync.WaitGroup
	var cancelledMidway atomic.Bool
	watch.Add(1)
	go func() {
		defer watch.Done()
		select {
		case <-ctx.Done():
			cancelledMidway.Store(true)
			atk.Stop()
		case <-done:
		}
	}()

	// Drain vegeta's unbuffered channel into a buffer that can hold every
	// result, so workers never wait for encoding or disk I/O.
	buf := make(chan *vegeta.Result, n)
	go func() {
		defer close(buf)
		for r := range results {
			if r.Error == vegeta.ErrNoTargets.Error() && r.URL == "" {
				continue // vegeta's end-of-targets marker, not a request
			}
			buf <- r
		}
	}()

	var (
		writeErr   error
		first, lst int64
		line       evidence.Request
	)
	for r := range buf {
		if writeErr != nil {
			continue // keep draining so vegeta can finish
		}
		idx, ok := p.indexOf(r.URL)
		if !ok {
			writeErr = fmt.Errorf("attack: result for unknown url %q", r.URL)
			atk.Stop()
			continue
		}
		p.fill(&line, r, idx, &slots[idx])
		if a := slots[idx].attempts.Load(); a > 1 {
			sum.Resent++
		}
		if err := out.Write(&line); err != nil {
			writeErr = fmt.Errorf("attack: writing request %q: %w", line.ID, err)
			atk.Stop()
			continue
		}
		sum.Recorded++
		sum.CodesByTarget[line.Target][strconv.Itoa(line.Code)]++
		if first == 0 || line.SentNs < first {
			first = line.SentNs
		}
		if line.SentNs > lst {
			lst = line.SentNs
		}
	}
	end := time.Now()
	close(done)
	watch.Wait()

	sum.Sent = int(sent.Load())
	sum.StartNs, sum.EndNs = start.UnixNano(), end.UnixNano()
	sum.Start, sum.End = start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano)
	sum.FirstSendNs, sum.LastSendNs = first, lst
	if sum.Recorded > 1 {
		sum.SendSpreadNs = lst - first
	}
	// Interrupted: cancelled before every ID was sent, or while results were
	// still outstanding (those in flight past InterruptGrace were cancelled).
	sum.Interrupted = ctx.Err() != nil && (sum.Sent < n || cancelledMidway.Load())
	sum.Complete = writeErr == nil && sum.Sent == n && sum.Recorded == n && !sum.Interrupted
	switch {
	case writeErr != nil:
		sum.Error = writeErr.Error()
		return sum, writeErr
	case sum.Interrupted:
		sum.Error = context.Cause(ctx).Error()
	}
	return sum, nil
}

// maxInitialWorkers bounds the goroutines started up front; vegeta adds
// workers (up to MaxWorkers) whenever all are busy.
const maxInitialWorkers = 4096

// stopAfter wraps a pacer and stops the attack once n hits were scheduled,
// so a finite ID set ends without vegeta's "no targets" results.
type stopAfter struct {
	inner vegeta.Pacer
	n     uint64
}

func (s *stopAfter) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= s.n {
		return 0, true
	}
	return s.inner.Pace(elapsed, hits)
}

func (s *stopAfter) Rate(elapsed time.Duration) float64 { return s.inner.Rate(elapsed) }

// prepared holds validated options and everything precomputed for a Run.
type prepared struct {
	opts     Options
	assign   []int32     // per ID index: target index
	tnames   []string    // per target: name
	urls     []string    // per target: URL+Path (no fragment)
	header   http.Header // Options.Header, canonical keys, without the ID header
	idKey    string      // canonical ID header name
	capture  []string    // lower-case exact names
	prefixes []string    // lower-case prefixes
	workers  int
	config   Config
}

func prepare(o Options) (*prepared, error) {
	if len(o.IDs) == 0 {
		return nil, errors.New("attack: no ids")
	}
	if len(o.Targets) == 0 {
		return nil, errors.New("attack: no targets")
	}
	seen := make(map[string]int, len(o.IDs))
	for i, id := range o.IDs {
		if err := checkID(id); err != nil {
			return nil, fmt.Errorf("attack: id %d: %w", i+1, err)
		}
		if j, dup := seen[id]; dup {
			return nil, fmt.Errorf("attack: id %d %q duplicates id %d", i+1, id, j+1)
		}
		seen[id] = i
	}
	if o.Method == "" {
		o.Method = DefaultMethod
	}
	o.Method = strings.ToUpper(o.Method)
	if o.Path != "" && !strings.HasPrefix(o.Path, "/") {
		return nil, fmt.Errorf("attack: path %q must start with '/'", o.Path)
	}
	if strings.Contains(o.Path, "#") {
		return nil, fmt.Errorf("attack: path %q must not contain '#'", o.Path)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("attack: negative timeout %s", o.Timeout)
	}
	if o.BodyPrefix == 0 {
		o.BodyPrefix = DefaultBodyPrefix
	}
	if o.IDHeader == "" {
		o.IDHeader = DefaultIDHeader
	}
	if o.CaptureHeaders == nil {
		o.CaptureHeaders = DefaultCaptureHeaders
	}
	if o.Concurrency < 0 {
		return nil, fmt.Errorf("attack: negative concurrency %d", o.Concurrency)
	}
	if o.MaxConnections < 0 {
		return nil, fmt.Errorf("attack: negative max connections %d", o.MaxConnections)
	}
	if o.Rate.Freq < 0 || o.Rate.Per < 0 {
		return nil, fmt.Errorf("attack: negative rate %s", o.Rate)
	}
	if len(o.Body) == 0 {
		if err := checkReplaySafe(o.Method, o.Header); err != nil {
			return nil, err
		}
	}

	// Targets: names, URLs.
	names := map[string]bool{}
	ts := make([]Target, len(o.Targets))
	for k, t := range o.Targets {
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, fmt.Errorf("attack: target %d url %q: %w", k+1, t.URL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("attack: target %d url %q: want http(s)://host[:port][/prefix]", k+1, t.URL)
		}
		if u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(t.URL, "?#") {
			return nil, fmt.Errorf("attack: target %d url %q must not have a query or fragment", k+1, t.URL)
		}
		if t.Name == "" {
			t.Name = u.Host
		}
		if names[t.Name] {
			return nil, fmt.Errorf("attack: duplicate target name %q", t.Name)
		}
		names[t.Name] = true
		t.URL = strings.TrimSuffix(t.URL, "/")
		if o.Path == "" && t.URL == u.Scheme+"://"+u.Host {
			t.URL += "/"
		}
		ts[k] = t
	}
	o.Targets = ts

	as, err := Assign(o.IDs, o.Targets, o.Split, o.Seed)
	if err != nil {
		return nil, fmt.Errorf("attack: %w", err)
	}

	p := &prepared{opts: o}
	n := len(o.IDs)
	p.workers = n
	if o.Concurrency > 0 && o.Concurrency < n {
		p.workers = o.Concurrency
	}
	for _, c := range o.CaptureHeaders {
		c = strings.ToLower(strings.TrimSpace(c))
		if pre, ok := strings.CutSuffix(c, "*"); ok {
			p.prefixes = append(p.prefixes, pre)
		} else if c != "" {
			p.capture = append(p.capture, c)
		}
	}

	// Per ID only the target index is kept; targets are built per hit so a
	// large ID set does not hold one header map per ID.
	p.idKey = http.CanonicalHeaderKey(o.IDHeader)
	p.header = make(http.Header, len(o.Header))
	for k, vs := range o.Header {
		if ck := http.CanonicalHeaderKey(k); ck != p.idKey {
			p.header[ck] = vs
		}
	}
	p.assign = make([]int32, n)
	for _, a := range as {
		p.assign[a.Index] = int32(a.Target)
	}
	for _, t := range o.Targets {
		p.tnames = append(p.tnames, t.Name)
		p.urls = append(p.urls, t.URL+o.Path)
	}

	counts := Counts(as, len(o.Targets))
	cfg := Config{
		Name: o.Name, Split: o.Split.String(), Seed: o.Seed, Method: o.Method, Path: o.Path,
		BodyBytes: len(o.Body), Concurrency: o.Concurrency, Workers: p.workers,
		Rate: "0", TimeoutNs: int64(o.Timeout), IDs: n, IDHeader: o.IDHeader,
		CaptureHeaders: o.CaptureHeaders, BodyPrefix: o.BodyPrefix,
		DisableKeepAlives: o.DisableKeepAlives, MaxConnections: o.MaxConnections,
	}
	if o.Rate.Freq > 0 && o.Rate.Per > 0 {
		cfg.Rate = fmt.Sprintf("%d/%s", o.Rate.Freq, o.Rate.Per)
		cfg.RatePerSec = float64(o.Rate.Freq) / o.Rate.Per.Seconds()
	}
	for k, t := range o.Targets {
		cfg.Targets = append(cfg.Targets, TargetConfig{Name: t.Name, URL: t.URL, IDs: counts[k]})
	}
	for k := range o.Header {
		cfg.HeaderNames = append(cfg.HeaderNames, http.CanonicalHeaderKey(k))
	}
	sort.Strings(cfg.HeaderNames)
	p.config = cfg
	return p, nil
}

// checkReplaySafe refuses body-less requests that net/http would treat as
// replayable and that onceTransport cannot make non-replayable without
// changing the wire format (its empty body would be sent chunked).
func checkReplaySafe(method string, h http.Header) error {
	probed := false
	switch method {
	case "GET", "HEAD", "DELETE", "OPTIONS", "PROPFIND", "SEARCH": // net/http requestMethodUsuallyLacksBody
		probed = true
	}
	if probed {
		return nil
	}
	if method == "TRACE" {
		return errors.New("attack: method TRACE without a body cannot be protected against net/http replays")
	}
	for k := range h {
		switch http.CanonicalHeaderKey(k) {
		case "Idempotency-Key", "X-Idempotency-Key":
			return fmt.Errorf("attack: header %s on a body-less %s makes net/http replay it; give the request a body or drop the header", k, method)
		}
	}
	return nil
}

// target builds the vegeta target for ID index i. The URL carries i as its
// fragment; vegeta copies the header map into the request.
func (p *prepared) target(t *vegeta.Target, i int) {
	h := make(http.Header, len(p.header)+1)
	for k, vs := range p.header {
		h[k] = vs
	}
	h[p.idKey] = []string{p.opts.IDs[i]}
	*t = vegeta.Target{Method: p.opts.Method, URL: p.urls[p.assign[i]] + "#" + strconv.Itoa(i), Body: p.opts.Body, Header: h}
}

// indexOf extracts the ID index from a result URL's fragment.
func (p *prepared) indexOf(u string) (int, bool) {
	h := strings.LastIndexByte(u, '#')
	if h < 0 {
		return 0, false
	}
	i, err := strconv.Atoi(u[h+1:])
	if err != nil || i < 0 || i >= len(p.opts.IDs) {
		return 0, false
	}
	return i, true
}

// fill converts a vegeta result for ID index i into an evidence line.
func (p *prepared) fill(line *evidence.Request, r *vegeta.Result, i int, s *slot) {
	*line = evidence.Request{
		ID:     p.opts.IDs[i],
		Target: p.tnames[p.assign[i]],
		URL:    p.urls[p.assign[i]],
		Method: p.opts.Method,
		Code:   int(r.Code),
		Phase:  p.opts.Name,
	}
	end := r.Timestamp.Add(r.Latency)
	sent := s.sent
	if sent.IsZero() { // never reached the transport
		sent = r.Timestamp
	}
	line.SentNs = sent.UnixNano()
	line.LatencyNs = int64(end.Sub(sent))
	if r.Code != 0 {
		line.BytesIn = s.bytesIn.Load()
	}
	// vegeta: transport error text, or the status line for codes outside
	// 200-399. net/http quotes the URL with the internal slot fragment; the
	// evidence shows the URL as sent.
	line.Error = strings.Replace(r.Error, r.URL, line.URL, 1)
	if a := s.attempts.Load(); a > 1 {
		msg := fmt.Sprintf("rlbench: transport wrote this request %d times", a)
		if line.Error != "" {
			msg = line.Error + "; " + msg
		}
		line.Error = msg
	}
	if p.opts.BodyPrefix > 0 && len(r.Body) > 0 {
		b := r.Body
		if len(b) > p.opts.BodyPrefix {
			b = b[:p.opts.BodyPrefix]
		}
		line.Body = string(b)
	}
	if len(r.Headers) > 0 && (len(p.capture) > 0 || len(p.prefixes) > 0) {
		for k, vs := range r.Headers {
			lk := strings.ToLower(k)
			if !p.captures(lk) {
				continue
			}
			if line.Headers == nil {
				line.Headers = map[string]string{}
			}
			line.Headers[lk] = strings.Join(vs, ", ")
		}
	}
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
