package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/testfix"
)

type syncBuf = testfix.SyncBuffer

func startBackend(t *testing.T) *backend.Backend {
	t.Helper()
	b, err := backend.Start(t.Context(), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func startProxy(t testing.TB, cfg Config) *Proxy {
	t.Helper()
	p, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type result struct {
	code   int
	body   string
	header http.Header
}

func do(t *testing.T, method, url string, hdr map[string]string) result {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return result{resp.StatusCode, string(b), resp.Header}
}

func get(t *testing.T, url string) string {
	t.Helper()
	r := do(t, "GET", url, nil)
	if r.code != 200 {
		t.Fatalf("GET %s: %d %s", url, r.code, r.body)
	}
	return r.body
}

var textLine = regexp.MustCompile(`^([^\s:][^:]*?): (.*)$`)

// textStats parses Envoy /stats text into name -> raw value.
func textStats(t *testing.T, p *Proxy) map[string]string {
	t.Helper()
	body := get(t, p.AdminURL()+"/stats")
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(body))
	var prev string
	for sc.Scan() {
		m := textLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("/stats line %q does not parse", sc.Text())
		}
		out[m[1]] = m[2]
		_ = prev
	}
	return out
}

// textCounter returns an integer stat from /stats text, -1 if absent.
func textCounter(m map[string]string, name string) int64 {
	v, ok := m[name]
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -2
	}
	return n
}

func jsonStats(t *testing.T, p *Proxy) map[string]any {
	t.Helper()
	var doc struct {
		Stats []map[string]any `json:"stats"`
	}
	if err := json.Unmarshal([]byte(get(t, p.AdminURL()+"/stats?format=json")), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, e := range doc.Stats {
		if n, ok := e["name"].(string); ok {
			out[n] = e["value"]
		}
	}
	return out
}

var promLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$`)

// promStats parses Prometheus text into "name{labels}" -> value and checks
// every series follows a # TYPE line for its family.
func promStats(t *testing.T, url string) map[string]float64 {
	t.Helper()
	body := get(t, url)
	out := map[string]float64{}
	typed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(l, "# TYPE ") {
			f := strings.Fields(l)
			if len(f) != 4 || (f[3] != "counter" && f[3] != "gauge") {
				t.Fatalf("bad TYPE line %q", l)
			}
			typed[f[2]] = true
			continue
		}
		m := promLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("prometheus line %q does not parse", l)
		}
		if !typed[m[1]] {
			t.Fatalf("series %q has no # TYPE line before it", l)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatal(err)
		}
		out[m[1]+"{"+m[2]+"}"] = v
	}
	return out
}

// fixture returns the bytes of a fixture, preferring testdata/ and falling
// back to <repo>/../shared/fixtures/envoy (see testfix.ReadFixture).
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	return testfix.ReadFixture(t, "envoy", name)
}

func pct(v float64) *float64 { return &v }

func must(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Errorf(format, args...)
	}
}

var _ = fmt.Sprintf

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func httptestRequest(remote string, hdr map[string]string) *http.Request {
	r, _ := http.NewRequest("GET", "http://lab/x", nil)
	r.RemoteAddr = remote
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r
}
