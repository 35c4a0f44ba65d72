package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlbench/rlbench/evidence"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// GlobalRateLimit configures the lab equivalent of Envoy's HTTP rate limit
// filter (envoy.filters.http.ratelimit) plus ONE route rate_limits entry
// whose actions build the descriptor sent to the rate limit service.
type GlobalRateLimit struct {
	// Domain is the filter's domain, sent as RateLimitRequest.domain (required).
	Domain string `json:"domain"`
	// Actions are the route's rate_limits[0].actions, evaluated in order;
	// each yields one descriptor entry (see Action).
	Actions []Action `json:"actions"`
	// RLS is the rate limit service address, "grpc://127.0.0.1:PORT" or
	// "127.0.0.1:PORT". One *grpc.ClientConn is shared by all requests.
	RLS string `json:"rls"`
	// Timeout bounds each ShouldRateLimit call; default 20 ms (Envoy's
	// default `timeout`). Exceeding it counts as an error.
	Timeout time.Duration `json:"timeout,omitempty"`
	// FailureModeDeny is failure_mode_deny: on RLS error or timeout reply
	// StatusOnError instead of letting the request through.
	FailureModeDeny bool `json:"failure_mode_deny,omitempty"`
	// StatusOnError is status_on_error.code; default 500 (values < 400 too).
	StatusOnError int `json:"status_on_error,omitempty"`
	// RateLimitedStatus is rate_limited_status.code for OVER_LIMIT; default
	// 429 (values < 400 too).
	RateLimitedStatus int `json:"rate_limited_status,omitempty"`
	// EnableXRateLimitHeaders is enable_x_ratelimit_headers: DRAFT_VERSION_03:
	// x-ratelimit-limit/-remaining/-reset built from the RLS descriptor
	// statuses (Envoy ratelimit_headers.cc: the status with the fewest
	// remaining, quota policy "<n>;w=<window s>[;name=..]" per status).
	EnableXRateLimitHeaders bool `json:"enable_x_ratelimit_headers,omitempty"`
	// StatPrefix is stat_prefix: stats become cluster.<c>.ratelimit.<prefix>.<name>.
	StatPrefix string `json:"stat_prefix,omitempty"`
}

// DefaultRLSTimeout is Envoy's default ratelimit filter `timeout`.
const DefaultRLSTimeout = 20 * time.Millisecond

// Action is one route rate limit action (config.route.v3.RateLimit.Action);
// exactly one field is set. JSON field names follow Envoy's YAML.
type Action struct {
	// GenericKey is the generic_key action.
	GenericKey *GenericKeyAction `json:"generic_key,omitempty"`
	// RequestHeaders is the request_headers action.
	RequestHeaders *RequestHeadersAction `json:"request_headers,omitempty"`
	// RemoteAddress is the remote_address action.
	RemoteAddress *RemoteAddressAction `json:"remote_address,omitempty"`
}

// GenericKeyAction yields the entry (DescriptorKey, DescriptorValue).
type GenericKeyAction struct {
	// DescriptorKey is the entry key; default "generic_key".
	DescriptorKey string `json:"descriptor_key,omitempty"`
	// DescriptorValue is the entry value (required, non-empty).
	DescriptorValue string `json:"descriptor_value"`
}

// DefaultGenericKey is GenericKeyAction.DescriptorKey when empty (Envoy's
// RateLimit.Action.GenericKey descriptor_key default).
const DefaultGenericKey = "generic_key"

// Key is the entry key the action yields: DescriptorKey, or DefaultGenericKey.
func (a *GenericKeyAction) Key() string {
	if a.DescriptorKey == "" {
		return DefaultGenericKey
	}
	return a.DescriptorKey
}

// RequestHeadersAction yields (DescriptorKey, value of HeaderName). When the
// header is absent the whole descriptor is dropped (so no RLS call if it is
// the only one), unless SkipIfAbsent, which skips just this entry.
type RequestHeadersAction struct {
	// HeaderName is the request header read (case-insensitive; several
	// values are joined with ",").
	HeaderName string `json:"header_name"`
	// DescriptorKey is the entry key (required).
	DescriptorKey string `json:"descriptor_key"`
	// SkipIfAbsent skips only this entry when the header is missing.
	SkipIfAbsent bool `json:"skip_if_absent,omitempty"`
}

// RemoteAddressAction yields ("remote_address", <downstream peer IP>). The
// lab follows use_remote_address: true, so the peer IP of the TCP
// connection is the trusted address (x-forwarded-for is not consulted).
type RemoteAddressAction struct{}

// Validate checks the filter's configuration: a Domain and at least one
// action, each setting exactly one well-formed action. It does not require
// RLS (a lab fills the address in when it has started its RLS); Start does.
func (g *GlobalRateLimit) Validate() error {
	if g.Domain == "" {
		return errors.New("global rate limit: domain is required")
	}
	if len(g.Actions) == 0 {
		return errors.New("global rate limit: at least one action is required")
	}
	for i, a := range g.Actions {
		n := 0
		if a.GenericKey != nil {
			n++
			if a.GenericKey.DescriptorValue == "" {
				return fmt.Errorf("global rate limit: actions[%d].generic_key.descriptor_value is empty", i)
			}
		}
		if a.RequestHeaders != nil {
			n++
			if a.RequestHeaders.HeaderName == "" || a.RequestHeaders.DescriptorKey == "" {
				return fmt.Errorf("global rate limit: actions[%d].request_headers needs header_name and descriptor_key", i)
			}
		}
		if a.RemoteAddress != nil {
			n++
		}
		if n != 1 {
			return fmt.Errorf("global rate limit: actions[%d] must set exactly one of generic_key, request_headers, remote_address (has %d)", i, n)
		}
	}
	return nil
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

// descriptor builds the descriptor of the rate_limits entry for r, or nil
// when an action cannot produce its entry (Envoy: no descriptor is
// generated for that configuration) or every action was skipped.
func (g *GlobalRateLimit) descriptor(r *http.Request) *rlcommon.RateLimitDescriptor {
	var entries []*rlcommon.RateLimitDescriptor_Entry
	for _, a := range g.Actions {
		switch {
		case a.GenericKey != nil:
			entries = append(entries, &rlcommon.RateLimitDescriptor_Entry{Key: a.GenericKey.Key(), Value: a.GenericKey.DescriptorValue})
		case a.RequestHeaders != nil:
			vs := r.Header.Values(a.RequestHeaders.HeaderName)
			if len(vs) == 0 {
				if a.RequestHeaders.SkipIfAbsent {
					continue
				}
				return nil
			}
			entries = append(entries, &rlcommon.RateLimitDescriptor_Entry{Key: a.RequestHeaders.DescriptorKey, Value: strings.Join(vs, ",")})
		case a.RemoteAddress != nil:
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil || host == "" {
				return nil
			}
			entries = append(entries, &rlcommon.RateLimitDescriptor_Entry{Key: "remote_address", Value: host})
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return &rlcommon.RateLimitDescriptor{Entries: entries}
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
		return nil, fmt.Errorf("global rate limit: rls %q: %w", addr, err)
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
func xRateLimitHeaders(statuses []*rlsv3.RateLimitResponse_DescriptorStatus) http.Header {
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
	h := http.Header{}
	h.Set("x-ratelimit-limit", strconv.FormatUint(uint64(minSt.GetCurrentLimit().GetRequestsPerUnit()), 10)+policy.String())
	h.Set("x-ratelimit-remaining", strconv.FormatUint(uint64(minSt.GetLimitRemaining()), 10))
	h.Set("x-ratelimit-reset", strconv.FormatInt(minSt.GetDurationUntilReset().GetSeconds(), 10))
	return h
}

// unitSeconds is the window of a RateLimitResponse unit up to DAY
// (evidence.UnitSeconds of its name); 0 for longer or unknown units, which
// the lab's x-ratelimit-limit policy does not name.
func unitSeconds(u rlsv3.RateLimitResponse_RateLimit_Unit) int64 {
	switch u {
	case rlsv3.RateLimitResponse_RateLimit_SECOND, rlsv3.RateLimitResponse_RateLimit_MINUTE,
		rlsv3.RateLimitResponse_RateLimit_HOUR, rlsv3.RateLimitResponse_RateLimit_DAY:
		return evidence.UnitSeconds(u.String())
	}
	return 0
}

// headerValues converts RLS response_headers_to_add to an http.Header.
func headerValues(hv []*corev3.HeaderValue) http.Header {
	if len(hv) == 0 {
		return nil
	}
	h := http.Header{}
	for _, v := range hv {
		val := v.GetValue()
		if val == "" && len(v.GetRawValue()) > 0 {
			val = string(v.GetRawValue())
		}
		h.Add(v.GetKey(), val)
	}
	return h
}
