package proxy

import (
	"github.com/rlbench/rlbench/evidence"
)

// The route rate limit actions are evidence's (evidence.RateLimitEntry and
// its actions, with their evaluation): the lab proxy, plans and
// scenario.json's limiters share one definition.
type (
	// RateLimit is one route rate_limits entry (evidence.RateLimitEntry).
	RateLimit = evidence.RateLimitEntry
	// Action is one route rate limit action (evidence.RateLimitAction).
	Action = evidence.RateLimitAction
	// GenericKeyAction is the generic_key action.
	GenericKeyAction = evidence.GenericKeyAction
	// RequestHeadersAction is the request_headers action.
	RequestHeadersAction = evidence.RequestHeadersAction
	// RemoteAddressAction is the remote_address action.
	RemoteAddressAction = evidence.RemoteAddressAction
	// HeaderValueMatchAction is the header_value_match action.
	HeaderValueMatchAction = evidence.HeaderValueMatchAction
	// HeaderMatcher is config.route.v3.HeaderMatcher.
	HeaderMatcher = evidence.HeaderMatcher
	// RegexMatcher is type.matcher.v3.RegexMatcher.
	RegexMatcher = evidence.RegexMatcher
	// Int64Range is type.v3.Int64Range.
	Int64Range = evidence.Int64Range
	// StringMatcher is type.matcher.v3.StringMatcher.
	StringMatcher  = evidence.StringMatcher
	rateLimitEntry = evidence.CompiledRateLimit
)

// Default entry keys of the generic_key and header_value_match actions.
const (
	DefaultGenericKey     = evidence.DefaultGenericKey
	DefaultHeaderMatchKey = evidence.DefaultHeaderMatchKey
)

func compileEntries(what string, rls []RateLimit) ([]rateLimitEntry, error) {
	return evidence.CompileRateLimits(what, rls)
}

func compileActions(what string, actions []Action) (rateLimitEntry, error) {
	return evidence.CompileRateLimit(what, actions)
}
