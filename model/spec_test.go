package model

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeExamples(t *testing.T) {
	for _, src := range []string{
		`{"kind":"token_bucket","capacity":100,"rate_per_sec":100}`,
		`{"kind":"nginx_limit_req","rate":"10r/s","burst":5,"nodelay":true}`,
		`{"kind":"fixed_window","limit":5,"unit":"hour","align":"epoch"}`,
		`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":10,"tokens_per_fill":10,"fill_interval":"1s"}`,
		`{"kind":"sliding_log","limit":100,"window":"1m","count":"all"}`,
		`{"kind":"sliding_counter","limit":100,"window":"1m","count":"admitted"}`,
		`{"kind":"nginx_limit_req","zones":[{"name":"rl","rate":"10r/s","burst":5,"nodelay":true},{"name":"global","rate":"2r/s","burst":2,"key":"$host"}],"dry_run":true}`,
		`{"kind":"envoy_local","envoy_version":"1.34.1","max_tokens":10,"fill_interval":"1s","descriptors":[{"entries":[{"key":"user","value":""}],"max_tokens":2,"fill_interval":"1s"}],"max_dynamic_descriptors":5,"always_consume_default_token_bucket":false,"scope":"process"}`,
		`{"kind":"envoy_local","envoy_version":"1.30","max_tokens":10,"fill_interval":"100ms","timer_start":"2026-12-01T09:00:00Z"}`,
		`{"kind":"gcra","rate_per_period":10,"period":"1s","burst":20}`,
	} {
		s, err := Decode([]byte(src))
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if _, err := New(s); err != nil {
			t.Errorf("%s: New: %v", src, err)
		}
		// round trip
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Decode(b)
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Errorf("round trip of %s: %s, %v", src, b, err)
		}
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ src, field, contains string }{
		{`{"kind":"fixed_window","limit":5,"unit":"hour","admited":3}`, "admited", "unknown field"},
		{`{"kind":"token_bucket","capacity":1,"rate_per_sec":1,"burst":5}`, "burst", "does not apply to kind \"token_bucket\""},
		{`{"capacity":1}`, "kind", "missing"},
		{`{"kind":"leaky"}`, "kind", "unknown kind"},
		{`{"kind":"token_bucket","capacity":0,"rate_per_sec":1}`, "capacity", "positive"},
		{`{"kind":"token_bucket","capacity":1,"rate_per_sec":-1}`, "rate_per_sec", ">= 0"},
		{`{"kind":"fixed_window","limit":5,"unit":"fortnight"}`, "unit", "invalid rate limit unit"},
		{`{"kind":"fixed_window","limit":5}`, "unit", "missing"},
		{`{"kind":"fixed_window","limit":5,"unit":"hour","align":"sliding"}`, "align", "first_hit"},
		{`{"kind":"nginx_limit_req","rate":"10r/h"}`, "rate", "invalid rate"},
		{`{"kind":"nginx_limit_req","rate":"10r/s","nodelay":true,"delay":3}`, "delay", "not both"},
		{`{"kind":"nginx_limit_req","zones":[{"name":"a","rate":"1r/s"},{"name":"b","rate":"x"}]}`, "zones[1].rate", "invalid rate"},
		{`{"kind":"nginx_limit_req","zones":[{"name":"a","rate":"1r/s"},{"name":"a","rate":"1r/s"}]}`, "zones[1].name", "duplicate"},
		{`{"kind":"nginx_limit_req","burst":3}`, "rate", "missing"},
		{`{"kind":"envoy_local","max_tokens":1,"fill_interval":"1s"}`, "envoy_version", "missing"},
		{`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":1,"fill_interval":"10ms"}`, "fill_interval", ">= 50ms"},
		{`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":1,"fill_interval":"1s","scope":"thread"}`, "scope", "want"},
		{`{"kind":"envoy_local","envoy_version":"1.27","max_tokens":1,"fill_interval":"1s","always_consume_default_token_bucket":false}`, "always_consume_default_token_bucket", "1.28"},
		{`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":1,"fill_interval":"1s","descriptors":[{"entries":[{"key":"u","value":""}],"max_tokens":1,"fill_interval":"1s"}]}`, "descriptors[0].entries", "1.34"},
		{`{"kind":"envoy_local","envoy_version":"1.30","max_tokens":1,"fill_interval":"1s","descriptors":[{"entries":[{"key":"u","value":"a"}],"max_tokens":1,"fill_interval":"1500ms"}]}`, "descriptors[0].fill_interval", "multiple"},
		{`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":1,"fill_interval":"1s","descriptors":[{"entries":[{"key":"u","value":"a"}],"max_tokens":1,"fill_interval":"1s"},{"entries":[{"key":"u","value":"a"}],"max_tokens":2,"fill_interval":"1s"}]}`, "descriptors[1].entries", "duplicate"},
		{`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":1,"fill_interval":"1s","filter_enforced_percent":120}`, "filter_enforced_percent", "0..100"},
		{`{"kind":"envoy_local","envoy_version":"1.31","max_tokens":1,"fill_interval":"1s","timer_start":"2026-12-01T09:00:00Z"}`, "timer_start", "continuously"},
		{`{"kind":"sliding_log","limit":3,"window":"1s"}`, "count", "admitted"},
		{`{"kind":"sliding_log","limit":3,"window":"fast","count":"all"}`, "", "duration"},
		{`{"kind":"gcra","rate_per_period":0,"period":"1s","burst":1}`, "rate_per_period", "must be 1.."},
		{`{"kind":"gcra","rate_per_period":1,"burst":1}`, "period", "positive duration"},
		{`{"kind":"gcra","rate_per_period":1,"period":"1s"}`, "burst", "denies every request"},
		{`{"kind":"gcra","rate_per_period":1,"period":"1s","burst":1,"capacity":3}`, "capacity", "does not apply to kind \"gcra\""},
		{`{"kind":"gcra","rate_per_period":1,"period":"1000h","burst":2000000000}`, "burst", "too large"},
	} {
		_, err := Decode([]byte(tc.src))
		if err == nil {
			t.Errorf("%s: no error", tc.src)
			continue
		}
		if !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: %v, want it to mention %q", tc.src, err, tc.contains)
		}
		if tc.field == "" {
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a FieldError on %q", tc.src, err, tc.field)
		}
	}
}

// Strict decoding holds when a Spec sits inside a larger document decoded
// by someone else (scenario.json).
func TestSpecStrictInsideDocument(t *testing.T) {
	var doc struct {
		Limiter Spec `json:"limiter"`
	}
	err := json.Unmarshal([]byte(`{"limiter":{"kind":"fixed_window","limit":2,"unit":"minute","burst":1}}`), &doc)
	if err == nil || !strings.Contains(err.Error(), "burst") {
		t.Fatalf("got %v, want an error on burst", err)
	}
}

func TestModelSpecFillsDefaults(t *testing.T) {
	m := MustNew(Spec{Kind: KindEnvoyLocal, EnvoyVersion: "1.31", MaxTokens: 3, FillInterval: Duration(time.Second)})
	s := m.Spec()
	if *s.TokensPerFill != 1 || !*s.AlwaysConsumeDefault || *s.MaxDynamicDescriptors != 20 || *s.FilterEnforcedPercent != 100 || s.Scope != ScopeProcess {
		t.Errorf("defaults not filled: %+v", s)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"kind":"token_bucket","capacity":100,"rate_per_sec":100}`,
		`{"kind":"nginx_limit_req","rate":"10r/s","burst":5,"nodelay":true}`,
		`{"kind":"fixed_window","limit":5,"unit":"hour","align":"first_hit"}`,
		`{"kind":"envoy_local","envoy_version":"1.34","max_tokens":10,"fill_interval":"1s","descriptors":[{"entries":[{"key":"u","value":""}],"max_tokens":1,"fill_interval":"2s"}]}`,
		`{"kind":"sliding_counter","limit":3,"window":"250ms","count":"all"}`,
		`{"kind":"nginx_limit_req","zones":[{"name":"a","rate":"1r/m","delay":2,"burst":4}]}`,
		`{"kind":"gcra","rate_per_period":7,"period":"1ns","burst":2147483647}`,
		`{"kind":`, `[]`, `null`, `{"kind":"fixed_window","limit":1e30,"unit":"day"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data)
		if err != nil {
			return
		}
		m, err := New(s)
		if err != nil {
			t.Fatalf("Decode accepted %s but New refused it: %v", data, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Decode(b)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip changed the spec: %+v vs %+v", s, s2)
		}
		// the model runs, its clock going back too
		Simulate(m, []Request{{At: t0, Key: "k"}, {At: t0 + 1, Key: "k"}, {At: math.MinInt64, Key: "k"}, {At: math.MaxInt64, Key: "k"}}, 0)
		PeakBound(m, math.MaxInt64)
	})
}
