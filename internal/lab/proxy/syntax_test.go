package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
)

func TestParseActions(t *testing.T) {
	for in, want := range map[string]string{
		"generic_key=lab":                                  `[{"generic_key":{"descriptor_value":"lab"}}]`,
		"generic_key:tenant=lab,remote_address":            `[{"generic_key":{"descriptor_key":"tenant","descriptor_value":"lab"}},{"remote_address":{}}]`,
		"request_headers:x-user=user?":                     `[{"request_headers":{"header_name":"x-user","descriptor_key":"user","skip_if_absent":true}}]`,
		"header_value_match:premium@x-plan=gold&!x-trial":  `[{"header_value_match":{"descriptor_value":"premium","headers":[{"name":"x-plan","string_match":{"exact":"gold"}},{"name":"x-trial","invert_match":true}]}}]`,
		"!header_value_match:anon=yes@authorization":       `[{"header_value_match":{"descriptor_key":"anon","descriptor_value":"yes","expect_match":false,"headers":[{"name":"authorization"}]}}]`,
		"header_value_match:api@:path^=/api/&x-v~=v[0-9]+": `[{"header_value_match":{"descriptor_value":"api","headers":[{"name":":path","string_match":{"prefix":"/api/"}},{"name":"x-v","string_match":{"safe_regex":{"regex":"v[0-9]+"}}}]}}]`,
	} {
		as, err := ParseActions(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		b, _ := json.Marshal(as)
		if string(b) != want {
			t.Errorf("%q:\n got %s\nwant %s", in, b, want)
		}
		again, err := ParseActions(FormatActions(as))
		b2, _ := json.Marshal(again)
		if err != nil || string(b2) != string(b) {
			t.Errorf("%q: round trip via %q: %s %v", in, FormatActions(as), b2, err)
		}
	}
	for _, bad := range []string{"", "generic_key=", "request_headers:x", "header_value_match:v", "header_value_match:v@", "bogus",
		"header_value_match:v@x~=(", "generic_key:=v", "header_value_match:v@x^y"} {
		if _, err := ParseActions(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseLocalDescriptor(t *testing.T) {
	d, err := ParseLocalDescriptor("user=A,plan=:10:5:2s")
	if err != nil || len(d.Entries) != 2 || d.Entries[1].Value != "" || d.TokenBucket != (TokenBucket{MaxTokens: 10, TokensPerFill: 5, FillInterval: Duration(2 * time.Second)}) {
		t.Fatalf("%+v %v", d, err)
	}
	d, err = ParseLocalDescriptor("user=A:3")
	if err != nil || d.TokenBucket != (TokenBucket{MaxTokens: 3, TokensPerFill: 1, FillInterval: Duration(time.Second)}) {
		t.Fatalf("defaults %+v %v", d, err)
	}
	for _, bad := range []string{"user=A", "user:3", "=A:3", "user=A:0", "user=A:3:x", "user=A:3:1:10ms", "user=A:3:1:1s:9"} {
		if _, err := ParseLocalDescriptor(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseActions(f *testing.F) {
	for _, s := range []string{"generic_key=a", "request_headers:x=y?,remote_address", "!header_value_match:k=v@a=b&!c^=d", "header_value_match:v@x~=[a-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		as, err := ParseActions(s)
		if err != nil {
			return
		}
		if _, err := descriptor.CompileRateLimit("fuzz", as); err != nil {
			t.Fatalf("%q parsed into invalid actions: %v", s, err)
		}
		if !strings.Contains(s, "\x00") {
			if _, err := ParseActions(FormatActions(as)); err != nil {
				t.Fatalf("%q: its format %q does not parse: %v", s, FormatActions(as), err)
			}
		}
	})
}

func FuzzParseLocalDescriptor(f *testing.F) {
	for _, s := range []string{"user=A:1", "a=,b=c:5:5:1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseLocalDescriptor(s)
		if err != nil {
			return
		}
		l := LocalRateLimit{MaxTokens: 1, FillInterval: Duration(time.Second), Descriptors: []LocalDescriptor{d}}
		if err := l.Validate(); err != nil {
			t.Fatalf("%q parsed into an invalid descriptor: %v", s, err)
		}
	})
}
