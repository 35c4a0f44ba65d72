package realparts

import (
	"strings"
	"testing"
	"time"
)

// TestRenderHAProxyConf: the stick table, the track, the deny rule and the log-format are rendered from the
// config; the defaults are filled in.
func TestRenderHAProxyConf(t *testing.T) {
	b, err := RenderHAProxyConf(HAProxyConfig{Limit: 10, Period: time.Second, Servers: []string{"127.0.0.1:9001", "[::1]:9002"}}, 18080)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	for _, want := range []string{
		"\n    nbthread 1\n",
		"\n    bind 127.0.0.1:18080\n",
		"\n    log stdout format raw local0 info\n",
		"\n    stick-table type ip size 100k expire 2000ms store http_req_rate(1000ms)\n",
		"\n    http-request capture req.hdr(X-Rlbench-Id) len 128\n",
		"\n    http-request track-sc0 src\n",
		"\n    http-request set-var(txn.rl_rate) sc_http_req_rate(0)\n",
		"\n    http-request deny deny_status 429 hdr X-Rlbench-Limiter haproxy-stick-table if { sc_http_req_rate(0) gt 10 }\n",
		"\n    server s0 127.0.0.1:9001\n    server s1 [::1]:9002\n",
		`\"decide_us\":\"%[var(txn.rl_us)]\"`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	// the capture and the track come before the deny (the denied request is logged with its ID and counted)
	if i, j, k := strings.Index(conf, "capture req.hdr"), strings.Index(conf, "track-sc0"), strings.Index(conf, "http-request deny"); !(i < j && j < k) {
		t.Errorf("rule order capture %d, track %d, deny %d", i, j, k)
	}
	for _, k := range HAProxyLogFields {
		if !strings.Contains(conf, `\"`+k+`\":`) {
			t.Errorf("log-format lacks %s", k)
		}
	}

	b, err = RenderHAProxyConf(HAProxyConfig{Limit: 3, Period: 250 * time.Millisecond, KeyType: HAProxyKeyString, Header: "X-Tenant",
		Size: "1m", Expire: 5 * time.Second, DenyStatus: 503, Servers: []string{"127.0.0.1:1"}, Timeout: 2 * time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	conf = string(b)
	for _, want := range []string{
		"stick-table type string len 64 size 1m expire 5000ms store http_req_rate(250ms)",
		"http-request track-sc0 req.hdr(x-tenant)",
		"http-request set-var(txn.rl_key) req.hdr(x-tenant)",
		"deny deny_status 503 hdr X-Rlbench-Limiter haproxy-stick-table if { sc_http_req_rate(0) gt 3 }",
		"timeout server 2000ms",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
}

// TestHAProxyConfigValidate: each bad field is an error naming it; several are joined.
func TestHAProxyConfigValidate(t *testing.T) {
	ok := HAProxyConfig{Limit: 1, Period: time.Millisecond, Servers: []string{"127.0.0.1:1"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		mod  func(*HAProxyConfig)
		want string
	}{
		{"limit", func(c *HAProxyConfig) { c.Limit = 0 }, "HAProxyConfig.Limit 0"},
		{"period", func(c *HAProxyConfig) { c.Period = 1500 * time.Microsecond }, "HAProxyConfig.Period 1.5ms"},
		{"key type", func(c *HAProxyConfig) { c.KeyType = "integer" }, `HAProxyConfig.KeyType "integer"`},
		{"header with ip", func(c *HAProxyConfig) { c.Header = "X-A" }, `HAProxyConfig.Header "X-A": only with KeyType "string"`},
		{"bad header", func(c *HAProxyConfig) { c.KeyType, c.Header = HAProxyKeyString, "a)b" }, `HAProxyConfig.Header "a)b"`},
		{"size", func(c *HAProxyConfig) { c.Size = "1 m" }, `HAProxyConfig.Size "1 m"`},
		{"expire", func(c *HAProxyConfig) { c.Period, c.Expire = time.Second, time.Second }, "HAProxyConfig.Expire 1s"},
		{"deny status", func(c *HAProxyConfig) { c.DenyStatus = 600 }, "HAProxyConfig.DenyStatus 600"},
		{"no servers", func(c *HAProxyConfig) { c.Servers = nil }, "HAProxyConfig.Servers: at least one"},
		{"server name", func(c *HAProxyConfig) { c.Servers = []string{"localhost:80"} }, `HAProxyConfig.Servers[0] "localhost:80": want IP:port`},
		{"server port", func(c *HAProxyConfig) { c.Servers = []string{"127.0.0.1:0"} }, "bad port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.mod(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if _, err := RenderHAProxyConf(cfg, 1); err == nil {
				t.Fatal("RenderHAProxyConf rendered an invalid config")
			}
		})
	}
	if _, err := RenderHAProxyConf(ok, 0); err == nil || !strings.Contains(err.Error(), "port 0") {
		t.Errorf("port 0: %v", err)
	}
}

func TestParseHAProxyVersion(t *testing.T) {
	for _, c := range []struct {
		in      string
		m, n, p int
	}{
		{"HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/\nStatus: ...", 2, 6, 12},
		{"HA-Proxy version 1.8.19 2019/02/11", 1, 8, 19},
		{"HAProxy version 3.1-dev4 2024", 3, 1, 0},
	} {
		m, n, p, err := ParseHAProxyVersion([]byte(c.in))
		if err != nil || m != c.m || n != c.n || p != c.p {
			t.Errorf("%q: %d.%d.%d %v", c.in, m, n, p, err)
		}
	}
	if _, _, _, err := ParseHAProxyVersion([]byte("nginx version: nginx/1.22.1")); err == nil {
		t.Error("no version line: no error")
	}
}

// TestFindHAProxyOverride: $RLBENCH_HAPROXY_BIN is taken as is when executable; otherwise the error says
// ErrNotInstalled.
func TestFindHAProxyOverride(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvHAProxyBin, dir+"/nope")
	if _, err := FindHAProxy(); err == nil || !strings.Contains(err.Error(), EnvHAProxyBin) {
		t.Errorf("missing override: %v", err)
	}
	fakeBin(t, dir, "haproxy", "")
	t.Setenv(EnvHAProxyBin, dir+"/haproxy")
	if p, err := FindHAProxy(); err != nil || p != dir+"/haproxy" {
		t.Errorf("override: %q %v", p, err)
	}
}
