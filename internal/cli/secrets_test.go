package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/spf13/cobra"
)

// secretMarker is the credential planted in every URL-like flag and plan
// field of TestNoSecretPrinted (as a userinfo password, as a user name, as
// a query token and as a credential header's value); no output may hold it.
const secretMarker = "S3CRET-q7Zm"

// secretEnv is where TestNoSecretPrinted's commands run: inputs (which
// hold the marker) under in, everything the commands write under out.
type secretEnv struct {
	in, out string
	live    string // host:port of a loopback server answering every page
	dead    string // host:port of a loopback port nothing listens on
	repo    string
}

// pass is http://ops:MARKER@host + p; user http://MARKER@host + p; query
// http://host + p + ?token=MARKER&...
func (e *secretEnv) pass(host, p string) string { return "http://ops:" + secretMarker + "@" + host + p }
func (e *secretEnv) user(host, p string) string { return "http://" + secretMarker + "@" + host + p }
func (e *secretEnv) query(host, p string) string {
	return "http://" + host + p + "?token=" + secretMarker + "&X-Amz-Signature=" + secretMarker + "&page=2"
}

// urls are the three forms of a URL carrying the marker, on host.
func (e *secretEnv) urls(host, p string) []string {
	return []string{e.pass(host, p), e.user(host, p), e.query(host, p)}
}

func (e *secretEnv) file(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(e.in, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *secretEnv) dir(name string) string { return filepath.Join(e.out, name) }

// secretCase is one command line of TestNoSecretPrinted.
type secretCase struct {
	args  []string
	stdin string
	// stopOn, for a command that runs until interrupted (lab, backend),
	// is the stream ("stdout" or "stderr") whose first line cancels it.
	stopOn string
	// want is the exit code.
	want int
	// shows, if set, must be in stdout or stderr: the redacted form still
	// names the target.
	shows string
}

// secretHeaders are credential headers as --header flags.
var secretHeaders = []string{"--header", "Authorization: Bearer " + secretMarker, "--header", "X-Api-Key: " + secretMarker,
	"--header", "Cookie: session=" + secretMarker, "--header", "Proxy-Authorization: Basic " + secretMarker}

// secretCases lists, for every leaf command of the tree (its path without
// "rlbench "), the command lines that give it the marker in every
// URL-like flag, header flag and plan field it has. A command without such
// an input still runs once, on evidence written by the others.
func secretCases(t *testing.T, e *secretEnv) map[string][]secretCase {
	var attacks []secretCase
	for k, u := range e.urls(e.live, "") {
		args := append([]string{"attack", "--target", "edge=" + u, "--ids", "3", "--out", e.dir(fmt.Sprintf("attack%d", k)),
			"--path", "/x?access_token=" + secretMarker, "--timeout", "2s"}, secretHeaders...)
		attacks = append(attacks, secretCase{args: args, want: pick(k == 2, ExitUsage, ExitOK)}) // a target URL takes no query
	}
	for k, u := range e.urls(e.dead, "") {
		attacks = append(attacks, secretCase{args: []string{"attack", "--target", "edge=" + u, "--ids", "2", "--out", e.dir(fmt.Sprintf("attackdead%d", k)), "--timeout", "2s"}, want: pick(k == 2, ExitUsage, ExitError)})
	}
	attacks = append(attacks,
		secretCase{args: []string{"attack", "--target", "edge=" + e.pass(e.live, ""), "--out", e.dir("flows"), "--timeout", "2s",
			"--flow", "name=A,ids=2,header=Authorization:Bearer " + secretMarker + ",path=/a?key=" + secretMarker,
			"--flow", "name=B,ids=2,header=x-api-key:" + secretMarker}, want: ExitOK},
		// Refused inputs quote what they refuse: never the secret.
		secretCase{args: []string{"attack", "--target", "edge=" + e.pass(e.live, "") + "%zz", "--ids", "1", "--out", e.dir("bad1")}, want: ExitUsage},
		secretCase{args: []string{"attack", "--target", "edge=" + e.query(e.live, "/"), "--ids", "1", "--out", e.dir("bad2")}, want: ExitUsage},
		secretCase{args: []string{"attack", "--target", "edge=" + e.pass(e.live, ""), "--ids", "1", "--out", e.dir("bad3"),
			"--header", "Authorization Bearer " + secretMarker}, want: ExitUsage},
		secretCase{args: []string{"attack", "--target", "edge=" + e.pass(e.live, ""), "--ids", "1", "--out", e.dir("bad4"),
			"--header", "Authorization: Bearer " + secretMarker + "\x01"}, want: ExitUsage},
		secretCase{args: []string{"attack", "--target", "edge=" + e.pass(e.live, ""), "--out", e.dir("bad5"),
			"--flow", "name=A,ids=x,header=Authorization:" + secretMarker + ",path=/a?token=" + secretMarker}, want: ExitUsage},
		secretCase{args: []string{"attack", "--targets-file", e.file(t, "targets.http",
			"GET "+e.pass(e.live, "/t?token="+secretMarker)+"\nAuthorization: Bearer "+secretMarker+"\n\nGET "+e.user(e.live, "/u")+"\n"),
			"--ids", "2", "--out", e.dir("targetsfile"), "--timeout", "2s"}, want: ExitOK},
		// vegeta's targeters quote what they refuse: a header line without
		// its ':' (as written), the bytes where a JSON target stopped.
		secretCase{args: []string{"attack", "--targets-file", e.file(t, "badheader.http",
			"GET http://"+e.live+"/t\nAuthorization Bearer "+secretMarker+"\n\n"),
			"--ids", "1", "--out", e.dir("targetsbad1")}, want: ExitError, shows: "bad header: Authorization xxxxx"},
		secretCase{args: []string{"attack", "--targets-format", "json", "--targets-file", e.file(t, "badheader.json",
			`{"method":"GET","url":"http://`+e.live+`/t","header":{"Authorization":"`+secretMarker+`"}}`+"\n"),
			"--ids", "1", "--out", e.dir("targetsbad2")}, want: ExitError, shows: "parse error"},
	)

	var collectEnvoy, prom, stub, receipts, wait []secretCase
	for k, host := range []string{e.live, e.dead} {
		for j, u := range e.urls(host, "") {
			out := e.dir(fmt.Sprintf("collect%d%d", k, j))
			ok := pick(k == 0, ExitOK, ExitError)                                                                                                                                                                         // the live server answers, the dead port refuses
			collectEnvoy = append(collectEnvoy, secretCase{args: []string{"collect", "envoy", "--admin", u, "--proxy", "edge", "--label", "before", "--out", out, "--timeout", "2s"}, want: pick(j == 2, ExitError, ok)}) // a query before /stats
			prom = append(prom, secretCase{args: []string{"collect", "prometheus", "--url", strings.Replace(u, host, host+"/metrics", 1), "--label", "before", "--out", out, "--timeout", "2s"}, want: ok})
			stub = append(stub, secretCase{args: []string{"collect", "nginx-status", "--url", strings.Replace(u, host, host+"/stub_status", 1), "--label", "before", "--out", out, "--timeout", "2s"}, want: ok})
			receipts = append(receipts, secretCase{args: []string{"collect", "receipts", "--url", u, "--out", out, "--timeout", "2s"}, want: ExitError}) // "ok" is no receipt stream
		}
		wait = append(wait, secretCase{args: append([]string{"wait", "--timeout", "300ms", "--interval", "10ms"}, e.urls(host, "/notready")...), want: ExitError,
			shows: "http://ops:xxxxx@" + host + "/notready: "})
	}
	// Both a live page and the metrics page: the success paths write the URL.
	prom = append(prom, secretCase{args: []string{"collect", "prometheus", "--url", e.pass(e.live, "/metrics"), "--label", "after", "--out", e.dir("prom-ok")}, want: ExitOK,
		shows: `"name": "http://ops:xxxxx@` + e.live + `/metrics"`})
	collectEnvoy = append(collectEnvoy, secretCase{args: []string{"collect", "envoy", "--admin", e.pass(e.live, ""), "--proxy", "edge", "--label", "after", "--out", e.dir("envoy-ok")}, want: ExitOK})

	plan := func(name, body string) string { return e.file(t, name, body) }
	labPlan := plan("lab.yaml", fmt.Sprintf(`name: secrets
scenarios:
  - name: lab
    lab: {proxies: 1, local: {max_tokens: 2, tokens_per_fill: 2, fill_interval: 1h}}
    attack:
      ids: 4
      path: /x?token=%[1]s
      headers: {Authorization: "Bearer %[1]s", X-Api-Key: %[1]s}
    expect: {admitted: 2}
`, secretMarker))
	extPlan := func(name string, u func(host, p string) string, host string) string {
		return plan(name, fmt.Sprintf(`name: secrets
tools: {curl: "echo fetched '%[2]s'"}
scenarios:
  - name: external
    external:
      receipts_url: %[3]s
      proxies: [{name: edge, url: %[4]q, admin: %[5]q}]
    steps:
      - fault: {action: exec, target: token, command: "echo '%[2]s'; exit 1"}
      - attack: {ids: 2, timeout: 2s, headers: {Authorization: "Bearer %[1]s"}}
    expect: {admitted: 2}
`, secretMarker, u(host, "/tool"), u(host, "/_rlbench/receipts"), u(host, ""), u(host, "")))
	}
	var runs, sims []secretCase
	for k, p := range []string{labPlan, extPlan("ext-pass.yaml", e.pass, e.live), extPlan("ext-user.yaml", e.user, e.live),
		extPlan("ext-query.yaml", e.query, e.live), extPlan("ext-dead.yaml", e.pass, e.dead)} {
		// The lab plan passes; the external ones have no receipts: NOT_RUN.
		runs = append(runs, secretCase{args: []string{"run", "--quiet", "--root", e.dir(fmt.Sprintf("runs%d", k)), p}, want: pick(k == 0, ExitOK, ExitNotRun)})
		sims = append(sims, secretCase{args: []string{"simulate", p}, want: pick(k == 0, ExitOK, ExitNotRun)})
	}

	accessLog := e.file(t, "access.log", `[2019-06-21T02:11:45.131Z] "GET /x?token=`+secretMarker+` HTTP/1.1" 429 - 8 0 258 251 "-" "curl" "1327974d-12d4-46f1-b226-8f1307383c4f" "localhost:7815" "127.0.0.1:7810"`+"\n")
	nginxLog := e.file(t, "nginx.log", `{"id":"b-1","status":200,"upstream_status":"200","upstream_addr":"127.0.0.1:1","request_time":0.001,"upstream_response_time":"0.001","limit_req_status":"PASSED","msec":1796115530.382,"method":"GET","uri":"/x?token=`+secretMarker+`","connection":1}`+"\n")
	ev := e.dir("attack0") // written by the first attack case
	return map[string][]secretCase{
		"attack":               attacks,
		"collect envoy":        collectEnvoy,
		"collect prometheus":   prom,
		"collect nginx-status": stub,
		"collect receipts":     receipts,
		"wait":                 wait,
		"run":                  runs,
		// The limiter (the live server) and its receipts URL with the
		// marker; the live server's receipts page is not receipts: NOT_RUN.
		"conformance": {{args: []string{"conformance", "--quiet", "--root", e.dir("conformance"), "--url", e.pass(e.live, ""),
			"--receipts-url", e.pass(e.live, "/_rlbench/receipts"), "--model", "token_bucket:capacity=2,rate_per_sec=2",
			"--shape", "burst 1.5x capacity", "--header", "Authorization: Bearer " + secretMarker}, want: ExitNotRun},
			{args: []string{"conformance", "--url", e.query(e.live, "/"), "--receipts-url", e.user(e.live, "/r"), "--model", "token_bucket:capacity=2"}, want: ExitUsage}},
		"simulate": sims,
		"demo":     {{args: []string{"demo", "--quiet", "--root", e.dir("demo")}, want: ExitOK}},
		// runs lists and prunes what run and demo wrote (their plans hold
		// the secret in paths and headers).
		"runs prune": {{args: []string{"runs", "prune", "--root", e.dir("runs0"), "--keep", "0", "--dry-run"}, want: ExitOK}},
		"analyze":    {{args: []string{"analyze", "--format", "json", ev}, want: ExitNotRun}}, // no receipts
		"report":     {{args: []string{"report", "--html", e.dir("r.html"), "--prometheus", e.dir("r.prom"), ev}, want: ExitNotRun}},
		"diff": {{args: []string{"diff", "--format", "markdown", ev, e.dir("attack1")}, want: ExitOK},
			{args: []string{"diff", "--format", "json", "--out", e.dir("diff.json"), e.dir("flows"), ev}, want: ExitOK}},
		"export vegeta":            {{args: []string{"export", "vegeta", ev}, want: ExitOK}},
		"merge":                    {{args: []string{"merge", "--out", e.dir("merged"), ev}, want: ExitNotRun}},
		"lint":                     {{args: []string{"lint", filepath.Join(e.repo, "examples/envoy/local-a.yaml")}, want: ExitOK}},
		"collect envoy-access-log": {{args: []string{"collect", "envoy-access-log", "--format", "json", accessLog}, want: ExitOK}},
		"collect nginx-access-log": {{args: []string{"collect", "nginx-access-log", "--out", e.dir("nginx"), "--format", "json", nginxLog}, want: ExitOK}},
		"collect rls-log": {{args: []string{"collect", "rls-log", "--out", e.dir("rlslog"),
			filepath.Join(e.repo, "collect/rls/testdata/rls_local_3fb7025_space_value.log")}, want: ExitOK}},
		"collect statsd": {{args: []string{"collect", "statsd", "--listen", "127.0.0.1:0", "--out", e.dir("statsd.jsonl"), "--duration", "1ms"}, want: ExitOK}},
		"backend":        {{args: []string{"backend", "--listen", "127.0.0.1:0", "--receipts", e.dir("backend-receipts.jsonl")}, stopOn: "stdout", want: ExitOK}},
		"lab": {
			{args: []string{"lab", "--proxies", "1", "--global-domain", "d", "--global-descriptor", "k=v", "--rls", "grpc://ops:" + secretMarker + "@" + e.dead,
				"--receipts", e.dir("lab-receipts.jsonl"), "--decisions", e.dir("lab-decisions.jsonl")}, stopOn: "stdout", want: ExitOK,
				shows: `"rls":"grpc://ops:xxxxx@` + e.dead + `"`},
			{args: []string{"lab", "--proxies", "1", "--global-domain", "d", "--global-descriptor", "k=v", "--rls", "grpc://" + e.dead + "/?token=" + secretMarker,
				"--receipts", e.dir("lab-receipts2.jsonl"), "--decisions", e.dir("lab-decisions2.jsonl")}, stopOn: "stdout", want: ExitOK,
				shows: `"rls":"grpc://` + e.dead + `/?token=xxxxx"`},
		},
	}
}

// TestNoSecretPrinted (issue 27, "no secret printed anywhere"): every
// command of the tree, given a secret in every URL-like flag (userinfo
// password, user name, query token), in credential headers and in every
// URL field of a plan, against a loopback server or an unreachable
// loopback port, prints it neither on stdout nor on stderr (errors
// included) and writes it into no file. The commands are enumerated from
// the cobra tree, so a new command fails this test until it has a case.
func TestNoSecretPrinted(t *testing.T) {
	e := &secretEnv{in: t.TempDir(), out: t.TempDir(), repo: testfix.RepoRoot(t), live: startSecretServer(t), dead: deadPort(t)}
	t.Chdir(e.out) // a file written relative to the working directory is searched too
	cases := secretCases(t, e)
	leaves := leafCommands(NewRoot(&IOStreams{}))
	for _, l := range leaves {
		if len(cases[l]) == 0 {
			t.Errorf("rlbench %s has no case in secretCases: give it the secret in every URL-like input it takes", l)
		}
	}
	for name := range cases {
		if !containsString(leaves, name) {
			t.Errorf("secretCases names %q, not a command of the tree", name)
		}
	}
	// attack first: the evidence commands read what it wrote.
	order := append([]string{"attack"}, leaves...)
	done := map[string]bool{}
	forms := []string{secretMarker, base64.StdEncoding.EncodeToString([]byte("ops:" + secretMarker)),
		base64.StdEncoding.EncodeToString([]byte(secretMarker + ":"))}
	for _, name := range order {
		if done[name] {
			continue
		}
		done[name] = true
		for _, c := range cases[name] {
			code, stdout, stderr := runSecretCase(c)
			shown := strings.ReplaceAll(strings.Join(c.args, " "), secretMarker, "MARKER")
			t.Logf("rlbench %s: exit %d", shown, code)
			if code != c.want {
				t.Errorf("rlbench %s: exit %d, want %d\nstderr: %s", shown, code, c.want, stderr)
			}
			if !strings.Contains(stdout+stderr, c.shows) {
				t.Errorf("rlbench %s: the output does not show %s:\n%s\n%s", shown, c.shows, stdout, stderr)
			}
			for _, f := range forms {
				if strings.Contains(stdout, f) {
					t.Errorf("rlbench %s: stdout holds the secret (%s):\n%s", shown, f, stdout)
				}
				if strings.Contains(stderr, f) {
					t.Errorf("rlbench %s: stderr holds the secret (%s):\n%s", shown, f, stderr)
				}
			}
		}
	}
	files := 0
	err := filepath.WalkDir(e.out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, f := range forms {
			if i := bytes.Index(b, []byte(f)); i >= 0 {
				t.Errorf("%s holds the secret (%s): ...%s...", strings.TrimPrefix(p, e.out), f, b[max(0, i-120):min(len(b), i+40)])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Errorf("only %d files written under %s: the commands did not run as meant", files, e.out)
	}
}

// leafCommands lists the runnable leaves of the tree by their path without
// the root's name ("collect envoy"), sorted.
func leafCommands(root *cobra.Command) []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() {
			out = append(out, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
			return
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

func pick(cond bool, yes, no int) int {
	if cond {
		return yes
	}
	return no
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// runSecretCase runs c through the command tree and the exit-code mapping
// of Main, with a context that c.stopOn's first line cancels.
func runSecretCase(c secretCase) (int, string, string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut := &lineSignal{}, &lineSignal{}
	switch c.stopOn {
	case "stdout":
		out.onLine = cancel
	case "stderr":
		errOut.onLine = cancel
	}
	streams := &IOStreams{In: strings.NewReader(c.stdin), Out: out, ErrOut: errOut}
	root := NewRoot(streams)
	root.SetArgs(c.args)
	code := exitCode(root.ExecuteContext(ctx), streams.ErrOut)
	return code, out.String(), errOut.String()
}

// lineSignal is a goroutine-safe buffer that calls onLine once, at its first
// complete line.
type lineSignal struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func()
}

func (w *lineSignal) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, _ := w.buf.Write(p)
	if w.onLine != nil && bytes.IndexByte(w.buf.Bytes(), '\n') >= 0 {
		w.onLine()
		w.onLine = nil
	}
	return n, nil
}

func (w *lineSignal) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startSecretServer serves, on loopback, an Envoy admin /stats page, an
// envoyproxy/ratelimit /metrics page, an nginx stub_status page, a 503
// /notready and 200 "ok" everywhere else; it returns its host:port.
func startSecretServer(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "cluster.backend.upstream_rq_total: 3\nhttp.ingress.local_rate_limit.rate_limited: 1\n")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE ratelimit_service_rate_limit_total_hits counter\nratelimit_service_rate_limit_total_hits{domain=\"d\",key1=\"k_v\"} 4\n")
	})
	mux.HandleFunc("/stub_status", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "Active connections: 1 \nserver accepts handled requests\n 1 1 1 \nReading: 0 Writing: 1 Waiting: 0 \n")
	})
	mux.HandleFunc("/notready", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// deadPort returns a loopback host:port that was free a moment ago (bound,
// then closed): connections to it are refused.
func deadPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
