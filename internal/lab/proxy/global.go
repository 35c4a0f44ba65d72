package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/model"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// GlobalRateLimit configures the lab equivalent of Envoy's HTTP rate limit
// filter (envoy.filters.http.ratelimit) with the route's rate_limits
// entries whose actions build the descriptors sent to the rate limit
// service: one descriptor per entry, all in one ShouldRateLimit call; no
// descriptor, no call (Envoy source/extensions/filters/http/ratelimit/
// ratelimit.cc populateRateLimitDescriptors/initiateCall). GlobalFilter
// holds the settings a plan's lab.global gives too.
type GlobalRateLimit struct {
	GlobalFilter
	// Actions, when set, are the actions of a first rate_limits entry (the
	// one-entry form older plans use); RateLimits follow it.
	Actions []descriptor.RateLimitAction `json:"actions,omitempty"`
	// RLS is the rate limit service address, "grpc://127.0.0.1:PORT" or
	// "127.0.0.1:PORT". One *grpc.ClientConn is shared by all requests.
	RLS string `json:"rls"`
	// RateLimitedStatus is rate_limited_status.code for OVER_LIMIT; default
	// 429 (values < 400 too).
	RateLimitedStatus int `json:"rate_limited_status,omitempty"`
	// StatPrefix is stat_prefix: stats become cluster.<c>.ratelimit.<prefix>.<name>.
	StatPrefix string `json:"stat_prefix,omitempty"`
}

// GlobalFilter is the part of Envoy's ratelimit filter configuration
// (envoy.extensions.filters.http.ratelimit.v3.RateLimit and the route's
// rate_limits) that the lab proxy and a plan's lab.global share: the
// domain, the rate_limits entries, the call's timeout, failure_mode_deny,
// status_on_error and enable_x_ratelimit_headers.
type GlobalFilter struct {
	// Domain is the filter's domain, sent as RateLimitRequest.domain (required).
	Domain string `json:"domain"`
	// RateLimits are the route's rate_limits entries (stage 0), in order:
	// [{actions: [{request_headers: {header_name: x-user, descriptor_key: user}}, {remote_address: {}}]}].
	RateLimits []descriptor.RateLimitEntry `json:"rate_limits,omitempty"`
	// Timeout bounds each ShouldRateLimit call; default 20 ms (Envoy's
	// default `timeout`). Exceeding it counts as an error.
	Timeout Duration `json:"timeout,omitempty"`
	// FailureModeDeny is failure_mode_deny: on RLS error or timeout reply
	// StatusOnError instead of letting the request through.
	FailureModeDeny bool `json:"failure_mode_deny,omitempty"`
	// StatusOnError is status_on_error.code; default 500 (values < 400 too).
	StatusOnError int `json:"status_on_error,omitempty"`
	// EnableXRateLimitHeaders is enable_x_ratelimit_headers: DRAFT_VERSION_03:
	// x-ratelimit-limit/-remaining/-reset built from the RLS descriptor
	// statuses (Envoy ratelimit_headers.cc: the status with the fewest
	// remaining, quota policy "<n>;w=<window s>[;name=..]" per status).
	EnableXRateLimitHeaders bool `json:"enable_x_ratelimit_headers,omitempty"`
}

// DefaultRLSTimeout is Envoy's default ratelimit filter `timeout`.
const DefaultRLSTimeout = 20 * time.Millisecond

// Entries returns the effective rate_limits entries: Actions (when set) as
// the first, then RateLimits.
func (g *GlobalRateLimit) Entries() []descriptor.RateLimitEntry {
	if len(g.Actions) == 0 {
		return g.RateLimits
	}
	return append([]descriptor.RateLimitEntry{{Actions: g.Actions}}, g.RateLimits...)
}

// Validate checks the filter's configuration: a Domain and at least one
// rate_limits entry, each with well-formed actions (exactly one action type
// set, header matchers that compile). It does not require RLS (a lab fills
// the address in when it has started its RLS); Start does.
func (g *GlobalRateLimit) Validate() error {
	if g.Domain == "" {
		return errors.New("global rate limit: domain is required")
	}
	if len(g.Actions) == 0 && len(g.RateLimits) == 0 {
		return errors.New("global rate limit: at least one action (a rate_limits entry) is required")
	}
	if len(g.Actions) > 0 {
		if _, err := descriptor.CompileRateLimit("global rate limit", g.Actions); err != nil {
			return err
		}
	}
	_, err := descriptor.CompileRateLimits("global rate limit: rate_limits", g.RateLimits)
	return err
}

// validate is Validate plus the RLS address that Start needs.
func (g *GlobalRateLimit) validate() error {
	if err := g.Validate(); err != nil {
		return err
	}
	return g.validateRLS()
}

// validateRLS is the part of validate that Config.Validate leaves to Start.
func (g *GlobalRateLimit) validateRLS() error {
	if g.RLS == "" {
		return errors.New("global rate limit: rls address is required")
	}
	return nil
}

// compile compiles Entries (Validate must have passed).
func (g *GlobalRateLimit) compile() ([]descriptor.CompiledRateLimit, error) {
	return descriptor.CompileRateLimits("global rate limit: rate_limits", g.Entries())
}

// globalDescriptors builds the request's descriptors, one per rate_limits
// entry whose actions all produced (or skipped) their entries; nil when none.
func globalDescriptors(entries []descriptor.CompiledRateLimit, h http.Header, remoteIP string) []*rlcommon.RateLimitDescriptor {
	var out []*rlcommon.RateLimitDescriptor
	var buf [4]descriptor.DescriptorEntry
	for i := range entries {
		es, ok := entries[i].Descriptor(buf[:0], h, remoteIP)
		if !ok {
			continue
		}
		d := &rlcommon.RateLimitDescriptor{Entries: make([]*rlcommon.RateLimitDescriptor_Entry, len(es))}
		for j, e := range es {
			d.Entries[j] = &rlcommon.RateLimitDescriptor_Entry{Key: e.Key, Value: e.Value}
		}
		out = append(out, d)
	}
	return out
}

// rlsTarget strips an optional grpc:// scheme.
func rlsTarget(addr string) string {
	return strings.TrimPrefix(addr, "grpc://")
}

// dialRLS creates the shared connection and tries (without failing) to get
// it READY within wait, so that the first request is not charged the
// connection setup against the 20 ms budget.
func dialRLS(ctx context.Context, addr string, wait time.Duration) (*grpc.ClientConn, error) {
	cc, err := grpc.NewClient(rlsTarget(addr), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("global rate limit: rls %q: %w", evidence.RedactURL(addr), evidence.RedactError(err))
	}
	cc.Connect()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		s := cc.GetState()
		if s == connectivity.Ready || s == connectivity.TransientFailure || !cc.WaitForStateChange(wctx, s) {
			break
		}
	}
	return cc, nil
}

// xRateLimitHeaders renders DRAFT_VERSION_03 headers from RLS statuses
// (Envoy source/extensions/filters/http/ratelimit/ratelimit_headers.cc).
func xRateLimitHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus) []hdr {
	var minSt *rlsv3.RateLimitResponse_DescriptorStatus
	var policy strings.Builder
	for _, st := range statuses {
		if st.GetCurrentLimit() == nil {
			continue
		}
		if minSt == nil || st.GetLimitRemaining() < minSt.GetLimitRemaining() {
			minSt = st
		}
		if w := unitSeconds(st.GetCurrentLimit().GetUnit()); w != 0 {
			fmt.Fprintf(&policy, ", %d;w=%d", st.GetCurrentLimit().GetRequestsPerUnit(), w)
			if n := st.GetCurrentLimit().GetName(); n != "" {
				fmt.Fprintf(&policy, ";name=%q", n)
			}
		}
	}
	if minSt == nil {
		return nil
	}
	return []hdr{
		{"X-Ratelimit-Limit", strconv.FormatUint(uint64(minSt.GetCurrentLimit().GetRequestsPerUnit()), 10) + policy.String()},
		{"X-Ratelimit-Remaining", strconv.FormatUint(uint64(minSt.GetLimitRemaining()), 10)},
		{"X-Ratelimit-Reset", strconv.FormatInt(minSt.GetDurationUntilReset().GetSeconds(), 10)},
	}
}

// unitSeconds is the window of a RateLimitResponse unit up to DAY
// (model.UnitSeconds of its name); 0 for longer or unknown units, which
// the lab's x-ratelimit-limit policy does not name.
func unitSeconds(u rlsv3.RateLimitResponse_RateLimit_Unit) int64 {
	switch u {
	case rlsv3.RateLimitResponse_RateLimit_SECOND, rlsv3.RateLimitResponse_RateLimit_MINUTE,
		rlsv3.RateLimitResponse_RateLimit_HOUR, rlsv3.RateLimitResponse_RateLimit_DAY:
		return model.UnitSeconds(u.String())
	}
	return 0
}
