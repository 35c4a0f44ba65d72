package report

import (
	"strconv"
	"strings"
)

// IDsGot is a check's Got for a count of requests with a sample of their
// IDs: "3 (a,b,c)", "25 (a,…,t,…)" when the sample holds fewer than n, "0"
// or "n" alone without a sample.
func IDsGot(n int, ids []string) string {
	if n == 0 || len(ids) == 0 {
		return strconv.Itoa(n)
	}
	s := strconv.Itoa(n) + " (" + strings.Join(ids, ",")
	if n > len(ids) {
		s += ",…"
	}
	return s + ")"
}

// VerdictsGot is IDsGot of n requests the limiter model judged, with the
// IDs of the sample vs.
func VerdictsGot(n int, vs []RequestVerdict) string {
	if n == 0 {
		return "0"
	}
	ids := make([]string, 0, len(vs))
	for _, v := range vs {
		ids = append(ids, v.ID)
	}
	return IDsGot(n, ids)
}
