package rls

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestParseRLConfig(t *testing.T) {
	es, err := ParseRLConfig(openFixture(t, "rls_local_3fb7025_rlconfig.txt"), "rlconfig")
	if err != nil {
		t.Fatal(err)
	}
	eqInt(t, "entries", len(es), 4)
	m := map[string]RLConfigEntry{}
	for _, e := range es {
		m[e.Key] = e
	}
	if e := m["rlbench.shadow_x"]; !e.ShadowMode || e.RequestsPerUnit != 1 || e.Unit != "MINUTE" {
		t.Errorf("shadow_x = %+v", e)
	}
	if e := m["rlbench.free_all"]; e.Unit != "UNKNOWN" || e.RequestsPerUnit != 0 {
		t.Errorf("free_all = %+v", e)
	}
	if _, err := ParseRLConfig(strings.NewReader("a.b: unit=MINUTE requests_per_unit=1\nnonsense\n"), "x"); err == nil || !strings.HasPrefix(err.Error(), "x:2:") {
		t.Errorf("err = %v", err)
	}
}

// The config file of the rls_local runs agrees with the limits the RLS
// logged as loaded.
func TestConfigYAMLMatchesLoadedLimits(t *testing.T) {
	b, err := io.ReadAll(openFixture(t, "rls_local_config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Domain      string `json:"domain"`
		Descriptors []struct {
			Key       string `json:"key"`
			Value     string `json:"value"`
			Shadow    bool   `json:"shadow_mode"`
			RateLimit struct {
				Unit      string `json:"unit"`
				RPU       uint32 `json:"requests_per_unit"`
				Unlimited bool   `json:"unlimited"`
			} `json:"rate_limit"`
		} `json:"descriptors"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	l := parseLogFixture(t, "rls_local_3fb7025_text_debug.log")
	defs := map[string]LimitDef{}
	for _, d := range l.LimitDefs {
		defs[d.Key] = d
	}
	eqInt(t, "descriptors", len(cfg.Descriptors), 4)
	for _, d := range cfg.Descriptors {
		key := cfg.Domain + "." + d.Key
		if d.Value != "" {
			key += "_" + d.Value
		}
		ld, ok := defs[key]
		if !ok {
			t.Errorf("%s not loaded", key)
			continue
		}
		if ld.Unlimited != d.RateLimit.Unlimited || ld.ShadowMode != d.Shadow || ld.RequestsPerUnit != d.RateLimit.RPU ||
			(!d.RateLimit.Unlimited && ld.Unit != strings.ToUpper(d.RateLimit.Unit)) {
			t.Errorf("%s: yaml %+v, log %+v", key, d, ld)
		}
	}
}

// Redis counters equal the highest `current` the log shows for each key.
func TestRedisKeysMatchLogCurrents(t *testing.T) {
	for logRel, keysRel := range map[string]string{
		"rls_local_3fb7025_text_debug.log": "rls_local_3fb7025_redis_keys_run1.txt",
		"rls_local_3fb7025_json_debug.log": "rls_local_3fb7025_redis_keys_run2.txt",
	} {
		snaps, err := ParseRedisKeys(openFixture(t, keysRel), keysRel)
		if err != nil {
			t.Fatal(err)
		}
		if len(snaps) != 1 {
			t.Fatalf("%s snapshots = %d", keysRel, len(snaps))
		}
		maxCur := map[string]int64{}
		for _, d := range parseLogFixture(t, logRel).Decisions {
			if d.HasCurrent && int64(d.Current) > maxCur[d.Key] {
				maxCur[d.Key] = int64(d.Current)
			}
		}
		eqInt(t, keysRel+" keys", len(snaps[0].Keys), len(maxCur))
		for _, k := range snaps[0].Keys {
			if maxCur[k.Key] != k.Value {
				t.Errorf("%s %s: redis %d, log max current %d", keysRel, k.Key, k.Value, maxCur[k.Key])
			}
			if ws, _ := WindowStart(k.Key); ws != k.WindowStart || ws == 0 {
				t.Errorf("%s window %d", k.Key, k.WindowStart)
			}
		}
	}

	snaps, err := ParseRedisKeys(openFixture(t, "outage-fast/redis_keys.tsv"), "redis_keys.tsv")
	if err != nil {
		t.Fatal(err)
	}
	eqInt(t, "tsv snapshots", len(snaps), 7)
	c := snaps[2]
	if c.Label != "after_c" || c.UnixS != 1796031750 || len(c.Keys) != 2 || c.Keys[0].Value != 20 || c.Keys[0].PTTLMs != 3896945 || c.Keys[0].WindowStart != 1796029200 {
		t.Errorf("after_c = %+v", c)
	}
	if e := snaps[6]; e.Label != "e_after_rls_restart" || e.Keys[0].Value != 6 {
		t.Errorf("last snapshot = %+v", e)
	}
	if _, err := ParseRedisKeys(strings.NewReader("k 1 ttl=3\nk x ttl=3\n"), "keys"); err == nil || !strings.HasPrefix(err.Error(), "keys:2:") {
		t.Errorf("err = %v", err)
	}
}

// gRPC client output printed by a binary with one-space prototext.
func TestResponseTextGRPCClient(t *testing.T) {
	sc := bufio.NewScanner(openFixture(t, "rls_local_3fb7025_grpc_client.txt"))
	var resps []*Response
	errs := 0
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "response: "); ok {
			r, err := ParseResponseText(rest)
			if err != nil {
				t.Fatal(err)
			}
			resps = append(resps, r)
		} else if strings.HasPrefix(line, "request error: ") {
			errs++
			eqStr(t, "error class", ClassifyCallError(line), ClassService)
		}
	}
	eqInt(t, "responses", len(resps), 2)
	eqInt(t, "errors", errs, 1)
	r := resps[1]
	if r.OverallCode != "OVER_LIMIT" || len(r.Statuses) != 2 || r.Statuses[0].Code != "OVER_LIMIT" || r.Statuses[0].DurationUntilResetNs != 18e9 ||
		r.Statuses[1].LimitRemaining != 1 || r.Statuses[1].Unit != "SECOND" || r.Statuses[1].Limit != 2 {
		t.Errorf("response = %+v", r)
	}
	// Two-space rendering with headers, as in the JSON run's log.
	r2, err := ParseResponseText(`overall_code:OK  statuses:{code:OK  current_limit:{requests_per_unit:5  unit:HOUR}  limit_remaining:3  duration_until_reset:{seconds:1034}}  response_headers_to_add:{key:"RateLimit-Limit"  value:"5"}`)
	if err != nil || len(r2.HeadersToAdd) != 1 || r2.HeadersToAdd[0].Value != "5" || r2.Statuses[0].LimitRemaining != 3 {
		t.Errorf("r2 = %+v, %v", r2, err)
	}
	for _, bad := range []string{"overall_code:OK statuses:{code:OK", "statuses:{code:OK}}", "overall_code:"} {
		if _, err := ParseResponseText(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// /json bodies (protojson, camelCase) against their HTTP codes: 429 iff OVER_LIMIT.
func TestResponseJSONEndpoint(t *testing.T) {
	sc := bufio.NewScanner(openFixture(t, "rls_local_3fb7025_json_endpoint_http.txt"))
	code := ""
	codes := map[string]int{}
	bodies := 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "HTTP "):
			code = strings.TrimPrefix(line, "HTTP ")
			codes[code]++
		case strings.HasPrefix(line, "{"):
			r, err := ParseResponseJSON([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			bodies++
			if (r.OverallCode == "OVER_LIMIT") != (code == "429") {
				t.Errorf("HTTP %s with overall %s", code, r.OverallCode)
			}
			if len(r.Statuses) == 1 && !r.Statuses[0].HasLimit && r.Statuses[0].LimitRemaining == 4294967295 && !r.Statuses[0].Unlimited() {
				t.Error("unlimited not recognised")
			}
		}
	}
	eqInt(t, "HTTP 200", codes["200"], 10)
	eqInt(t, "HTTP 429", codes["429"], 3)
	eqInt(t, "HTTP 400", codes["400"], 2)
	eqInt(t, "JSON bodies", bodies, 13)

	b, err := io.ReadAll(openFixture(t, "gh_ratelimit_README_json_endpoint_response.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseResponseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.OverallCode != "OVER_LIMIT" || len(r.Statuses) != 2 || r.Statuses[1].LimitRemaining != 1 || r.Statuses[0].Unit != "MINUTE" {
		t.Errorf("README response = %+v", r)
	}

	// http_summary.tsv: label, "code seconds", body.
	sc = bufio.NewScanner(openFixture(t, "json-prometheus/http_summary.tsv"))
	rows, json429, badReq := 0, 0, 0
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) != 3 {
			t.Fatalf("row %q", sc.Text())
		}
		rows++
		if f[2] == "Bad Request" {
			badReq++
			continue
		}
		r, err := ParseResponseJSON([]byte(f[2]))
		if err != nil {
			t.Fatalf("%s: %v", f[0], err)
		}
		if strings.HasPrefix(f[1], "429 ") {
			json429++
			if r.OverallCode != "OVER_LIMIT" || len(r.HeadersToAdd) != 3 || r.HeadersToAdd[1].Value != "0" {
				t.Errorf("%s = %+v", f[0], r)
			}
		}
	}
	eqInt(t, "summary rows", rows, 11)
	eqInt(t, "summary 429", json429, 3)
	eqInt(t, "summary bad request", badReq, 3)
}
