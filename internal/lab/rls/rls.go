// Package rls is rlbench's lab rate limit service: an in-process gRPC server
// implementing envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit
// with the decision semantics of envoyproxy/ratelimit (the "RLS"), but with
// its counters in memory instead of Redis.
//
// What it reproduces (envoyproxy/ratelimit src/service/ratelimit.go,
// src/limiter/base_limiter.go, src/limiter/cache_key.go,
// src/redis/fixed_cache_impl.go, src/config/config_impl.go GetLimit):
//   - the limit of each descriptor is found with rlsconfig.Config.MatchDescriptor
//     (envoyproxy/ratelimit's own GetLimit), or taken from the descriptor's
//     limit override sent by Envoy;
//   - fixed windows: one counter per cache key
//     "<domain>_<k1>_<v1>_..._<kN>_<vN>_<windowStart>", windowStart =
//     now/unit*unit in unix seconds (epoch aligned), incremented by the hits
//     addend on EVERY hit, including over-limit hits and hits of descriptors
//     whose request is rejected because of another descriptor
//     (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false);
//   - a descriptor is OVER_LIMIT iff the count after the increment exceeds
//     requests_per_unit; the overall code is OVER_LIMIT if any descriptor is;
//   - statuses carry current_limit, limit_remaining (limit - count, 0 when
//     over) and duration_until_reset (unit - now%unit seconds);
//   - unknown domain, unmatched descriptor: OK without current_limit;
//     unlimited rule: OK with limit_remaining 4294967295; shadow_mode rule:
//     counted, status forced to OK; quota_mode rule: counted, an over-limit
//     status becomes OK with current_limit and limit_remaining only
//     (service/ratelimit.go shouldRateLimitWorker);
//   - rate_limit "replaces": a matched limited rule whose name is replaced by
//     another matched rule of the same request is dropped (not counted); an
//     unlimited rule stays unlimited (constructLimitsToCheck);
//   - errors "rate limit domain must not be empty", "rate limit descriptor
//     list must not be empty", "no rate limit configuration loaded", which
//     gRPC reports as code Unknown, as the RLS does;
//   - the gRPC health service reports service "ratelimit" (and "") SERVING.
//
// What differs on purpose: counts live in the process, so Stop and Restart
// lose them (the real RLS keeps them in Redis across its restarts); the window
// may optionally begin at the first hit of a key (evidence.WindowFirstHit) to model
// limiters that are not epoch aligned; an optional Delay slows every call to
// exercise a proxy's timeout, and a call cancelled during the Delay (client
// deadline, Stop) is not counted.
package rls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	commonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/rlsconfig"
	"github.com/rlbench/rlbench/model"
)

// HealthService is the gRPC health service name the RLS registers.
const HealthService = "ratelimit"

// Errors returned by ShouldRateLimit, with the RLS's texts (service/ratelimit.go).
var (
	ErrEmptyDomain      = errors.New("rate limit domain must not be empty")
	ErrEmptyDescriptors = errors.New("rate limit descriptor list must not be empty")
	ErrNoConfig         = errors.New("no rate limit configuration loaded")
	// ErrStopped is returned (gRPC code Unavailable) for a call that was in
	// flight when the server stopped or restarted.
	ErrStopped = errors.New("lab rls: server stopped")
)

// Options configures Start.
type Options struct {
	// Configs are the RLS configurations, at most one per domain.
	Configs []*rlsconfig.Config
	// Listen is the TCP address to listen on; default "127.0.0.1:0".
	Listen string
	// WindowStart is evidence.WindowAligned (default, "" too) or evidence.WindowFirstHit.
	WindowStart string
	// Delay is waited at the start of every ShouldRateLimit call before the
	// decision; a call cancelled meanwhile returns an error and is not counted.
	Delay time.Duration
	// Now is the clock; default time.Now. Aligned windows use its Unix seconds.
	Now func() time.Time
	// DecisionLog, when not nil, receives one evidence.Decision JSON line per
	// descriptor decision, each complete line in a single Write call, calls
	// serialized; the caller closes it. A limited descriptor's line has Key
	// (the RLS cache key "<domain>_<k>_<v>_..._<windowStart>"), WindowStart
	// (unix s), Current (count after the increment), Limit, Unit and Code
	// OK|OVER_LIMIT (OK for a shadow_mode or quota_mode rule even when
	// Current > Limit); an
	// unmatched, unknown-domain or unlimited descriptor's line has Code OK and
	// no Key; a rejected call gives one line with Code ERROR and Error.
	// TimeNs is Options.Now at the decision, RecvNs Options.Now when the
	// call entered ShouldRateLimit (before Options.Delay and the counter
	// lock).
	DecisionLog io.Writer
	// Decisions, when not nil, receives the same records through an
	// evidence.Writer (buffered, flushed every evidence.FlushEvery), instead
	// of DecisionLog. The caller closes it.
	Decisions *evidence.Writer
}

// Validate checks opts without starting anything: WindowStart is "",
// evidence.WindowAligned or evidence.WindowFirstHit, Delay is not negative, and Configs has at
// most one configuration per domain. No Configs is valid: every call is then
// answered with ErrNoConfig, as by an RLS that loaded none.
func (opts *Options) Validate() error {
	switch opts.WindowStart {
	case "", evidence.WindowAligned, evidence.WindowFirstHit:
	default:
		return fmt.Errorf("lab rls: window start %q: want %q or %q", opts.WindowStart, evidence.WindowAligned, evidence.WindowFirstHit)
	}
	if opts.Delay < 0 {
		return fmt.Errorf("lab rls: negative delay %s", opts.Delay)
	}
	if _, err := rlsconfig.ByDomain(opts.Configs); err != nil {
		return fmt.Errorf("lab rls: %w", err)
	}
	return nil
}

// Server is a running (or stopped) lab rate limit service. Its methods are
// safe for concurrent use.
type Server struct {
	opts     Options
	ctx      context.Context
	domains  map[string]*rlsconfig.Config
	firstHit bool
	now      func() time.Time

	mu      sync.Mutex // guards the fields below
	addr    string
	gs      *grpc.Server
	hs      *health.Server
	serveCh chan error
	running bool
	closed  bool // ctx done: no more restarts

	cmu      sync.Mutex // guards counters and gen
	counters map[string]*counter
	gen      uint64
	hits     uint64 // increments since the last prune
	calls    uint64 // calls with several descriptors so far (Decision.Call); restarts keep it

	logMu  sync.Mutex
	logErr error
}

type counter struct {
	count uint64
	start int64 // window start: unix s (aligned) or unix ns (first-hit)
	end   int64 // window end, same unit as start
}

// Start validates opts, listens on opts.Listen and serves until Stop or until
// ctx is done (which stops the server for good). Errors: a bad WindowStart,
// duplicate domains among Configs, or the listen error.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	s := &Server{opts: opts, ctx: ctx, now: opts.Now, counters: map[string]*counter{}}
	if s.now == nil {
		s.now = time.Now
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s.firstHit = opts.WindowStart == evidence.WindowFirstHit
	var err error
	if s.domains, err = rlsconfig.ByDomain(opts.Configs); err != nil {
		return nil, fmt.Errorf("lab rls: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	err = s.serveLocked(opts.Listen)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.Stop()
	})
	return s, nil
}

func (s *Server) serveLocked(addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("lab rls: listen %s: %w", addr, err)
	}
	gs := grpc.NewServer(grpc.WaitForHandlers(true))
	pb.RegisterRateLimitServiceServer(gs, service{s: s})
	hs := health.NewServer()
	hs.SetServingStatus(HealthService, healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(gs, hs)
	s.addr = lis.Addr().String()
	s.gs, s.hs, s.running = gs, hs, true
	ch := make(chan error, 1)
	s.serveCh = ch
	go func() { ch <- gs.Serve(lis) }()
	return nil
}

// Addr returns the listen address "127.0.0.1:port" (the same across Restart).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Running reports whether the server is serving.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// Stop stops the server like a killed process: the listener and all
// connections are closed, in-flight calls are cancelled (clients see an
// error), and all counts are lost. It returns once every handler has
// returned. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() { s.stopModeLocked(false) }

// stopModeLocked stops serving; graceful sends GOAWAY and lets in-flight
// calls finish (a SIGTERM'd RLS), otherwise connections are cut (a killed one).
func (s *Server) stopModeLocked(graceful bool) {
	if !s.running {
		return
	}
	s.hs.Shutdown()
	if graceful {
		s.gs.GracefulStop()
	} else {
		s.gs.Stop()
	}
	<-s.serveCh
	s.running = false
	s.cmu.Lock()
	s.gen++
	s.counters = map[string]*counter{}
	s.cmu.Unlock()
}

// Restart stops the server if it is running (losing the counts, see Stop) and
// serves again on the same address. Unlike Stop it is graceful, like a
// rolling restart of envoyproxy/ratelimit on SIGTERM: clients get a GOAWAY
// and in-flight calls finish, so callers reconnect instead of failing. It
// fails if the start context is done or the address cannot be bound again.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ctx.Err() != nil {
		return fmt.Errorf("lab rls: restart after the start context ended: %w", context.Cause(s.ctx))
	}
	s.stopModeLocked(true)
	return s.serveLocked(s.addr)
}

// LogErr returns the first error writing the decision log, if any.
func (s *Server) LogErr() error {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.logErr
}

type service struct {
	pb.UnimplementedRateLimitServiceServer
	s *Server
}

func (v service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp, err := v.s.ShouldRateLimit(ctx, req)
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, ErrStopped):
		return nil, status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, context.Canceled):
		return nil, status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return nil, status.Error(codes.DeadlineExceeded, err.Error())
	}
	return nil, err // code Unknown, like the RLS's serviceError
}

// ShouldRateLimit decides one request as described in the package comment.
// It is what the gRPC method calls and may be called directly in process.
// Errors: ErrEmptyDomain, ErrEmptyDescriptors, ErrNoConfig, ctx's error when
// cancelled during Options.Delay, ErrStopped when the server stopped meanwhile.
func (s *Server) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	recv := s.now().UnixNano()
	s.cmu.Lock()
	gen := s.gen
	s.cmu.Unlock()
	if d := s.opts.Delay; d > 0 {
		if h := testHookDelay; h != nil {
			h()
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	domain := req.GetDomain()
	var err error
	switch {
	case domain == "":
		err = ErrEmptyDomain
	case len(req.GetDescriptors()) == 0:
		err = ErrEmptyDescriptors
	case len(s.domains) == 0:
		err = ErrNoConfig
	}
	if err != nil {
		s.log(evidence.Decision{TimeNs: s.now().UnixNano(), RecvNs: recv, Domain: domain, Code: "ERROR", Error: err.Error()})
		return nil, err
	}

	cfg := s.domains[domain]
	descs := req.GetDescriptors()
	limits := make([]*limit, len(descs))
	entries := make([][]descriptor.DescriptorEntry, len(descs))
	for i, d := range descs {
		entries[i] = toEntries(d)
		if cfg != nil {
			limits[i] = findLimit(cfg, d)
		}
	}
	applyReplaces(limits)

	hitsAddend := uint64(req.GetHitsAddend())
	if hitsAddend == 0 {
		hitsAddend = 1
	}

	now := s.now()
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(descs))}
	decs := make([]evidence.Decision, len(descs))

	s.cmu.Lock()
	if s.gen != gen {
		s.cmu.Unlock()
		return nil, ErrStopped
	}
	var call uint64
	if len(descs) > 1 {
		s.calls++
		call = s.calls
	}
	for i, d := range descs {
		dec := evidence.Decision{TimeNs: now.UnixNano(), RecvNs: recv, Domain: domain, Descriptor: entries[i], Code: "OK", Call: call}
		l := limits[i]
		switch {
		case l == nil:
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
			dec.NoLimit = true
		case l.unlimited:
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			dec.Unlimited = true
		default:
			add := hitsAddend
			if h := d.GetHitsAddend(); h != nil {
				add = h.GetValue()
			}
			st := s.countLocked(domain, entries[i], l, add, now, &dec)
			if st.Code == pb.RateLimitResponse_OVER_LIMIT && l.quota {
				st = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, CurrentLimit: st.CurrentLimit, LimitRemaining: st.LimitRemaining}
			}
			resp.Statuses[i] = st
			if st.Code == pb.RateLimitResponse_OVER_LIMIT {
				resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
				dec.Code = "OVER_LIMIT"
			}
		}
		decs[i] = dec
	}
	s.pruneLocked(now)
	s.cmu.Unlock()

	for _, dec := range decs {
		s.log(dec)
	}
	return resp, nil
}

// testHookDelay, when set by tests, is called as a call enters Options.Delay.
var testHookDelay func()

// limit is the limit applying to one descriptor.
type limit struct {
	rpu       uint32
	unit      string // canonical rlsconfig unit name
	div       int64  // unit seconds
	unlimited bool
	shadow    bool
	quota     bool
	name      string
	replaces  []string
}

// findLimit returns the descriptor's limit: Envoy's override if present (RLS
// GetLimit: only for a known domain, never shadow), else the config match.
// A limit with an unknown unit is treated as no limit.
func findLimit(cfg *rlsconfig.Config, d *commonpb.RateLimitDescriptor) *limit {
	if o := d.GetLimit(); o != nil {
		unit := o.GetUnit().String()
		div := model.UnitSeconds(unit)
		if div == 0 {
			return nil
		}
		return &limit{rpu: o.GetRequestsPerUnit(), unit: unit, div: div}
	}
	m, _ := cfg.MatchDescriptor(d)
	if m == nil {
		return nil
	}
	rl := m.Limit
	return &limit{rpu: rl.RequestsPerUnit, unit: rl.Unit, div: model.UnitSeconds(rl.Unit),
		unlimited: rl.Unlimited, shadow: m.ShadowMode, quota: m.Rule.QuotaMode, name: rl.Name, replaces: rl.Replaces}
}

// applyReplaces drops limited rules named in another matched limit's replaces
// list; unlimited ones stay (RLS service/ratelimit.go constructLimitsToCheck
// sets them aside before it applies replaces).
func applyReplaces(limits []*limit) {
	replaced := map[string]bool{}
	for _, l := range limits {
		if l != nil {
			for _, r := range l.replaces {
				replaced[r] = true
			}
		}
	}
	if len(replaced) == 0 {
		return
	}
	for i, l := range limits {
		if l != nil && !l.unlimited && l.name != "" && replaced[l.name] {
			limits[i] = nil
		}
	}
}

func toEntries(d *commonpb.RateLimitDescriptor) []descriptor.DescriptorEntry {
	es := d.GetEntries()
	out := make([]descriptor.DescriptorEntry, len(es))
	for i, e := range es {
		out[i] = descriptor.DescriptorEntry{Key: e.GetKey(), Value: e.GetValue()}
	}
	return out
}

// countLocked increments the descriptor's window counter and builds its status.
func (s *Server) countLocked(domain string, entries []descriptor.DescriptorEntry, l *limit, add uint64, now time.Time, dec *evidence.Decision) *pb.RateLimitResponse_DescriptorStatus {
	prefix := descriptor.CacheKeyPrefix(domain, entries)
	var c *counter
	var startSec int64
	var untilReset time.Duration
	if s.firstHit {
		ns := now.UnixNano()
		c = s.counters[prefix]
		if c == nil || ns >= c.end {
			c = &counter{start: ns, end: ns + l.div*int64(time.Second)}
			s.counters[prefix] = c
		}
		startSec = floorDiv(c.start, int64(time.Second))
		untilReset = time.Duration(c.end - ns)
	} else {
		sec := now.Unix()
		startSec = floorDiv(sec, l.div) * l.div
		key := prefix + strconv.FormatInt(startSec, 10)
		c = s.counters[key]
		if c == nil {
			c = &counter{start: startSec, end: startSec + l.div}
			s.counters[key] = c
		}
		untilReset = time.Duration(l.div-(sec-startSec)) * time.Second
	}
	c.count += add
	s.hits++
	after := c.count
	st := &pb.RateLimitResponse_DescriptorStatus{
		Code:               pb.RateLimitResponse_OK,
		CurrentLimit:       &pb.RateLimitResponse_RateLimit{RequestsPerUnit: l.rpu, Unit: unitEnum(l.unit)},
		DurationUntilReset: durationpb.New(untilReset),
	}
	if after > uint64(l.rpu) {
		if !l.shadow {
			st.Code = pb.RateLimitResponse_OVER_LIMIT
		} else {
			dec.Shadow = true
		}
	} else {
		st.LimitRemaining = l.rpu - uint32(after)
	}
	dec.Key = prefix + strconv.FormatInt(startSec, 10)
	dec.WindowStart = startSec
	dec.Current = after
	dec.Limit = l.rpu
	dec.Unit = l.unit
	return st
}

// pruneLocked drops counters of ended windows once in a while so a long run
// does not grow without bound (the RLS's Redis keys expire similarly).
func (s *Server) pruneLocked(now time.Time) {
	if s.hits < 4096 || len(s.counters) < 1024 {
		return
	}
	s.hits = 0
	sec, ns := now.Unix(), now.UnixNano()
	for k, c := range s.counters {
		if (s.firstHit && ns >= c.end) || (!s.firstHit && sec >= c.end) {
			delete(s.counters, k)
		}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func unitEnum(unit string) pb.RateLimitResponse_RateLimit_Unit {
	return pb.RateLimitResponse_RateLimit_Unit(pb.RateLimitResponse_RateLimit_Unit_value[unit])
}

func (s *Server) log(d evidence.Decision) {
	if ew := s.opts.Decisions; ew != nil {
		if err := ew.Write(d); err != nil {
			s.setLogErr(err)
		}
		return
	}
	w := s.opts.DecisionLog
	if w == nil {
		return
	}
	b, err := json.Marshal(d)
	if err != nil {
		s.setLogErr(err)
		return
	}
	b = append(b, '\n')
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.logErr != nil {
		return
	}
	if _, err := w.Write(b); err != nil {
		s.logErr = err
	}
}

func (s *Server) setLogErr(err error) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if s.logErr == nil {
		s.logErr = err
	}
}
