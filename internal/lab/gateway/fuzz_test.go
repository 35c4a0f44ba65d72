package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzParseKey: an accepted key names a kind, a header key a non-empty
// canonical header name, and its String parses back to the same key.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"client", "route", "header:x-user", "header:X-Api-Key", "header:", "header:a b", "ip", "header:x:y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err != nil {
			return
		}
		switch k.Kind {
		case KeyClient, KeyRoute:
			if k.Header != "" {
				t.Fatalf("%q: %s key with header %q", s, k.Kind, k.Header)
			}
		case KeyHeader:
			if k.Header == "" || k.Header != http.CanonicalHeaderKey(k.Header) {
				t.Fatalf("%q: header %q", s, k.Header)
			}
		default:
			t.Fatalf("%q: kind %q", s, k.Kind)
		}
		again, err := ParseKey(k.String())
		if err != nil || again != k {
			t.Fatalf("%q: String %q parses to %+v, %v", s, k.String(), again, err)
		}
	})
}

// FuzzParseAdmitWhen: an accepted admit_when never panics on any answer
// type, decides an answer of its own type and refuses the others.
func FuzzParseAdmitWhen(f *testing.F) {
	for _, s := range []string{"", "nonzero", "1", "-1", "0", "OK", "true", " OK", "9223372036854775808"} {
		f.Add(s, int64(1), "OK")
	}
	f.Fuzz(func(t *testing.T, s string, n int64, str string) {
		rule, err := parseAdmitWhen(s)
		if err != nil {
			return
		}
		_, ierr := rule.decide(n)
		_, serr := rule.decide(str)
		if (ierr == nil) == (serr == nil) {
			t.Fatalf("admit_when %q: integer answer %v, string answer %v: want exactly one of the two types read", s, ierr, serr)
		}
		for _, v := range []any{nil, []any{n}} {
			if _, err := rule.decide(v); err == nil {
				t.Fatalf("admit_when %q: answer %#v decided", s, v)
			}
		}
	})
}

// FuzzCheckTemplate: an accepted template has no brace left once its
// {key} and {now} are expanded with brace-free values.
func FuzzCheckTemplate(f *testing.F) {
	for _, s := range []string{"{key}", "rl:{key}:{now}", "{{key}}", "{now", "{now}}", "{user}", "}", "plain", "{key}{now}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckTemplate(s) != nil {
			return
		}
		if out := expand([]string{s}, "k", "1"); strings.ContainsAny(out[0], "{}") {
			t.Fatalf("accepted %q expands to %q, which keeps a brace", s, out[0])
		}
	})
}
