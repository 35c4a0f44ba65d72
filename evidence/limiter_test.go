package evidence

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/model"
)

// TestDecodeScenarioIsStrict: a misspelt field is an error naming the field
// and its line; limiters and rules are validated with their index and line;
// every scenario.json of the previous release decodes.
func TestDecodeScenarioIsStrict(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\n\"expect\":{\n\"admited\":5}}", `line 3: unknown field "admited"`},
		{"{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\"expect\":{},\n\"limiters\":[{\"name\":\"l\",\"stage\":\"local\",\"key\":\"target\",\n\"model\":{\"kind\":\"token_bucket\",\"capacity\":1,\"rate_per_sec\":1,\"burst\":3}}]}",
			"line 3: limiter spec: burst: does not apply to kind"},
		{"{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\"expect\":{},\"limiters\":[\n{\"name\":\"l\",\"stage\":\"middle\",\"key\":\"target\",\"model\":{\"kind\":\"token_bucket\",\"capacity\":1}}]}",
			`line 2: limiters[0].stage: want "local" or "global", got "middle"`},
		{"{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\"expect\":{},\"limiters\":[\n{\"name\":\"l\",\"stage\":\"local\",\"key\":\"target\"}]}",
			"limiters[0].model, rls: give exactly one"},
		{"{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\"expect\":{},\n\"classify\":[{\"status\":503,\"class\":\"limited\"}]}",
			`line 2: classify[0]: class "limited"`},
		{`{"schema":"rlbench.scenario/v1","name":"x","expect":{}} {}`, "trailing data"},
	}
	for _, c := range cases {
		_, err := DecodeScenario([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v, want %q", c.doc, err, c.want)
		}
	}
	paths, _ := filepath.Glob(filepath.Join("..", "analyze", "testdata", "v1-release", "*", "*", "*", ScenarioFile))
	if len(paths) < 5 {
		t.Fatalf("%d previous-release scenario.json files", len(paths))
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeScenario(b); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// Load names the file.
	dir := t.TempDir()
	writeFile(t, Dir(dir).Scenario(), "{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\n\"expect\":{\"admited\":5}}")
	s := LoadScenario(context.Background(), dir, false)
	if s.HasScenario || len(s.Problems) == 0 || !strings.Contains(s.Problems[0].Msg, Dir(dir).Scenario()+`: line 2: unknown field "admited"`) {
		t.Fatalf("problems %+v", s.Problems)
	}
}

// TestLegacyLimitsTranslate: the previous release's limits become limiters:
// the lab's local bucket an Envoy 1.30 (timer) bucket per target from its
// start, a fixed window one shared RLS counter that a restart of the lab
// RLS, or of Redis under the real RLS, resets.
func TestLegacyLimitsTranslate(t *testing.T) {
	s := Scenario{Limits: []LimitSpec{
		{Kind: LimitTokenBucket, Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: 3600e9, StartNs: 1796116558000000000},
		{Kind: LimitFixedWindow, Limit: 5, Unit: "HOUR", WindowStart: WindowAligned},
		{Kind: "leaky"},
	}}
	ls := s.EffectiveLimiters([]string{"proxy-a", "proxy-b"}, false)
	if len(ls) != 2 {
		t.Fatalf("%d limiters", len(ls))
	}
	tb, fw := ls[0], ls[1]
	if tb.Stage != StageLocal || tb.Key != KeyTarget || tb.Model.Kind != model.KindEnvoyLocal || tb.Model.EnvoyVersion != "1.30" ||
		tb.Model.TimerStart != "2026-12-01T09:15:58Z" || tb.Model.MaxTokens != 5 || *tb.Model.TokensPerFill != 5 {
		t.Fatalf("token bucket %+v %+v", tb, tb.Model)
	}
	if fw.Stage != StageGlobal || fw.Key != KeyShared || fw.Model.Kind != model.KindFixedWindow || fw.Model.Align != model.AlignEpoch ||
		fw.Model.Limit != 5 || strings.Join(fw.Resets, ",") != FaultTargetRLS {
		t.Fatalf("fixed window %+v %+v", fw, fw.Model)
	}
	for _, l := range ls {
		if err := l.Validate(); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
	if real := s.EffectiveLimiters(nil, true); strings.Join(real[1].Resets, ",") != FaultTargetRedis {
		t.Fatalf("real RLS resets %v", real[1].Resets)
	}
	s.Limiters = []Limiter{{Name: "mine"}}
	if ls := s.EffectiveLimiters(nil, false); len(ls) != 1 || ls[0].Name != "mine" {
		t.Fatalf("declared limiters win: %+v", ls)
	}
}

func TestParseRateHeaders(t *testing.T) {
	get := func(m map[string]string) func(string) (string, bool) {
		return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
	}
	cases := []struct {
		h    map[string]string
		want RateHeaders
		ok   bool
	}{
		{map[string]string{"x-ratelimit-limit": "5, 5;w=3600", "x-ratelimit-remaining": "4", "x-ratelimit-reset": "120"},
			RateHeaders{Limit: 5, Window: 3600, Remaining: 4, Reset: 120, Prefix: "x-ratelimit-"}, true},
		{map[string]string{"x-ratelimit-limit": "5", "x-ratelimit-remaining": "0, 3"},
			RateHeaders{Limit: 5, Remaining: -1, Reset: -1, Prefix: "x-ratelimit-"}, true},
		{map[string]string{"x-ratelimit-limit": "5, 10, 10;w=60"}, RateHeaders{Limit: -1, Window: 60, Remaining: -1, Reset: -1, Prefix: "x-ratelimit-"}, true},
		{map[string]string{"ratelimit-limit": "5", "ratelimit-remaining": "x", "ratelimit-reset": "9"},
			RateHeaders{Limit: 5, Remaining: -1, Reset: 9, Prefix: "ratelimit-"}, true},
		{map[string]string{"server": "envoy"}, RateHeaders{}, false},
	}
	for _, c := range cases {
		got, ok := ParseRateHeaders(get(c.h))
		if ok != c.ok || got != c.want {
			t.Errorf("%v: %+v %v, want %+v", c.h, got, ok, c.want)
		}
	}
}

// TestClassifierRules: rules come first, per target, on status, header and
// body; a receipt turns an unknown-origin 4xx/5xx into the backend's.
func TestClassifierRules(t *testing.T) {
	c, err := NewClassifier([]ClassRule{
		{Targets: []string{"nginx"}, Status: Range{Min: 503, Max: 503}, Body: "<center>nginx</center>", Class: "local_429"},
		{Status: Range{Min: 429, Max: 429}, Header: "Server", Value: "HAProxy", Class: "local_429"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		r    Request
		want Class
	}{
		{Request{Target: "nginx", Code: 503, Body: "<html><center>nginx</center>"}, ClassLocal429},
		{Request{Target: "other", Code: 503, Body: "<html><center>nginx</center>"}, ClassOther5xx},
		{Request{Target: "x", Code: 429, Headers: map[string]string{"server": "haproxy 2.8"}}, ClassLocal429},
		{Request{Target: "x", Code: 429}, ClassOther4xx},
		{Request{Target: "x", Code: 200}, ClassAdmitted},
	}
	for _, k := range cases {
		if got := c.ClassifyRequest(&k.r); got != k.want {
			t.Errorf("%+v: %s, want %s", k.r, got, k.want)
		}
	}
	if ClassOther4xx.Received(429) != ClassBackend429 || ClassOther5xx.Received(502) != ClassBackend5xx ||
		ClassOther4xx.Received(404) != ClassBackend4xx || ClassLocal429.Received(429) != ClassLocal429 {
		t.Fatal("Received")
	}
	for _, bad := range []ClassRule{{Status: Range{Min: 503, Max: 503}, Class: "no_response"}, {Status: Range{Min: 5, Max: 5}, Class: "local_429"},
		{Status: Range{Min: 503, Max: 503}, Value: "x", Class: "local_429"}} {
		if _, err := NewClassifier([]ClassRule{bad}); err == nil {
			t.Errorf("rule %+v accepted", bad)
		}
	}
	// Load applies the scenario's rules and the receipts.
	dir := t.TempDir()
	writeFile(t, Dir(dir).Scenario(), `{"schema":"rlbench.scenario/v1","name":"x","expect":{},"classify":[{"status":503,"body":"nginx","class":"local_429"}]}`)
	writeFile(t, Dir(dir).Requests(), lines(t, []Request{{ID: "a", Code: 503, Body: "nginx", BytesIn: 5}, {ID: "b", Code: 404}, {ID: "c", Code: 404},
		{ID: "d", Code: 200, Conn: "127.0.0.1:5000/1", URL: "http://h/p", Headers: map[string]string{"x-ratelimit-remaining": "3"}}}))
	writeFile(t, Dir(dir).Receipts(), `{"id":"b","recv_ns":1}`+"\n")
	s := LoadScenario(context.Background(), dir, false)
	got := []Class{}
	for i := 0; i < s.Requests.Len(); i++ {
		got = append(got, s.Requests.Class[i])
	}
	if len(got) != 4 || got[0] != ClassLocal429 || got[1] != ClassBackend4xx || got[2] != ClassOther4xx || got[3] != ClassAdmitted {
		t.Fatalf("classes %v", got)
	}
	if s.Requests.ConnOf(3) != "127.0.0.1:5000/1" || s.Requests.ConnOf(0) != "" || s.Requests.URLOf(3) != "http://h/p" ||
		len(s.Requests.Rate) != 1 || s.Requests.Rate[0].Request != 3 || s.Requests.Rate[0].Remaining != 3 {
		t.Fatalf("conn %q url %q rate %+v", s.Requests.ConnOf(3), s.Requests.URLOf(3), s.Requests.Rate)
	}
}
