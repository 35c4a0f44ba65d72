package cli

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/testpki"
	"github.com/rlbench/rlbench/schemas"
)

// idServer is a backend that counts the requests per ID and remembers each
// ID's method, path and x-user header.
type idServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]string // id -> "METHOD path?query user"
}

func newIDServer(t *testing.T, start func(*httptest.Server)) *idServer {
	s := &idServer{seen: map[string][]string{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen[r.Header.Get(evidence.IDHeader)] = append(s.seen[r.Header.Get(evidence.IDHeader)],
			fmt.Sprintf("%s %s %s %s %s", r.Method, r.URL.RequestURI(), r.Header.Get("X-User"), b, r.Proto))
		s.mu.Unlock()
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if start == nil {
		s.Start()
	} else {
		start(s.Server)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *idServer) snapshot() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.seen {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readLines(t *testing.T, dir string) []evidence.Request {
	t.Helper()
	var out []evidence.Request
	if err := evidence.ReadFile(filepath.Join(dir, evidence.RequestsFile), func(_ int, r *evidence.Request) error {
		out = append(out, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func readAttack(t *testing.T, dir string) *evidence.Attack {
	t.Helper()
	b, err := os.ReadFile(evidence.Dir(dir).Attack())
	if err != nil {
		t.Fatal(err)
	}
	a, err := evidence.DecodeAttack(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestAttackFlowsCLI: `rlbench attack --flow ... --flow ...` sends each
// flow's requests with its own shape, every line names its flow, and the
// summary on stderr is written for a person (no Go map syntax).
func TestAttackFlowsCLI(t *testing.T) {
	srv := newIDServer(t, nil)
	out := filepath.Join(t.TempDir(), "ev")
	code, _, stderr := runCLI(t, "attack", "--target", "p="+srv.URL, "--out", out, "--header", "X-Plan: free",
		"--flow", "name=A,rate=200/s,duration=100ms,header=x-user:A,path=/ping",
		"--flow", "name=B,ids=5,header=x-user:B,path=/report,method=POST,body=r")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "map[") || !strings.Contains(stderr, "attack: codes p: 25 × 200") ||
		!strings.Contains(stderr, "attack: flow A: 20 of 20 IDs sent") || !strings.Contains(stderr, "attack: flow B: burst of 5") {
		t.Fatalf("stderr:\n%s", stderr)
	}
	lines := readLines(t, out)
	seen := srv.snapshot()
	n := map[string]int{}
	for _, l := range lines {
		n[l.Flow]++
		want := map[string]string{"A": "GET /ping A  HTTP/1.1", "B": "POST /report B r HTTP/1.1"}[l.Flow]
		if got := seen[l.ID]; len(got) != 1 || got[0] != want || !strings.HasPrefix(l.ID, "req-"+l.Flow+"-") {
			t.Errorf("%s (flow %q): seen %q, want %q", l.ID, l.Flow, got, want)
		}
	}
	if n["A"] != 20 || n["B"] != 5 || len(seen) != 25 {
		t.Fatalf("lines per flow %v, %d IDs received", n, len(seen))
	}
	if n, err := schemas.ValidateDir(out); err != nil || n != 3 { // attack.json, requests.jsonl and its seal
		t.Fatalf("schemas: %d files, %v", n, err)
	}
	if a := readAttack(t, out); len(a.Phases[0].Flows) != 2 || a.Phases[0].Flows[0].Config.Rate != "200/1s" {
		t.Fatalf("attack.json flows %+v", a.Phases[0].Flows)
	}
}

// TestAttackTargetsFileCLI: vegeta's HTTP and JSON target formats, read by
// vegeta's own decoders; ID j goes to target line j mod L.
func TestAttackTargetsFileCLI(t *testing.T) {
	srv := newIDServer(t, nil)
	dir := t.TempDir()
	body := filepath.Join(dir, "body.txt")
	must(t, os.WriteFile(body, []byte("from-file"), 0o644))
	httpFmt := fmt.Sprintf("GET %s/a?x=1\nX-User: one\n\nPOST %s/b\nX-User: two\n@%s\n", srv.URL, srv.URL, body)
	jsonFmt := fmt.Sprintf(`{"method":"GET","url":"%s/a?x=1","header":{"X-User":["one"]}}`+"\n"+
		`{"method":"POST","url":"%s/b","header":{"X-User":["two"]},"body":"ZnJvbS1maWxl"}`+"\n", srv.URL, srv.URL)
	for format, text := range map[string]string{"http": httpFmt, "json": jsonFmt} {
		file := filepath.Join(dir, "targets."+format)
		must(t, os.WriteFile(file, []byte(text), 0o644))
		out := filepath.Join(dir, "ev-"+format)
		code, _, stderr := runCLI(t, "attack", "--targets-file", file, "--targets-format", format, "--target", "back="+srv.URL,
			"--ids", "5", "--id-prefix", format, "--out", out, "-q")
		if code != 0 || stderr != "" {
			t.Fatalf("%s: exit %d: %q", format, code, stderr)
		}
		seen := srv.snapshot()
		for j, id := range attack.IDs(5, format) {
			want := []string{"GET /a?x=1 one  HTTP/1.1", "POST /b two from-file HTTP/1.1"}[j%2]
			if got := seen[id]; len(got) != 1 || got[0] != want {
				t.Errorf("%s: %s seen %q, want %q", format, id, got, want)
			}
		}
		for _, l := range readLines(t, out) {
			if l.Target != "back" || l.Flow != "targets."+format {
				t.Errorf("%s: line %+v", format, l)
			}
		}
	}
	bad := filepath.Join(dir, "bad.http")
	must(t, os.WriteFile(bad, []byte("GET\n"), 0o644))
	if code, _, stderr := runCLI(t, "attack", "--targets-file", bad, "--out", filepath.Join(dir, "x")); code != ExitError || !strings.Contains(stderr, bad+": target 1: ") {
		t.Fatalf("bad targets file: exit %d: %s", code, stderr)
	}
}

// TestAttackTLSCLI: --cacert, --cert/--key (mTLS), --insecure and --http2
// against a server with certificates from a generated CA that requires a
// client certificate; without one no request reaches the handler.
func TestAttackTLSCLI(t *testing.T) {
	pki := testpki.New(t)
	srv := newIDServer(t, func(s *httptest.Server) {
		s.TLS = pki.ServerConfig(true)
		s.EnableHTTP2 = true
		s.StartTLS()
	})
	dir := t.TempDir()
	for name, extra := range map[string][]string{
		"h1":       {"--cacert", pki.CAFile},
		"h2":       {"--cacert", pki.CAFile, "--http2"},
		"insecure": {"--insecure"},
	} {
		out := filepath.Join(dir, name)
		args := append([]string{"attack", "--target", "s=" + srv.URL, "--ids", "3", "--id-prefix", name, "--out", out, "-q",
			"--cert", pki.ClientCertFile, "--key", pki.ClientKeyFile}, extra...)
		if code, _, stderr := runCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		proto := map[string]string{"h2": "HTTP/2.0"}[name]
		if proto == "" {
			proto = "HTTP/1.1"
		}
		for _, l := range readLines(t, out) {
			if l.Code != 200 || l.Proto != proto || !strings.HasSuffix(srv.snapshot()[l.ID][0], proto) {
				t.Errorf("%s: line %+v seen %q", name, l, srv.snapshot()[l.ID])
			}
		}
	}
	out := filepath.Join(dir, "nocert")
	code, _, stderr := runCLI(t, "attack", "--target", "s="+srv.URL, "--ids", "2", "--id-prefix", "nocert", "--out", out, "--cacert", pki.CAFile)
	if code != 0 || len(srv.snapshot()) != 9 || !strings.Contains(stderr, "2 × no response") {
		t.Fatalf("without a client certificate: exit %d, %d IDs received: %s", code, len(srv.snapshot()), stderr)
	}
	if code, _, stderr := runCLI(t, "attack", "--target", "s="+srv.URL, "--ids", "2", "--out", filepath.Join(dir, "noca"), "--cacert", filepath.Join(dir, "none.pem")); code != ExitUsage || !strings.Contains(stderr, "none.pem") {
		t.Fatalf("missing CA file: exit %d: %s", code, stderr)
	}
}

// TestAttackShardsCLI: four shards from JOB_COMPLETION_INDEX, one start
// instant: together each ID once, each shard its own directory naming it
// and the node whose clock it read (issue 24: RLBENCH_NODE_NAME, else
// SLURMD_NODENAME, else none).
func TestAttackShardsCLI(t *testing.T) {
	srv := newIDServer(t, nil)
	dir := t.TempDir()
	at := time.Now().Add(800 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	var digests []string
	nodes := []struct{ k8s, slurm, want string }{{"node-a", "", "node-a"}, {"node-a", "slurm-b", "node-a"}, {"", "slurm-b", "slurm-b"}, {"", " ", ""}}
	for k := range 4 {
		t.Setenv("JOB_COMPLETION_INDEX", fmt.Sprint(k))
		t.Setenv(evidence.NodeNameEnv, nodes[k].k8s)
		t.Setenv(evidence.SlurmNodeEnv, nodes[k].slurm)
		out := filepath.Join(dir, fmt.Sprintf("shard-%d", k))
		code, _, stderr := runCLI(t, "attack", "--target", "p="+srv.URL, "--ids", "30", "--out", out, "--shard-from-env", "JOB_COMPLETION_INDEX",
			"--shards", "4", "--start-at", at, "--warm-ahead", "100ms")
		if code != 0 || !strings.Contains(stderr, fmt.Sprintf("attack: shard %d/4: ", k)) {
			t.Fatalf("shard %d: exit %d: %s", k, code, stderr)
		}
		if n, err := schemas.ValidateDir(out); err != nil || n != 3 { // attack.json, requests.jsonl and its seal
			t.Fatalf("shard %d: schemas: %d files, %v", k, n, err)
		}
		ph := readAttack(t, out).Phases[0]
		if sh := ph.Shard; sh == nil || sh.Index != k || sh.Count != 4 || sh.FromEnv != "JOB_COMPLETION_INDEX" || sh.TotalIDs != 30 || ph.Host == "" || ph.StartAt == nil {
			t.Fatalf("shard %d: %+v %+v", k, ph.Shard, ph.StartAt)
		}
		if ph.Node != nodes[k].want {
			t.Fatalf("shard %d: node %q, want %q", k, ph.Node, nodes[k].want)
		}
		digests = append(digests, ph.Shard.Digest)
	}
	seen := srv.snapshot()
	if len(seen) != 30 {
		t.Fatalf("%d IDs received, want 30", len(seen))
	}
	for id, s := range seen {
		if len(s) != 1 {
			t.Errorf("%s received %d times", id, len(s))
		}
	}
	for _, d := range digests[1:] {
		if d != digests[0] {
			t.Fatalf("shard digests differ: %v", digests)
		}
	}
}

// progressAttack runs a 5-second paced attack (25 IDs at 5/s) with stderr
// on w and returns when it ended.
func progressAttack(t *testing.T, w io.Writer, quiet bool) string {
	srv := newIDServer(t, nil)
	out := filepath.Join(t.TempDir(), "ev")
	args := []string{"attack", "--target", "p=" + srv.URL, "--ids", "25", "--rate", "5/1s", "--out", out}
	if quiet {
		args = append(args, "--quiet")
	}
	var stdout bytes.Buffer
	if code := Main(args, &IOStreams{In: bytes.NewReader(nil), Out: &stdout, ErrOut: w}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	return out
}

var sentRE = regexp.MustCompile(`(\d+)/25 sent`)

// TestAttackProgressTerminal: on a terminal (a pty), the progress of a
// 5-second attack is redrawn in place (carriage returns, no new lines
// between states) with rising counts; --quiet shows none.
func TestAttackProgressTerminal(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		ptmx, tty, err := pty.Open()
		if err != nil {
			t.Skipf("no pty: %v", err)
		}
		var screen bytes.Buffer
		copied := make(chan struct{})
		go func() {
			io.Copy(&screen, ptmx)
			close(copied)
		}()
		progressAttack(t, tty, quiet)
		tty.Close()
		<-copied
		ptmx.Close()
		s := screen.String()
		states := map[string]bool{}
		for _, m := range sentRE.FindAllStringSubmatch(s, -1) {
			states[m[1]] = true
		}
		if quiet {
			if s != "" {
				t.Fatalf("--quiet on a terminal printed %q", s)
			}
			continue
		}
		if len(states) < 4 || !states["25"] || !strings.Contains(s, "\r") || strings.Contains(s, "map[") {
			t.Fatalf("terminal output shows %d progress states (%v):\n%q", len(states), states, s)
		}
		// Redrawn in place: between the first state and the final line no
		// line feed.
		first := strings.Index(s, "sent,")
		if nl := strings.Index(s[first:], "\n"); nl < 0 || !strings.Contains(s[first+nl:], "attack: 25 of 25 IDs sent") ||
			strings.Count(s[first:first+nl], "\r") < 3 {
			t.Fatalf("progress not redrawn in place:\n%q", s)
		}
	}
}

// TestAttackProgressPiped: when stderr is not a terminal, plain lines
// every few seconds (a 5-second attack: at least one), no carriage
// return; --quiet: nothing at all.
func TestAttackProgressPiped(t *testing.T) {
	var buf bytes.Buffer
	progressAttack(t, &buf, false)
	s := buf.String()
	if strings.Contains(s, "\r") || len(sentRE.FindAllString(s, -1)) < 1 || !strings.Contains(s, "attack: 25 of 25 IDs sent") {
		t.Fatalf("piped output:\n%s", s)
	}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(l, "attack: ") || strings.Contains(l, "map[") {
			t.Errorf("line %q", l)
		}
	}
	buf.Reset()
	progressAttack(t, &buf, true)
	if buf.Len() != 0 {
		t.Fatalf("--quiet printed %q", buf.String())
	}
}

// TestAttackRefusesToOverwrite: a second attack into the same --out is a
// usage error naming the file it would replace, and sends nothing; with
// --overwrite it replaces the evidence.
func TestAttackRefusesToOverwrite(t *testing.T) {
	srv := newIDServer(t, nil)
	out := filepath.Join(t.TempDir(), "ev")
	if code, _, stderr := runCLI(t, "attack", "--target", "p="+srv.URL, "--ids", "3", "--id-prefix", "first", "--out", out, "-q"); code != 0 {
		t.Fatalf("first attack: exit %d: %s", code, stderr)
	}
	before := len(srv.snapshot())
	code, _, stderr := runCLI(t, "attack", "--target", "p="+srv.URL, "--ids", "3", "--id-prefix", "second", "--out", out, "-q")
	if code != ExitUsage || !strings.Contains(stderr, "--out "+out+": already holds requests.jsonl") || !strings.Contains(stderr, "--overwrite") {
		t.Fatalf("second attack: exit %d: %s", code, stderr)
	}
	if got := len(srv.snapshot()); got != before {
		t.Fatalf("the refused attack sent %d requests", got-before)
	}
	if lines := readLines(t, out); len(lines) != 3 || !strings.HasPrefix(lines[0].ID, "first") {
		t.Fatalf("the first attack's evidence changed: %+v", lines)
	}
	// A backend's receipts already in --out are an earlier run's: the
	// attack says so.
	if err := os.WriteFile(filepath.Join(out, evidence.ReceiptsFile), []byte(`{"id":"first-1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "attack", "--target", "p="+srv.URL, "--ids", "2", "--id-prefix", "second", "--out", out, "-q", "--overwrite")
	if code != 0 || !strings.Contains(stderr, "receipts.jsonl already holds 17 bytes of receipts from before this attack; restart the backend") {
		t.Fatalf("--overwrite: exit %d: %s", code, stderr)
	}
	if lines := readLines(t, out); len(lines) != 2 || !strings.HasPrefix(lines[0].ID, "second") {
		t.Fatalf("after --overwrite: %+v", lines)
	}
}
