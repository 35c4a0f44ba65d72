package evidence

import (
	"strconv"
	"strings"
)

// Rate-limit response headers, as captured (lower-case): Envoy's
// enable_x_ratelimit_headers DRAFT_VERSION_03
// (source/extensions/filters/http/common/ratelimit_headers.h) and
// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED (RateLimit-Limit,
// -Remaining, -Reset, src/settings/settings.go).
var rateHeaderNames = [...]string{
	"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
	"ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
}

const numRateHeaders = len(rateHeaderNames)

func rateHeaderIndex(name []byte) int {
	if len(name) < len("ratelimit-reset") || (name[0] != 'x' && name[0] != 'r') {
		return -1
	}
	for k, n := range rateHeaderNames {
		if string(name) == n {
			return k
		}
	}
	return -1
}

// RateHeaders are the rate-limit headers of one response (x-ratelimit-*, or
// else RateLimit-*), parsed. A value that is absent, not a number, or holds
// several values (two filters both added the header) is -1.
type RateHeaders struct {
	// Request is the index of the request in Requests.
	Request int32
	// Limit is the first number of the limit header ("5, 5;w=3600" is 5;
	// "5, 10, 10;w=60", two filters' headers joined, is -1).
	Limit int64
	// Window is the limit's quota policy window, ";w=<seconds>" (0: none).
	Window int64
	// Remaining is the remaining header.
	Remaining int64
	// Reset is the reset header, seconds.
	Reset int64
	// Prefix is "x-ratelimit-" or "ratelimit-": the family read.
	Prefix string
}

// ParseRateHeaders reads the rate-limit headers through get (a lower-case
// header name to its captured value); ok is false when none is present.
func ParseRateHeaders(get func(name string) (string, bool)) (RateHeaders, bool) {
	for fam := 0; fam < 2; fam++ {
		names := rateHeaderNames[fam*3 : fam*3+3]
		lim, okL := get(names[0])
		rem, okR := get(names[1])
		rst, okS := get(names[2])
		if !okL && !okR && !okS {
			continue
		}
		h := RateHeaders{Limit: -1, Remaining: single(rem, okR), Reset: single(rst, okS), Prefix: strings.TrimSuffix(names[0], "limit")}
		if okL {
			first, policies, _ := strings.Cut(lim, ",")
			h.Limit = number(first)
			for _, p := range strings.Split(policies, ",") {
				if strings.TrimSpace(p) != "" && !strings.Contains(p, ";") {
					h.Limit = -1 // a second bare limit: two filters' headers joined
				}
				for _, kv := range strings.Split(p, ";")[1:] {
					if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && (k == "w" || k == "window") && h.Window == 0 {
						h.Window = max(number(v), 0)
					}
				}
			}
		}
		return h, true
	}
	return RateHeaders{}, false
}

func single(v string, ok bool) int64 {
	if !ok || strings.Contains(v, ",") {
		return -1
	}
	return number(v)
}

func number(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
