package descriptor

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// DescriptorEntry is one key/value pair of a rate limit descriptor
// (envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry,
// api/envoy/extensions/common/ratelimit/v3/ratelimit.proto).
type DescriptorEntry struct {
	// Key is the entry's key, e.g. "generic_key" or "remote_address".
	Key string `json:"key"`
	// Value is the entry's value.
	Value string `json:"value"`
}

// RateLimitEntry is one route rate_limits entry (config.route.v3.RateLimit): its
// actions, evaluated in order, build ONE descriptor. If an action cannot
// produce its entry the whole descriptor is dropped (Envoy
// source/common/router/router_ratelimit.cc populateDescriptor: the first
// action returning false stops the entry; a request_headers action with
// skip_if_absent returns true without an entry).
type RateLimitEntry struct {
	// Actions are the descriptor's actions, at least one.
	Actions []RateLimitAction `json:"actions"`
}

// RateLimitAction is one route rate limit action (config.route.v3.RateLimit.Action);
// exactly one field is set. JSON field names follow Envoy's YAML.
type RateLimitAction struct {
	// GenericKey is the generic_key action.
	GenericKey *GenericKeyAction `json:"generic_key,omitempty"`
	// RequestHeaders is the request_headers action.
	RequestHeaders *RequestHeadersAction `json:"request_headers,omitempty"`
	// RemoteAddress is the remote_address action.
	RemoteAddress *RemoteAddressAction `json:"remote_address,omitempty"`
	// HeaderValueMatch is the header_value_match action.
	HeaderValueMatch *HeaderValueMatchAction `json:"header_value_match,omitempty"`
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
// header is absent the whole descriptor is dropped, unless SkipIfAbsent,
// which skips just this entry. With several values of the header the first
// is used (Envoy router_ratelimit.cc RequestHeadersAction: header_value[0],
// envoyproxy/envoy issue 13454).
type RequestHeadersAction struct {
	// HeaderName is the request header read (case-insensitive).
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

// HeaderValueMatchAction yields (DescriptorKey, DescriptorValue) when the
// request matches all Headers (or matches none of them being all true, with
// ExpectMatch false), and drops the descriptor otherwise (Envoy
// router_ratelimit.cc HeaderValueMatchAction).
type HeaderValueMatchAction struct {
	// DescriptorKey is the entry key; default "header_match".
	DescriptorKey string `json:"descriptor_key,omitempty"`
	// DescriptorValue is the entry value (required).
	DescriptorValue string `json:"descriptor_value"`
	// ExpectMatch is expect_match; nil means true.
	ExpectMatch *bool `json:"expect_match,omitempty"`
	// Headers must all match (an empty list matches every request).
	Headers []HeaderMatcher `json:"headers"`
}

// DefaultHeaderMatchKey is HeaderValueMatchAction.DescriptorKey when empty.
const DefaultHeaderMatchKey = "header_match"

// Key is the entry key the action yields.
func (a *HeaderValueMatchAction) Key() string {
	if a.DescriptorKey == "" {
		return DefaultHeaderMatchKey
	}
	return a.DescriptorKey
}

// HeaderMatcher is config.route.v3.HeaderMatcher: the request header Name
// (all its values joined with ","), matched by at most one of the match
// fields; none set means "present". Semantics of Envoy
// source/common/http/header_utility.cc matchHeaders: an absent header
// matches only present_match: false (or, inverted, present_match: true),
// unless TreatMissingHeaderAsEmpty; otherwise the result is the match XOR
// InvertMatch. An empty ExactMatch matches any value.
type HeaderMatcher struct {
	Name                      string         `json:"name"`
	ExactMatch                *string        `json:"exact_match,omitempty"`
	PrefixMatch               *string        `json:"prefix_match,omitempty"`
	SuffixMatch               *string        `json:"suffix_match,omitempty"`
	ContainsMatch             *string        `json:"contains_match,omitempty"`
	SafeRegexMatch            *RegexMatcher  `json:"safe_regex_match,omitempty"`
	RangeMatch                *Int64Range    `json:"range_match,omitempty"`
	PresentMatch              *bool          `json:"present_match,omitempty"`
	StringMatch               *StringMatcher `json:"string_match,omitempty"`
	InvertMatch               bool           `json:"invert_match,omitempty"`
	TreatMissingHeaderAsEmpty bool           `json:"treat_missing_header_as_empty,omitempty"`
}

// RegexMatcher is type.matcher.v3.RegexMatcher: an RE2 regex that must
// match the whole value.
type RegexMatcher struct {
	Regex string `json:"regex"`
}

// Int64Range is type.v3.Int64Range, the half-open [Start, End).
type Int64Range struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// StringMatcher is type.matcher.v3.StringMatcher: exactly one of Exact,
// Prefix, Suffix, Contains, SafeRegex; IgnoreCase applies to the first four.
type StringMatcher struct {
	Exact      *string       `json:"exact,omitempty"`
	Prefix     *string       `json:"prefix,omitempty"`
	Suffix     *string       `json:"suffix,omitempty"`
	Contains   *string       `json:"contains,omitempty"`
	SafeRegex  *RegexMatcher `json:"safe_regex,omitempty"`
	IgnoreCase bool          `json:"ignore_case,omitempty"`
}

type matchKind uint8

const (
	matchPresent matchKind = iota
	matchExact
	matchPrefix
	matchSuffix
	matchContains
	matchRegex
	matchRange
)

// HeaderMatch is a compiled HeaderMatcher (HeaderMatcher.Compile).
type HeaderMatch struct {
	name       string // canonical key
	kind       matchKind
	value      string
	ignoreCase bool
	re         *regexp.Regexp
	rng        Int64Range
	present    bool
	anyValue   bool // exact_match "" (deprecated form): any value matches
	invert     bool
	missingOK  bool
}

func compileRegex(what string, r *RegexMatcher) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + r.Regex + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%s: regex %q: %v", what, r.Regex, err)
	}
	return re, nil
}

// Compile checks the matcher and compiles it; what names it in errors.
func (h *HeaderMatcher) Compile(what string) (*HeaderMatch, error) {
	if h.Name == "" {
		return nil, fmt.Errorf("%s: name is required", what)
	}
	c := &HeaderMatch{name: http.CanonicalHeaderKey(h.Name), invert: h.InvertMatch, missingOK: h.TreatMissingHeaderAsEmpty, present: true}
	n := 0
	set := func(k matchKind, v *string) {
		if v != nil {
			n++
			c.kind, c.value = k, *v
		}
	}
	set(matchExact, h.ExactMatch)
	set(matchPrefix, h.PrefixMatch)
	set(matchSuffix, h.SuffixMatch)
	set(matchContains, h.ContainsMatch)
	if h.SafeRegexMatch != nil {
		n++
		re, err := compileRegex(what+".safe_regex_match", h.SafeRegexMatch)
		if err != nil {
			return nil, err
		}
		c.kind, c.re = matchRegex, re
	}
	if h.RangeMatch != nil {
		n++
		c.kind, c.rng = matchRange, *h.RangeMatch
	}
	if h.PresentMatch != nil {
		n++
		c.kind, c.present = matchPresent, *h.PresentMatch
	}
	if s := h.StringMatch; s != nil {
		n++
		m := 0
		for _, f := range []struct {
			k matchKind
			v *string
		}{{matchExact, s.Exact}, {matchPrefix, s.Prefix}, {matchSuffix, s.Suffix}, {matchContains, s.Contains}} {
			if f.v != nil {
				m++
				c.kind, c.value = f.k, *f.v
			}
		}
		if s.SafeRegex != nil {
			m++
			re, err := compileRegex(what+".string_match.safe_regex", s.SafeRegex)
			if err != nil {
				return nil, err
			}
			c.kind, c.re = matchRegex, re
		}
		if m != 1 {
			return nil, fmt.Errorf("%s.string_match: set exactly one of exact, prefix, suffix, contains, safe_regex (has %d)", what, m)
		}
		if s.IgnoreCase && c.kind != matchRegex {
			c.ignoreCase = true
			c.value = strings.ToLower(c.value)
		}
	} else if c.kind == matchExact && c.value == "" {
		// The deprecated exact_match "" matches any value (HeaderMatchType
		// Value: value_.empty() || value == value_); string_match exact ""
		// matches only the empty value.
		c.anyValue = true
	}
	if n > 1 {
		return nil, fmt.Errorf("%s: set at most one match specifier (has %d)", what, n)
	}
	return c, nil
}

// Matches is HeaderUtility::matchHeaders for one matcher (source/common/http/header_utility.cc).
func (c *HeaderMatch) Matches(h http.Header) bool {
	vs := h[c.name]
	if len(vs) == 0 && !c.missingOK {
		if c.invert {
			return c.kind == matchPresent && c.present
		}
		return c.kind == matchPresent && !c.present
	}
	v := ""
	switch len(vs) {
	case 0:
	case 1:
		v = vs[0]
	default:
		v = strings.Join(vs, ",")
	}
	var m bool
	switch c.kind {
	case matchPresent:
		m = c.present
	case matchExact:
		if c.ignoreCase {
			v = strings.ToLower(v)
		}
		m = c.anyValue || v == c.value
	case matchPrefix:
		if c.ignoreCase {
			v = strings.ToLower(v)
		}
		m = strings.HasPrefix(v, c.value)
	case matchSuffix:
		if c.ignoreCase {
			v = strings.ToLower(v)
		}
		m = strings.HasSuffix(v, c.value)
	case matchContains:
		if c.ignoreCase {
			v = strings.ToLower(v)
		}
		m = strings.Contains(v, c.value)
	case matchRegex:
		m = c.re.MatchString(v)
	case matchRange:
		n, err := strconv.ParseInt(v, 10, 64)
		m = err == nil && n >= c.rng.Start && n < c.rng.End
	}
	return m != c.invert
}

// CompiledRateLimit is a validated rate_limits entry with its header
// matchers compiled (matchers[i] belongs to actions[i]; nil for other
// actions): what builds one request's descriptor (Descriptor).
type CompiledRateLimit struct {
	actions  []RateLimitAction
	matchers [][]*HeaderMatch
}

// CompileRateLimits validates rate_limits entries and compiles them; what
// names them in errors ("global rate limit: rate_limits").
func CompileRateLimits(what string, rls []RateLimitEntry) ([]CompiledRateLimit, error) {
	out := make([]CompiledRateLimit, len(rls))
	for i := range rls {
		e, err := CompileRateLimit(fmt.Sprintf("%s[%d]", what, i), rls[i].Actions)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// CompileRateLimit checks one rate_limits entry and compiles its header
// matchers; what names it in errors ("global rate limit: rate_limits[1]").
func CompileRateLimit(what string, actions []RateLimitAction) (CompiledRateLimit, error) {
	e := CompiledRateLimit{actions: actions, matchers: make([][]*HeaderMatch, len(actions))}
	if len(actions) == 0 {
		return e, fmt.Errorf("%s: at least one action is required", what)
	}
	for i := range actions {
		a := &actions[i]
		at := fmt.Sprintf("%s.actions[%d]", what, i)
		n := 0
		if a.GenericKey != nil {
			n++
			if a.GenericKey.DescriptorValue == "" {
				return e, fmt.Errorf("%s.generic_key.descriptor_value is empty", at)
			}
		}
		if a.RequestHeaders != nil {
			n++
			if a.RequestHeaders.HeaderName == "" || a.RequestHeaders.DescriptorKey == "" {
				return e, fmt.Errorf("%s.request_headers needs header_name and descriptor_key", at)
			}
		}
		if a.RemoteAddress != nil {
			n++
		}
		if m := a.HeaderValueMatch; m != nil {
			n++
			if m.DescriptorValue == "" {
				return e, fmt.Errorf("%s.header_value_match.descriptor_value is empty", at)
			}
			for j := range m.Headers {
				c, err := m.Headers[j].Compile(fmt.Sprintf("%s.header_value_match.headers[%d]", at, j))
				if err != nil {
					return e, err
				}
				e.matchers[i] = append(e.matchers[i], c)
			}
		}
		if n != 1 {
			return e, fmt.Errorf("%s must set exactly one of generic_key, request_headers, remote_address, header_value_match (has %d)", at, n)
		}
	}
	return e, nil
}

// HeadersRead lists the request headers the action reads, lower-case:
// request_headers' header_name, header_value_match's matcher names.
func (a *RateLimitAction) HeadersRead() []string {
	var out []string
	if h := a.RequestHeaders; h != nil {
		out = append(out, strings.ToLower(h.HeaderName))
	}
	if m := a.HeaderValueMatch; m != nil {
		for _, h := range m.Headers {
			out = append(out, strings.ToLower(h.Name))
		}
	}
	return out
}

// Descriptor builds the entry's descriptor for a request with headers h
// (canonical keys) from peer IP remoteIP, as Envoy's router does
// (source/common/router/router_ratelimit.cc populateDescriptors); ok is
// false when an action dropped it. The entries are appended to dst[:0].
func (e *CompiledRateLimit) Descriptor(dst []DescriptorEntry, h http.Header, remoteIP string) (_ []DescriptorEntry, ok bool) {
	dst, ok, _ = e.DescriptorOf(dst, h, remoteIP, nil)
	return dst, ok
}

// DescriptorOf is Descriptor for a request some of whose header values
// are not known: unknown reports, by canonical key, a header the request
// sent without its value being recorded (nil: none). header is the first
// such header (lower-case) an action needs before the descriptor is
// settled: then neither the descriptor nor whether the entry yields one is
// known (ok false, header set); "" when the result is known. A header that
// an earlier action's drop makes moot does not count.
func (e *CompiledRateLimit) DescriptorOf(dst []DescriptorEntry, h http.Header, remoteIP string, unknown func(string) bool) (_ []DescriptorEntry, ok bool, header string) {
	dst = dst[:0]
	for i := range e.actions {
		a := &e.actions[i]
		switch {
		case a.GenericKey != nil:
			dst = append(dst, DescriptorEntry{Key: a.GenericKey.Key(), Value: a.GenericKey.DescriptorValue})
		case a.RequestHeaders != nil:
			name := http.CanonicalHeaderKey(a.RequestHeaders.HeaderName)
			if unknown != nil && unknown(name) {
				return dst, false, strings.ToLower(name)
			}
			vs := h[name]
			if len(vs) == 0 {
				if a.RequestHeaders.SkipIfAbsent {
					continue
				}
				return dst, false, ""
			}
			dst = append(dst, DescriptorEntry{Key: a.RequestHeaders.DescriptorKey, Value: vs[0]})
		case a.RemoteAddress != nil:
			if remoteIP == "" {
				return dst, false, ""
			}
			dst = append(dst, DescriptorEntry{Key: "remote_address", Value: remoteIP})
		case a.HeaderValueMatch != nil:
			m := a.HeaderValueMatch
			// all is the AND of the matchers: a known one that fails
			// settles it whatever the unknown ones say.
			all, pending := true, ""
			for _, c := range e.matchers[i] {
				if unknown != nil && unknown(c.name) {
					if pending == "" {
						pending = strings.ToLower(c.name)
					}
					continue
				}
				if !c.Matches(h) {
					all, pending = false, ""
					break
				}
			}
			if pending != "" {
				return dst, false, pending
			}
			expect := m.ExpectMatch == nil || *m.ExpectMatch
			if all != expect {
				return dst, false, ""
			}
			dst = append(dst, DescriptorEntry{Key: m.Key(), Value: m.DescriptorValue})
		}
	}
	return dst, true, ""
}

// Descriptors builds a request's descriptors from compiled rate_limits
// entries (CompileRateLimits of evidence.Limiter.RateLimits): one per entry whose
// actions all produced (or skipped) their entries, in order, as the lab
// proxy builds them (Envoy sends them in one RLS call). h holds the
// request's headers (canonical keys), remoteIP the client's address ("":
// unknown, remote_address drops its descriptor).
func Descriptors(entries []CompiledRateLimit, h http.Header, remoteIP string) [][]DescriptorEntry {
	var out [][]DescriptorEntry
	for i := range entries {
		if d, ok := entries[i].Descriptor(nil, h, remoteIP); ok {
			out = append(out, d)
		}
	}
	return out
}
