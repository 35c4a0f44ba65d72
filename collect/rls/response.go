package rls

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// Response is a decoded envoy.service.ratelimit.v3.RateLimitResponse as an RLS
// logs it (prototext via String(), in `returning normal response: ...` and
// `resp:...` lines) or returns it over /json and gRPC (protojson).
type Response struct {
	// OverallCode is "OK", "OVER_LIMIT" or "UNKNOWN".
	OverallCode string `json:"overall_code"`
	// Statuses holds one DescriptorStatus per request descriptor, in order.
	Statuses []Status `json:"statuses,omitempty"`
	// HeadersToAdd are response_headers_to_add (RateLimit-Limit, -Remaining,
	// -Reset), present only with LIMIT_RESPONSE_HEADERS_ENABLED=true.
	HeadersToAdd []Header `json:"headers_to_add,omitempty"`
}

// Header is one key/value of response_headers_to_add.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Status is one RateLimitResponse.DescriptorStatus.
type Status struct {
	// Code is "OK", "OVER_LIMIT" or "UNKNOWN".
	Code string `json:"code"`
	// HasLimit is true when current_limit was present; it is absent for
	// descriptors that matched no rule, unknown domains and unlimited rules.
	HasLimit bool `json:"has_limit"`
	// Limit and Unit are current_limit.requests_per_unit and its unit name
	// (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH, YEAR).
	Limit uint32 `json:"limit,omitempty"`
	Unit  string `json:"unit,omitempty"`
	// LimitRemaining is limit_remaining; proto3 omits it when 0, so 0 means
	// "absent or zero". An unlimited rule reports 4294967295 (math.MaxUint32).
	LimitRemaining uint32 `json:"limit_remaining,omitempty"`
	// DurationUntilResetNs is duration_until_reset in ns: the end of the
	// epoch-aligned window by the RLS clock (unit_s - now%unit_s).
	DurationUntilResetNs int64 `json:"duration_until_reset_ns,omitempty"`
}

// Unlimited reports whether s is the status of an `unlimited: true` rule:
// OK without current_limit and with limit_remaining = MaxUint32
// (service/ratelimit.go in envoyproxy/ratelimit).
func (s Status) Unlimited() bool { return !s.HasLimit && s.LimitRemaining == 4294967295 }

// ptNode is one field of a prototext message: a scalar or a nested message.
type ptNode struct {
	name   string
	scalar string
	msg    []ptNode
	isMsg  bool
}

// ParseResponseText decodes the prototext rendering of a RateLimitResponse as
// protobuf-go's String() prints it, e.g.
// `overall_code:OVER_LIMIT  statuses:{code:OVER_LIMIT  current_limit:{requests_per_unit:3  unit:MINUTE}  duration_until_reset:{seconds:4}}`.
// It tokenises on whitespace, so the one-or-two-space randomisation of
// protobuf-go does not matter. Unknown fields are ignored.
func ParseResponseText(s string) (*Response, error) {
	toks, err := ptTokens(s)
	if err != nil {
		return nil, err
	}
	pos := 0
	fields, err := ptParse(toks, &pos, 0)
	if err != nil {
		return nil, err
	}
	r := &Response{}
	for _, f := range fields {
		switch f.name {
		case "overall_code":
			r.OverallCode = f.scalar
		case "statuses":
			st, err := statusFromNodes(f.msg)
			if err != nil {
				return nil, err
			}
			r.Statuses = append(r.Statuses, st)
		case "response_headers_to_add":
			var h Header
			for _, g := range f.msg {
				switch g.name {
				case "key":
					h.Key = g.scalar
				case "value":
					h.Value = g.scalar
				}
			}
			r.HeadersToAdd = append(r.HeadersToAdd, h)
		}
	}
	if r.OverallCode == "" {
		// proto3 omits the zero enum value UNKNOWN.
		r.OverallCode = "UNKNOWN"
	}
	return r, nil
}

func statusFromNodes(ns []ptNode) (Status, error) {
	st := Status{}
	for _, g := range ns {
		switch g.name {
		case "code":
			st.Code = g.scalar
		case "current_limit":
			st.HasLimit = true
			for _, h := range g.msg {
				switch h.name {
				case "requests_per_unit":
					v, err := strconv.ParseUint(h.scalar, 10, 32)
					if err != nil {
						return st, fmt.Errorf("requests_per_unit %q: %w", h.scalar, err)
					}
					st.Limit = uint32(v)
				case "unit":
					st.Unit = h.scalar
				}
			}
		case "limit_remaining":
			v, err := strconv.ParseUint(g.scalar, 10, 32)
			if err != nil {
				return st, fmt.Errorf("limit_remaining %q: %w", g.scalar, err)
			}
			st.LimitRemaining = uint32(v)
		case "duration_until_reset":
			var ns int64
			for _, h := range g.msg {
				v, err := strconv.ParseInt(h.scalar, 10, 64)
				if err != nil {
					return st, fmt.Errorf("duration_until_reset.%s %q: %w", h.name, h.scalar, err)
				}
				switch h.name {
				case "seconds":
					ns += v * int64(time.Second)
				case "nanos":
					ns += v
				}
			}
			st.DurationUntilResetNs = ns
		}
	}
	if st.Code == "" {
		st.Code = "UNKNOWN"
	}
	return st, nil
}

func ptTokens(s string) ([]string, error) {
	var toks []string
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '{' || c == '}' || c == ':':
			toks = append(toks, s[i:i+1])
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("prototext: unterminated string at offset %d", i)
			}
			q := s[i : j+1]
			if c == '\'' {
				q = `"` + strings.ReplaceAll(q[1:len(q)-1], `"`, `\"`) + `"`
			}
			u, err := strconv.Unquote(q)
			if err != nil {
				u = q[1 : len(q)-1]
			}
			// Mark strings so that they are never taken for punctuation.
			toks = append(toks, "\x00"+u)
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n{}:\"'", rune(s[j])) {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks, nil
}

// maxPTDepth bounds the nesting of a prototext message; a RateLimitResponse
// nests three levels (statuses, current_limit), so anything deeper is not
// one, and the bound keeps a crafted log line from exhausting the stack.
const maxPTDepth = 32

// ptParse parses fields until the end of toks (depth 0) or the '}' that
// closes a message nested depth levels deep.
func ptParse(toks []string, pos *int, depth int) ([]ptNode, error) {
	if depth > maxPTDepth {
		return nil, fmt.Errorf("prototext: nested deeper than %d levels", maxPTDepth)
	}
	nested := depth > 0
	var out []ptNode
	for *pos < len(toks) {
		t := toks[*pos]
		if t == "}" {
			if !nested {
				return nil, errors.New("prototext: unexpected '}'")
			}
			*pos++
			return out, nil
		}
		if t == "{" || t == ":" || strings.HasPrefix(t, "\x00") {
			return nil, fmt.Errorf("prototext: expected field name, got %q", strings.TrimPrefix(t, "\x00"))
		}
		name := t
		*pos++
		if *pos < len(toks) && toks[*pos] == ":" {
			*pos++
		}
		if *pos >= len(toks) {
			return nil, fmt.Errorf("prototext: field %s has no value", name)
		}
		if toks[*pos] == "{" {
			*pos++
			sub, err := ptParse(toks, pos, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, ptNode{name: name, msg: sub, isMsg: true})
			continue
		}
		v := toks[*pos]
		if v == "}" || v == ":" {
			return nil, fmt.Errorf("prototext: field %s has no value", name)
		}
		*pos++
		out = append(out, ptNode{name: name, scalar: strings.TrimPrefix(v, "\x00")})
	}
	if nested {
		return nil, errors.New("prototext: missing '}'")
	}
	return out, nil
}

// ParseResponseJSON decodes a protojson RateLimitResponse as returned by the
// RLS /json endpoint (camelCase names) or written by a gRPC client with
// original proto names (snake_case); both spellings are accepted, as
// protojson.Unmarshal does. Unknown fields are ignored.
func ParseResponseJSON(b []byte) (*Response, error) {
	var pr rlsv3.RateLimitResponse
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &pr); err != nil {
		return nil, err
	}
	r := &Response{OverallCode: pr.GetOverallCode().String()}
	for _, s := range pr.GetStatuses() {
		st := Status{Code: s.GetCode().String(), LimitRemaining: s.GetLimitRemaining()}
		if cl := s.GetCurrentLimit(); cl != nil {
			st.HasLimit = true
			st.Limit = cl.GetRequestsPerUnit()
			st.Unit = cl.GetUnit().String()
		}
		if d := s.GetDurationUntilReset(); d != nil {
			st.DurationUntilResetNs = d.GetSeconds()*int64(time.Second) + int64(d.GetNanos())
		}
		r.Statuses = append(r.Statuses, st)
	}
	for _, h := range pr.GetResponseHeadersToAdd() {
		r.HeadersToAdd = append(r.HeadersToAdd, Header{Key: h.GetKey(), Value: h.GetValue()})
	}
	return r, nil
}
