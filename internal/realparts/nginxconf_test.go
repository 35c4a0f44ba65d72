package realparts

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/testfix"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/nginx/*.conf golden files")

func intp(v int) *int { return &v }

// fullConfig uses every option.
func fullConfig() NginxConfig {
	return NginxConfig{
		WorkerProcesses: 2, WorkerPriority: -5, WorkerConnections: 256, TimerResolution: 10 * time.Millisecond, ErrorLogLevel: "warn",
		Zones: []LimitReqZone{
			{Name: "per_ip", Rate: NginxRate{Count: 10}},
			{Name: "tenant", Key: "$http_x_tenant", Size: "64k", Rate: NginxRate{Count: 30, PerMinute: true}},
			{Name: "global", Key: "$binary_remote_addr$uri", Size: "2m", Rate: NginxRate{Count: 2}},
		},
		LimitReq: []LimitReq{
			{Zone: "per_ip", Burst: 5, NoDelay: true},
			{Zone: "tenant", Burst: 10, Delay: 4},
			{Zone: "global"},
		},
		LimitReqStatus: 429, LimitReqLogLevel: "notice", LimitReqDryRun: true,
		Upstreams: []NginxServer{
			{Addr: "127.0.0.1:8081"},
			{Addr: "127.0.0.1:8082", MaxFails: intp(0), FailTimeout: 1500 * time.Millisecond, Weight: 2},
			{Addr: "[::1]:8083", MaxFails: intp(3), FailTimeout: 10 * time.Second, Backup: true},
		},
		UpstreamKeepalive: 16,
		NextUpstream:      []string{"error", "timeout", "http_500", "http_429", "non_idempotent"},
		NextUpstreamTries: 3, NextUpstreamTimeout: 2 * time.Second,
		ConnectTimeout: 250 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, SendTimeout: time.Second,
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "nginx", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rendered config differs from %s (go test -update rewrites it):\n%s", path, got)
	}
}

func TestRenderNginxConfGolden(t *testing.T) {
	l := NginxLayout{Prefix: "/srv/rlbench-nginx", Port: 18080, StatusPort: 18081, User: "root",
		Without: map[string]bool{"http_uwsgi_module": true}}
	got, err := RenderNginxConf(fullConfig(), l)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "full.conf", got)
	again, _ := RenderNginxConf(fullConfig(), l)
	if !bytes.Equal(got, again) {
		t.Error("two renders of one config differ")
	}
	minimal, err := RenderNginxConf(NginxConfig{Upstreams: []NginxServer{{Addr: "127.0.0.1:9"}}},
		NginxLayout{Prefix: "/p/", Port: 1, StatusPort: 2})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "minimal.conf", minimal)
	// Nothing outside the prefix, and none of the compiled-in paths of Debian's build.
	for _, conf := range [][]byte{got, minimal} {
		var paths []string
		for _, line := range strings.Split(string(conf), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "/") && f != "/" {
					paths = append(paths, strings.TrimSuffix(f, ";"))
				}
			}
		}
		if len(paths) < 9 { // pid, lock, error log, 2 access logs, temp paths
			t.Errorf("found %d paths in the config: %v", len(paths), paths)
		}
		for _, p := range paths {
			if !strings.HasPrefix(p, "/srv/rlbench-nginx/") && !strings.HasPrefix(p, "/p/") && p != NginxStubStatusPath {
				t.Errorf("path %s outside the prefix", p)
			}
		}
		for _, bad := range []string{"/run/nginx.pid", "/var/log/nginx", "/var/lib/nginx", "listen 80", "0.0.0.0"} {
			if bytes.Contains(conf, []byte(bad)) {
				t.Errorf("config contains %q", bad)
			}
		}
	}
}

// TestRenderMatchesFixtureConfigs renders the settings of the real captures in shared/fixtures/nginx and checks
// that every limit_req, limit_req_zone, proxy_next_upstream and upstream server line of the capture's nginx.conf
// is in the rendered config, so a plan that states a capture's settings gets the nginx that produced it.
func TestRenderMatchesFixtureConfigs(t *testing.T) {
	rl := LimitReqZone{Name: "rl", Rate: NginxRate{Count: 10}}
	for _, tc := range []struct {
		dir string
		cfg NginxConfig
	}{
		{"a-rate10-noburst", NginxConfig{Zones: []LimitReqZone{rl}, LimitReq: []LimitReq{{Zone: "rl"}}}},
		{"b-burst5-delay", NginxConfig{Zones: []LimitReqZone{rl}, LimitReq: []LimitReq{{Zone: "rl", Burst: 5}}}},
		{"c-burst5-nodelay", NginxConfig{Zones: []LimitReqZone{rl}, LimitReq: []LimitReq{{Zone: "rl", Burst: 5, NoDelay: true}}}},
		{"d-burst10-delay4", NginxConfig{Zones: []LimitReqZone{rl}, LimitReq: []LimitReq{{Zone: "rl", Burst: 10, Delay: 4}}}},
		{"e-status429", NginxConfig{Zones: []LimitReqZone{rl}, LimitReq: []LimitReq{{Zone: "rl"}}, LimitReqStatus: 429}},
		{"f-next-upstream-500", NginxConfig{NextUpstream: []string{"error", "timeout", "http_500"}, NextUpstreamTries: 3}},
		{"f2-next-upstream-500-maxfails0", NginxConfig{NextUpstream: []string{"error", "timeout", "http_500"}, NextUpstreamTries: 3}},
		{"f3-next-upstream-timeout-error", NginxConfig{NextUpstreamTries: 3, ReadTimeout: 300 * time.Millisecond}},
		{"h-dry-run", NginxConfig{Zones: []LimitReqZone{rl}, LimitReq: []LimitReq{{Zone: "rl", Burst: 5}}, LimitReqDryRun: true}},
		{"k-two-zones", NginxConfig{Zones: []LimitReqZone{rl, {Name: "global", Key: "$host", Rate: NginxRate{Count: 2}}},
			LimitReq: []LimitReq{{Zone: "rl", Burst: 5, NoDelay: true}, {Zone: "global", Burst: 2, NoDelay: true}}}},
		{"m-rate1rpm-truncation", NginxConfig{Zones: []LimitReqZone{{Name: "rl", Rate: NginxRate{Count: 1, PerMinute: true}}},
			LimitReq: []LimitReq{{Zone: "rl"}}}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			fixture := string(testfix.ReadFixture(t, "nginx", tc.dir+"/nginx.conf"))
			var servers []string
			for _, m := range regexp.MustCompile(`(?m)^\s*server (127\.0\.0\.1:\d+)( max_fails=0)?;$`).FindAllStringSubmatch(fixture, -1) {
				s := NginxServer{Addr: m[1]}
				if m[2] != "" {
					s.MaxFails = intp(0)
				}
				tc.cfg.Upstreams = append(tc.cfg.Upstreams, s)
				servers = append(servers, m[0])
			}
			got, err := RenderNginxConf(tc.cfg, NginxLayout{Prefix: "/srv/nginx-prefix", Port: 1, StatusPort: 2})
			if err != nil {
				t.Fatal(err)
			}
			want := regexp.MustCompile(`(?m)^\s*(limit_req\S*|proxy_next_upstream\S*|proxy_read_timeout) .*;$`).FindAllString(fixture, -1)
			if len(want) == 0 && len(servers) == 0 {
				t.Fatal("no directive found in the capture's config")
			}
			for _, line := range append(want, servers...) {
				if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(strings.TrimSpace(line)) + `$`).Match(got) {
					t.Errorf("capture line %q is not in the rendered config:\n%s", strings.TrimSpace(line), got)
				}
			}
		})
	}
}

func TestNginxConfigValidate(t *testing.T) {
	ok := NginxConfig{Upstreams: []NginxServer{{Addr: "127.0.0.1:80"}}}
	for _, tc := range []struct {
		name string
		mod  func(*NginxConfig)
		want string
	}{
		{"no upstream", func(c *NginxConfig) { c.Upstreams = nil }, "NginxConfig.Upstreams: at least one server"},
		{"upstream name", func(c *NginxConfig) { c.Upstreams[0].Addr = "localhost:80" }, `Upstreams[0].Addr "localhost:80": the host must be an IP literal`},
		{"upstream port", func(c *NginxConfig) { c.Upstreams[0].Addr = "127.0.0.1:0" }, "bad port"},
		{"max_fails", func(c *NginxConfig) { c.Upstreams[0].MaxFails = intp(-1) }, "Upstreams[0].MaxFails -1"},
		{"fail_timeout", func(c *NginxConfig) { c.Upstreams[0].FailTimeout = time.Microsecond }, "Upstreams[0].FailTimeout 1µs: want a positive whole number of milliseconds"},
		{"zone name", func(c *NginxConfig) { c.Zones = []LimitReqZone{{Name: "a b", Rate: NginxRate{Count: 1}}} }, `Zones[0].Name "a b"`},
		{"zone twice", func(c *NginxConfig) {
			c.Zones = []LimitReqZone{{Name: "z", Rate: NginxRate{Count: 1}}, {Name: "z", Rate: NginxRate{Count: 1}}}
		}, `Zones[1].Name "z": declared twice`},
		{"zone key", func(c *NginxConfig) { c.Zones = []LimitReqZone{{Name: "z", Key: "$a;b", Rate: NginxRate{Count: 1}}} }, `Zones[0].Key "$a;b"`},
		{"zone size", func(c *NginxConfig) { c.Zones = []LimitReqZone{{Name: "z", Size: "1g", Rate: NginxRate{Count: 1}}} }, `Zones[0].Size "1g"`},
		{"zone rate", func(c *NginxConfig) { c.Zones = []LimitReqZone{{Name: "z"}} }, "Zones[0].Rate: the count must be positive"},
		{"limit zone", func(c *NginxConfig) { c.LimitReq = []LimitReq{{Zone: "nope"}} }, `LimitReq[0].Zone "nope": no such zone`},
		{"limit twice", func(c *NginxConfig) {
			c.Zones = []LimitReqZone{{Name: "z", Rate: NginxRate{Count: 1}}}
			c.LimitReq = []LimitReq{{Zone: "z"}, {Zone: "z"}}
		}, `LimitReq[1].Zone "z": used twice`},
		{"nodelay and delay", func(c *NginxConfig) {
			c.Zones = []LimitReqZone{{Name: "z", Rate: NginxRate{Count: 1}}}
			c.LimitReq = []LimitReq{{Zone: "z", Burst: 5, NoDelay: true, Delay: 2}}
		}, "LimitReq[0]: nodelay and delay are exclusive"},
		{"burst", func(c *NginxConfig) {
			c.Zones = []LimitReqZone{{Name: "z", Rate: NginxRate{Count: 1}}}
			c.LimitReq = []LimitReq{{Zone: "z", Burst: -1}}
		}, "LimitReq[0].Burst -1"},
		{"status", func(c *NginxConfig) { c.LimitReqStatus = 200 }, "LimitReqStatus 200: want 400..599"},
		{"limit log level", func(c *NginxConfig) { c.LimitReqLogLevel = "debug" }, `LimitReqLogLevel "debug"`},
		{"error log level", func(c *NginxConfig) { c.ErrorLogLevel = "loud" }, `ErrorLogLevel "loud"`},
		{"next upstream", func(c *NginxConfig) { c.NextUpstream = []string{"http_501"} }, `NextUpstream[0] "http_501"`},
		{"next upstream off", func(c *NginxConfig) { c.NextUpstream = []string{"error", "off"} }, "NextUpstream: off must stand alone"},
		{"tries", func(c *NginxConfig) { c.NextUpstreamTries = -1 }, "NextUpstreamTries -1"},
		{"read timeout", func(c *NginxConfig) { c.ReadTimeout = -time.Second }, "ReadTimeout -1s"},
		{"workers", func(c *NginxConfig) { c.WorkerProcesses = -2 }, "WorkerProcesses -2"},
		{"priority", func(c *NginxConfig) { c.WorkerPriority = -21 }, "WorkerPriority -21: want -20..20"},
		{"keepalive", func(c *NginxConfig) { c.UpstreamKeepalive = -1 }, "UpstreamKeepalive -1: want 0..1024 (worker_connections)"},
		{"keepalive over connections", func(c *NginxConfig) { c.WorkerConnections, c.UpstreamKeepalive = 64, 65 }, "UpstreamKeepalive 65: want 0..64 (worker_connections)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			c.Upstreams = append([]NginxServer(nil), ok.Upstreams...)
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if _, rerr := RenderNginxConf(c, NginxLayout{Prefix: "/p", Port: 1, StatusPort: 2}); rerr == nil {
				t.Fatal("RenderNginxConf accepted an invalid config")
			}
		})
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []NginxLayout{
		{Prefix: "relative", Port: 1, StatusPort: 2},
		{Prefix: "/with space", Port: 1, StatusPort: 2},
		{Prefix: "/p", Port: 1, StatusPort: 1},
		{Prefix: "/p", Port: 0, StatusPort: 2},
		{Prefix: "/p", Port: 1, StatusPort: 2, User: "a;b"},
	} {
		if _, err := RenderNginxConf(ok, l); err == nil || !strings.Contains(err.Error(), "NginxLayout") {
			t.Errorf("layout %+v: error %v", l, err)
		}
	}
}

func TestNginxRate(t *testing.T) {
	for s, want := range map[string]int64{"10r/s": 10000, "1r/s": 1000, "30r/m": 500, "1r/m": 16, "100r/m": 1666} {
		r, err := ParseNginxRate(s)
		if err != nil || r.MilliPerSecond() != want || r.String() != s {
			t.Errorf("%s: %+v %v milli %d, want %d", s, r, err, r.MilliPerSecond(), want)
		}
	}
	for _, s := range []string{"", "10", "0r/s", "-1r/s", "1.5r/s", "+3r/s", "10r/h", "r/s"} {
		if _, err := ParseNginxRate(s); err == nil {
			t.Errorf("ParseNginxRate(%q): no error", s)
		}
	}
}

func TestParseNginxV(t *testing.T) {
	b, err := ParseNginxV(testfix.ReadFixture(t, "nginx", "a-rate10-noburst/nginx-V.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != "1.22.1" || !b.AtLeast(NginxMinVersion) || b.AtLeast("1.22.2") || !b.AtLeast("1.22.1") || !b.AtLeast("0.9.99") ||
		!b.Has("http_stub_status_module") || b.Without("http_limit_req_module") || b.check() != nil {
		t.Errorf("build %+v check %v", b, b.check())
	}
	if b.Has("http_nonexistent_module") {
		t.Error("Has: a module configure did not name")
	}
	old, err := ParseNginxV([]byte("nginx version: nginx/1.18.0 (Ubuntu)\nconfigure arguments: --with-http_stub_status_module\n"))
	if err != nil || old.Version != "1.18.0" || old.check() == nil || !strings.Contains(old.check().Error(), "older than 1.19.5") {
		t.Errorf("old build %+v %v", old, old.check())
	}
	lean, _ := ParseNginxV([]byte("nginx version: nginx/1.25.3\nconfigure arguments: --without-http_limit_req_module\n"))
	if lean.check() == nil {
		t.Error("a build without limit_req passed the check")
	}
	noStatus, _ := ParseNginxV([]byte("nginx version: nginx/1.25.3\nconfigure arguments: --prefix=/x\n"))
	if e := noStatus.check(); e == nil || !strings.Contains(e.Error(), "stub_status") {
		t.Errorf("a build without stub_status: %v", e)
	}
	if _, err := ParseNginxV([]byte("command not found")); err == nil {
		t.Error("no version line: no error")
	}
}

func TestFindNginxEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvNginxBin, filepath.Join(dir, "absent"))
	if _, err := FindNginx(); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("absent binary: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvNginxBin, plain)
	if _, err := FindNginx(); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("non-executable: %v", err)
	}
	exe := filepath.Join(dir, "nginx")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvNginxBin, exe)
	if p, err := FindNginx(); err != nil || p != exe {
		t.Errorf("FindNginx = %q, %v", p, err)
	}
}

func TestParseStat(t *testing.T) {
	st, err := parseStat([]byte("4242 (nginx: a) b)) S 17 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10"))
	if err != nil || st.comm != "nginx: a) b)" || st.ppid != 17 || st.start != 987654 {
		t.Errorf("%+v %v", st, err)
	}
	for _, bad := range []string{"", "1 nginx S 1", "1 (x) S 1 2 3"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
	me, err := readStat(os.Getpid())
	if err != nil || me.ppid != os.Getppid() || !(procIdentity{pid: os.Getpid(), start: me.start}).alive() ||
		(procIdentity{pid: os.Getpid(), start: me.start + 1}).alive() {
		t.Errorf("own stat %+v %v", me, err)
	}
}

// TestGroupOwnership checks the listener check of an nginx process group with this test process, which holds a
// listener, and a helper child that holds none.
func TestGroupOwnership(t *testing.T) {
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	l, err := reusePortListen("127.0.0.1:" + strconv.Itoa(ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	idle := startHelper(t, "idle")
	if err := VerifyNginxListeners([]int{idle.Process.Pid, os.Getpid()}, ports[0]); err != nil {
		t.Errorf("listener held by a group member: %v", err)
	}
	if err := VerifyNginxListeners([]int{idle.Process.Pid}, ports[0]); !errors.Is(err, ErrNotOwned) {
		t.Errorf("listener held outside the group: %v", err)
	}
	// A second listener on the port (SO_REUSEPORT) held by another process is foreign.
	startHelper(t, "reuseport", "PORT="+strconv.Itoa(ports[0]))
	o, err := groupOwnership([]int{os.Getpid()}, ports[0])
	if err != nil || o.Owned != 1 || o.Foreign != 1 {
		t.Errorf("ownership %+v %v, want 1 owned, 1 foreign", o, err)
	}
	if err := VerifyNginxListeners([]int{os.Getpid()}, ports[0]); !errors.Is(err, ErrNotOwned) {
		t.Errorf("foreign listener: %v", err)
	}
}
