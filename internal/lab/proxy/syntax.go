package proxy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
)

// ParseActions parses the one-line form of a rate_limits entry, the syntax
// of `rlbench lab --global-rate-limit` and `--local-rate-limit`: actions
// separated by ",", each one of
//
//	generic_key=VALUE                       ("generic_key", VALUE)
//	generic_key:KEY=VALUE                   (KEY, VALUE)
//	request_headers:HEADER=KEY              (KEY, value of HEADER); a trailing "?" is skip_if_absent
//	remote_address                          ("remote_address", peer IP)
//	header_value_match:[KEY=]VALUE@MATCHERS ("header_match" or KEY, VALUE) when all MATCHERS hold
//	!header_value_match:...                 the same with expect_match: false
//
// MATCHERS are joined by "&", each HEADER (present), HEADER=EXACT,
// HEADER^=PREFIX, HEADER$=SUFFIX, HEADER*=CONTAINS or HEADER~=REGEX (RE2,
// whole value), optionally preceded by "!" (invert_match). Values cannot
// contain ",", "&" or "@" in this form; a plan can say anything.
func ParseActions(s string) ([]descriptor.RateLimitAction, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("rate limit actions %q: empty", s)
	}
	var out []descriptor.RateLimitAction
	for _, part := range strings.Split(s, ",") {
		a, err := parseAction(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("rate limit actions %q: %w", s, err)
		}
		out = append(out, a)
	}
	if _, err := descriptor.CompileRateLimit("actions", out); err != nil {
		return nil, fmt.Errorf("rate limit actions %q: %w", s, err)
	}
	return out, nil
}

func parseAction(p string) (descriptor.RateLimitAction, error) {
	kind, rest, hasArg := strings.Cut(p, ":")
	eq := func(what string) (string, string, error) {
		k, v, ok := strings.Cut(rest, "=")
		if !ok || k == "" || v == "" {
			return "", "", fmt.Errorf("%q: want %s", p, what)
		}
		return k, v, nil
	}
	switch {
	case p == "remote_address":
		return descriptor.RateLimitAction{RemoteAddress: &descriptor.RemoteAddressAction{}}, nil
	case strings.HasPrefix(p, "generic_key=") && !hasArg:
		v := strings.TrimPrefix(p, "generic_key=")
		if v == "" {
			return descriptor.RateLimitAction{}, fmt.Errorf("%q: empty value", p)
		}
		return descriptor.RateLimitAction{GenericKey: &descriptor.GenericKeyAction{DescriptorValue: v}}, nil
	case kind == "generic_key" && hasArg:
		k, v, err := eq("generic_key:KEY=VALUE")
		if err != nil {
			return descriptor.RateLimitAction{}, err
		}
		return descriptor.RateLimitAction{GenericKey: &descriptor.GenericKeyAction{DescriptorKey: k, DescriptorValue: v}}, nil
	case kind == "request_headers" && hasArg:
		skip := strings.HasSuffix(rest, "?")
		rest = strings.TrimSuffix(rest, "?")
		h, k, err := eq("request_headers:HEADER=KEY[?]")
		if err != nil {
			return descriptor.RateLimitAction{}, err
		}
		return descriptor.RateLimitAction{RequestHeaders: &descriptor.RequestHeadersAction{HeaderName: h, DescriptorKey: k, SkipIfAbsent: skip}}, nil
	case (kind == "header_value_match" || kind == "!header_value_match") && hasArg:
		desc, matchers, ok := strings.Cut(rest, "@")
		if !ok || desc == "" {
			return descriptor.RateLimitAction{}, fmt.Errorf("%q: want header_value_match:[KEY=]VALUE@MATCHERS", p)
		}
		m := &descriptor.HeaderValueMatchAction{DescriptorValue: desc}
		if k, v, ok := strings.Cut(desc, "="); ok {
			m.DescriptorKey, m.DescriptorValue = k, v
		}
		if kind[0] == '!' {
			f := false
			m.ExpectMatch = &f
		}
		for _, ms := range strings.Split(matchers, "&") {
			hm, err := parseMatcher(ms)
			if err != nil {
				return descriptor.RateLimitAction{}, fmt.Errorf("%q: %w", p, err)
			}
			m.Headers = append(m.Headers, hm)
		}
		return descriptor.RateLimitAction{HeaderValueMatch: m}, nil
	}
	return descriptor.RateLimitAction{}, fmt.Errorf("%q: want generic_key=VALUE, generic_key:KEY=VALUE, request_headers:HEADER=KEY[?], remote_address or [!]header_value_match:[KEY=]VALUE@MATCHERS", p)
}

func parseMatcher(s string) (descriptor.HeaderMatcher, error) {
	var m descriptor.HeaderMatcher
	if strings.HasPrefix(s, "!") {
		m.InvertMatch = true
		s = s[1:]
	}
	i := strings.IndexAny(s, "=^$*~")
	if i < 0 {
		m.Name = s
	} else {
		op := s[i]
		name, val := s[:i], s[i+1:]
		if op != '=' {
			if !strings.HasPrefix(val, "=") {
				return m, fmt.Errorf("matcher %q: want %c= after the header name", s, op)
			}
			val = val[1:]
		}
		m.Name = name
		switch op {
		case '=':
			m.StringMatch = &descriptor.StringMatcher{Exact: &val}
		case '^':
			m.StringMatch = &descriptor.StringMatcher{Prefix: &val}
		case '$':
			m.StringMatch = &descriptor.StringMatcher{Suffix: &val}
		case '*':
			m.StringMatch = &descriptor.StringMatcher{Contains: &val}
		case '~':
			m.StringMatch = &descriptor.StringMatcher{SafeRegex: &descriptor.RegexMatcher{Regex: val}}
		}
	}
	if m.Name == "" {
		return m, fmt.Errorf("matcher %q: empty header name", s)
	}
	if _, err := m.Compile("matcher"); err != nil {
		return m, err
	}
	return m, nil
}

// ParseLocalDescriptor parses the one-line form of a local rate limit
// descriptor, the syntax of `rlbench lab --local-descriptor`:
//
//	KEY=VALUE[,KEY=VALUE...]:MAX_TOKENS[:TOKENS_PER_FILL[:FILL_INTERVAL]]
//
// e.g. "user=A:10:10:1s" (user A: 10 tokens, 10 more every second) or
// "user=:5" (a wildcard: every user 5 tokens, 1 more every second). An
// empty VALUE is a wildcard; TOKENS_PER_FILL defaults to 1 and
// FILL_INTERVAL to 1s.
func ParseLocalDescriptor(s string) (LocalDescriptor, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return LocalDescriptor{}, fmt.Errorf("local descriptor %q: want KEY=VALUE[,KEY=VALUE...]:MAX_TOKENS[:TOKENS_PER_FILL[:FILL_INTERVAL]]", s)
	}
	var d LocalDescriptor
	for _, kv := range strings.Split(parts[0], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return d, fmt.Errorf("local descriptor %q: entry %q: want KEY=VALUE (an empty VALUE is a wildcard)", s, kv)
		}
		d.Entries = append(d.Entries, descriptor.DescriptorEntry{Key: k, Value: v})
	}
	num := func(what, v string) (uint32, error) {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("local descriptor %q: %s %q: want a count > 0", s, what, v)
		}
		return uint32(n), nil
	}
	var err error
	if d.TokenBucket.MaxTokens, err = num("max_tokens", parts[1]); err != nil {
		return d, err
	}
	d.TokenBucket.TokensPerFill, d.TokenBucket.FillInterval = 1, Duration(time.Second)
	if len(parts) > 2 {
		if d.TokenBucket.TokensPerFill, err = num("tokens_per_fill", parts[2]); err != nil {
			return d, err
		}
	}
	if len(parts) > 3 {
		fill, err := time.ParseDuration(parts[3])
		if d.TokenBucket.FillInterval = Duration(fill); err != nil || d.TokenBucket.FillInterval < MinFillInterval {
			return d, fmt.Errorf("local descriptor %q: fill_interval %q: want a duration >= %v", s, parts[3], MinFillInterval)
		}
	}
	return d, nil
}

// FormatActions is the inverse of ParseActions for actions it can express.
func FormatActions(as []descriptor.RateLimitAction) string {
	var parts []string
	for _, a := range as {
		switch {
		case a.GenericKey != nil && a.GenericKey.DescriptorKey == "":
			parts = append(parts, "generic_key="+a.GenericKey.DescriptorValue)
		case a.GenericKey != nil:
			parts = append(parts, "generic_key:"+a.GenericKey.DescriptorKey+"="+a.GenericKey.DescriptorValue)
		case a.RequestHeaders != nil:
			p := "request_headers:" + a.RequestHeaders.HeaderName + "=" + a.RequestHeaders.DescriptorKey
			if a.RequestHeaders.SkipIfAbsent {
				p += "?"
			}
			parts = append(parts, p)
		case a.RemoteAddress != nil:
			parts = append(parts, "remote_address")
		case a.HeaderValueMatch != nil:
			m := a.HeaderValueMatch
			p := "header_value_match:"
			if m.ExpectMatch != nil && !*m.ExpectMatch {
				p = "!" + p
			}
			if m.DescriptorKey != "" {
				p += m.DescriptorKey + "="
			}
			p += m.DescriptorValue + "@"
			var ms []string
			for _, h := range m.Headers {
				ms = append(ms, formatMatcher(h))
			}
			parts = append(parts, p+strings.Join(ms, "&"))
		}
	}
	return strings.Join(parts, ",")
}

func formatMatcher(h descriptor.HeaderMatcher) string {
	s := h.Name
	if sm := h.StringMatch; sm != nil {
		switch {
		case sm.Exact != nil:
			s += "=" + *sm.Exact
		case sm.Prefix != nil:
			s += "^=" + *sm.Prefix
		case sm.Suffix != nil:
			s += "$=" + *sm.Suffix
		case sm.Contains != nil:
			s += "*=" + *sm.Contains
		case sm.SafeRegex != nil:
			s += "~=" + sm.SafeRegex.Regex
		}
	}
	if h.InvertMatch {
		s = "!" + s
	}
	return s
}
