package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// fakeT is a testscript.T that records a failure instead of failing the
// test, so that the harness's own failures can be checked.
type fakeT struct {
	failed bool
	log    strings.Builder
}

type fakeStop struct{}

func (f *fakeT) Skip(a ...any)  { panic(fakeStop{}) }
func (f *fakeT) Fatal(a ...any) { f.Log(a...); f.failed = true; panic(fakeStop{}) }
func (f *fakeT) Parallel()      {}
func (f *fakeT) Log(a ...any)   { fmt.Fprintln(&f.log, a...) }
func (f *fakeT) FailNow()       { f.failed = true; panic(fakeStop{}) }
func (f *fakeT) Verbose() bool  { return false }
func (f *fakeT) Run(name string, fn func(testscript.T)) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fakeStop); !ok {
				panic(r)
			}
		}
	}()
	fn(f)
}

// TestREADMEHarness checks the README test's own parts on small inputs:
// what it extracts, how it classifies, what it runs, and what it refuses.
func TestREADMEHarness(t *testing.T) {
	t.Run("blocks", func(t *testing.T) {
		md := "# t\n\n```sh\ngo run ./cmd/rlbench demo\n```\n\n1. item\n\n   ```sh needs-rls\n   # needs: an RLS\n   ./rlbench collect rls-log x.log\n   ```\n\n<!--\n```sh\nnot a block\n```\n-->\n"
		bs, err := readmeBlocks([]byte(md))
		if err != nil {
			t.Fatal(err)
		}
		want := []readmeBlock{{line: 3, lang: "sh", markers: []string{}, text: "go run ./cmd/rlbench demo\n"},
			{line: 9, lang: "sh", markers: []string{"needs-rls"}, text: "# needs: an RLS\n./rlbench collect rls-log x.log\n"}}
		if !reflect.DeepEqual(bs, want) {
			t.Fatalf("blocks %#v\nwant %#v", bs, want)
		}
		_, err = readmeBlocks([]byte("# t\n\ntext\n\n    rlbench demo\n"))
		if err == nil || !strings.Contains(err.Error(), "README.md:5: an indented code block") {
			t.Fatalf("indented block: %v", err)
		}
	})

	t.Run("classify", func(t *testing.T) {
		for _, c := range []struct {
			b      readmeBlock
			kind   readmeKind
			reason string
			err    string
		}{
			{readmeBlock{lang: "sh"}, kindRun, "", ""},
			{readmeBlock{lang: "sh", markers: []string{"script"}}, kindScript, "", ""},
			{readmeBlock{lang: "sh", markers: []string{"needs-envoy"}, text: "# needs: an Envoy at :9901\nx\n"}, kindNeeds, "an Envoy at :9901", ""},
			{readmeBlock{lang: "sh", markers: []string{"needs-real-parts"}, text: "# needs: Redis\n"}, kindRealParts, "Redis", ""},
			{readmeBlock{lang: "sh", markers: []string{"needs-envoy"}, text: "rlbench x\n"}, 0, "", `must start with a line "# needs: ..."`},
			{readmeBlock{lang: "sh", markers: []string{"needs-"}, text: "# needs: x\n"}, 0, "", "unknown info string"},
			{readmeBlock{lang: "sh", markers: []string{"later"}}, 0, "", `unknown info string "sh later"`},
			{readmeBlock{lang: "text", markers: []string{"output"}}, kindOutput, "", ""},
			{readmeBlock{lang: "yaml"}, kindDoc, "", ""},
			{readmeBlock{lang: "bash"}, 0, "", `unknown info string "bash"`},
			{readmeBlock{line: 7}, 0, "", "README.md:7 (): a code block without an info string"},
		} {
			k, r, err := classify(c.b)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%v: err %v, want %q", c.b, err, c.err)
				}
				continue
			}
			if err != nil || k != c.kind || r != c.reason {
				t.Errorf("%v: %v %q %v, want %v %q", c.b, k, r, err, c.kind, c.reason)
			}
		}
	})

	t.Run("ports", func(t *testing.T) {
		got := readmeMovePorts([]string{"lab", "--listen-base", "10000", "--listen-base=10300", "a=http://127.0.0.1:10001/x",
			"http://127.0.0.1:9901", "127.0.0.1:10301", "--ids", "10000", "--admin", "http://127.0.0.1:10100"}, 30000)
		want := []string{"lab", "--listen-base", "30000", "--listen-base=30300", "a=http://127.0.0.1:30001/x",
			"http://127.0.0.1:9901", "127.0.0.1:10301", "--ids", "10000", "--admin", "http://127.0.0.1:30100"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q\nwant %q", got, want)
		}
		text := "./rlbench lab --listen-base 10000 & LAB=$!\ncurl http://127.0.0.1:10100/ready http://127.0.0.1:9901 :10301\n"
		if got, want := readmeMoveTextPorts(text, 30000), "./rlbench lab --listen-base 30000 & LAB=$!\ncurl http://127.0.0.1:30100/ready http://127.0.0.1:9901 :10301\n"; got != want {
			t.Fatalf("%q\nwant %q", got, want)
		}
	})

	t.Run("translate", func(t *testing.T) {
		dir := t.TempDir()
		for _, f := range []string{"a.yaml", "b.yaml", "c.txt"} {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		block := func(text string) readmeBlock { return readmeBlock{line: 10, lang: "sh", text: text} }
		lines, runs, err := translate(block(`go build -o rlbench ./cmd/rlbench
go run ./cmd/rlbench demo      # the main job
go test -race ./...
./rlbench lab --listen-base 10000 \
    --receipts "ev/receipts.jsonl" &   # in the background
./rlbench wait http://127.0.0.1:10100/ready
rlbench lint *.yaml --rls-config 'x y'
./rlbench analyze --format json ev > report.json
kill -INT $!; wait
`), dir, 20000)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"# README.md:11: go build -o rlbench ./cmd/rlbench", "# (rlbench is this test binary's command, built already)",
			"# README.md:12: go run ./cmd/rlbench demo", "exec 'rlbench' 'demo'",
			"# README.md:13: go test -race ./...", "# (the test suite: this test runs inside it)",
			`# README.md:14: ./rlbench lab --listen-base 10000 \     --receipts "ev/receipts.jsonl" &`,
			"readme-bg 'rlbench' 'lab' '--listen-base' '20000' '--receipts' 'ev/receipts.jsonl'",
			"# README.md:16: ./rlbench wait http://127.0.0.1:10100/ready", "exec 'rlbench' 'wait' 'http://127.0.0.1:20100/ready'",
			"# README.md:17: rlbench lint *.yaml --rls-config 'x y'", "exec 'rlbench' 'lint' 'a.yaml' 'b.yaml' '--rls-config' 'x y'",
			"# README.md:18: ./rlbench analyze --format json ev > report.json", "exec 'rlbench' 'analyze' '--format' 'json' 'ev'", "cp stdout 'report.json'",
			"# README.md:19: kill -INT $!", "readme-kill INT 1",
			"# README.md:19: wait", "readme-wait",
			"readme-end",
		}
		if runs != 5 || !reflect.DeepEqual(lines, want) {
			t.Fatalf("runs %d\n%s\nwant\n%s", runs, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		for text, msg := range map[string]string{
			"rlbench demo | tee out":                   "simple commands only",
			"rlbench demo && rlbench demo":             "simple commands only",
			"! rlbench demo":                           "simple commands only",
			"A=1 rlbench demo":                         "variable assignments",
			"rlbench attack --out $OUT":                "OUT",
			"go run ./cmd/rlbench lab &":               "go run does not pass signals on",
			"rlbench lab &\nrlbench wait u\nkill %1":   "dash (Debian's sh) has no job control",
			"kill $!":                                  "the block has 0",
			"rlbench lab &\nrlbench wait u\nkill 1234": "after a background job",
			"rlbench lab &\nkill $!":                   "must be `./rlbench wait URL...`",
			"./rlbench lab &\nrlbench attack":          "must be `./rlbench wait URL...`",
			"wait %1":                                  "without arguments",
			"go vet ./...":                             "go run ./cmd/rlbench, go build",
			"rlbench demo 2> err":                      "one `> FILE` redirection",
			"rlbench lab > lab.json &":                 "a background job's output",
			"for i in 1 2; do rlbench x; done":         "simple commands only",
			"curl http://127.0.0.1:10100/stats":        "curl is not on a fresh machine",
			"examples/none.sh":                         "examples/none.sh is not in the README work directory",
			"/usr/bin/env rlbench":                     "mark the block `sh needs-env`",
		} {
			if _, _, err := translate(block(text), dir, 20000); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "README.md:1") {
				t.Errorf("%q: err %v, want one naming its README line and %q", text, err, msg)
			}
		}
	})

	t.Run("script programs", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "run.sh"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		ok := readmeBlock{line: 20, lang: "sh", markers: []string{"script"}, text: "f() { date; }\nfor k in 1 2; do ./rlbench x $(f) & done\nwait\n./run.sh\n$CMD x\n"}
		if err := readmeCheckScript(ok, dir); err != nil {
			t.Errorf("%v", err)
		}
		bad := readmeBlock{line: 20, lang: "sh", markers: []string{"script"}, text: "A=$(date)\nfor k in 1; do\n  echo $(kubectl get pods)\ndone\n"}
		if err := readmeCheckScript(bad, dir); err == nil || !strings.Contains(err.Error(), "README.md:23: kubectl is not on a fresh machine") {
			t.Errorf("err %v, want README.md:23 and kubectl", err)
		}
		// jq, which scripts/install-real-parts.sh installs, may run in a
		// script block; the block names it as what it needs.
		withJQ := readmeBlock{line: 20, lang: "sh", markers: []string{"script"}, text: "./rlbench x | jq -c .\n./rlbench y | jq .a\n"}
		if err := readmeCheckScript(withJQ, dir); err != nil {
			t.Errorf("%v", err)
		}
		if got := readmeScriptInstallables(withJQ); !slices.Equal(got, []string{"jq"}) {
			t.Errorf("installables %v, want [jq]", got)
		}
		if got := readmeScriptInstallables(ok); len(got) != 0 {
			t.Errorf("installables %v, want none", got)
		}
	})

	t.Run("blocks not run", func(t *testing.T) {
		blk := func(text string) readmeBlock {
			return readmeBlock{line: 30, lang: "sh", markers: []string{"needs-envoy"}, text: "# needs: x\n" + text}
		}
		good := "./rlbench collect envoy --admin http://127.0.0.1:9901 --proxy a --label after --out $EV\n" +
			"kubectl logs deploy/ratelimit | go run ./cmd/rlbench collect rls-log - --out ev\nENVOY_BIN=/x examples/envoy/run.sh\n"
		if err := readmeCheckUnrun(blk(good)); err != nil {
			t.Errorf("%v", err)
		}
		for text, want := range map[string]string{
			"./rlbench collect envoy --admn http://127.0.0.1:9901":      "README.md:32: rlbench collect envoy --admn http://127.0.0.1:9901: unknown flag: --admn",
			"kubectl logs x | ./rlbench collect rls-log a.log b.log":    "README.md:32: rlbench collect rls-log a.log b.log: ",
			"rlbench attack --ids ten":                                  "README.md:32: rlbench attack --ids ten: invalid argument",
			"for i in 1; do\n  go run ./cmd/rlbench colect envoy\ndone": "README.md:33: rlbench colect envoy: ",
			"rlbench demo (": "README.md:30 (sh needs-envoy): ",
		} {
			if err := readmeCheckUnrun(blk(text)); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: err %v, want %q", text, err, want)
			}
		}
	})

	t.Run("output", func(t *testing.T) {
		out := "┌──┐\n│ a │ 5 │   \nVerdict: PASS\n"
		if m := readmeMissingLines(out, "│ a │ 5 │\n\nVerdict: PASS\n"); len(m) != 0 {
			t.Errorf("missing %q", m)
		}
		if m := readmeMissingLines(out, "│ a │ 6 │\nVerdict: PASS\n"); !reflect.DeepEqual(m, []string{"│ a │ 6 │"}) {
			t.Errorf("missing %q", m)
		}
	})

	// The custom commands, run by testscript as TestREADME runs them: what
	// must fail does.
	t.Run("scripts", func(t *testing.T) {
		work := t.TempDir()
		for _, c := range []struct {
			name, archive string
			fail          string // "" = must pass; else a substring of the log
		}{
			{"output matches", "exec rlbench --version\nreadme-output $WORK/o.txt\n-- o.txt --\n", ""},
			{"output differs", "exec rlbench --version\nreadme-output $WORK/o.txt\n-- o.txt --\nrlbench version 0\n", "1 line(s) the command did not print"},
			{"background stopped", "readme-bg rlbench backend --receipts r.jsonl\nreadme-kill INT 1\nreadme-wait\nreadme-end\n", ""},
			{"background left running", "readme-bg rlbench backend --receipts r2.jsonl\nreadme-end\n", "was not stopped and waited for"},
			{"background fails", "readme-bg rlbench backend --endpoints 0\n", "exited (exit status 2) before printing its address line"},
			{"sh script", "readme-sh $WORK/s.sh\n-- s.sh --\nrlbench --version > v.txt\n", ""},
			{"sh script fails", "readme-sh $WORK/s.sh\n-- s.sh --\nrlbench nosuch\n", "sh -e"},
			{"sh script leaves a process", "readme-sh $WORK/s.sh\n-- s.sh --\nsleep 30 &\n", "the block left processes running"},
		} {
			ft := &fakeT{}
			file := filepath.Join(t.TempDir(), "s.txtar")
			if err := os.WriteFile(file, []byte(c.archive), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			testscript.RunT(ft, readmeParams(file, work, nil))
			log := ft.log.String()
			switch {
			case c.fail == "" && ft.failed:
				t.Errorf("%s: failed:\n%s", c.name, log)
			case c.fail != "" && (!ft.failed || !strings.Contains(log, c.fail)):
				t.Errorf("%s: failed %v, want a failure with %q:\n%s", c.name, ft.failed, c.fail, log)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("%s: took %s", c.name, d)
			}
		}
	})

	t.Run("first screen", func(t *testing.T) {
		if !firstScreen("go run ./cmd/rlbench demo   # the main job\ngo test -race ./...   # the tests\n") {
			t.Error("the two commands are not the first screen")
		}
		for _, s := range []string{"go run ./cmd/rlbench demo\n", "go test ./...\ngo run ./cmd/rlbench demo\n", "go run ./cmd/rlbench demo\ngo test ./...\nrlbench x\n"} {
			if firstScreen(s) {
				t.Errorf("%q taken for the first screen", s)
			}
		}
	})
}

// TestREADMEFailures runs TestREADME itself, in a child test process, on
// small synthetic READMEs and checks how it fails when an example breaks:
// the failing block's subtest is named by its README line, the message
// says what broke (the command and its line, the output line not printed,
// the job left running, the program a fresh machine lacks...), the other
// blocks still run, and the README's fixed ports ran as the free span the
// log names.
func TestREADMEFailures(t *testing.T) {
	if os.Getenv(readmeFileEnv) != "" {
		t.Skip("the child process's own run")
	}
	// md builds a README from blocks and returns each block's fence line.
	md := func(blocks ...string) (string, []int) {
		var b strings.Builder
		var lines []int
		b.WriteString("# synthetic\n\n")
		for _, blk := range blocks {
			lines = append(lines, strings.Count(b.String(), "\n")+1)
			b.WriteString(blk + "\n\n")
		}
		return b.String(), lines
	}
	child := func(t *testing.T, readme string) (string, error) {
		t.Helper()
		dir := t.TempDir()
		file := filepath.Join(dir, "README.md")
		if err := os.WriteFile(file, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestREADME$", "-test.count=1", "-test.v", "-test.timeout=2m")
		cmd.Env = append(os.Environ(), readmeFileEnv+"="+file)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("broken examples", func(t *testing.T) {
		readme, at := md(
			"```sh\ngo run ./cmd/rlbench demo   # the main job\ngo test ./...\n```",
			"```sh\nprintf 'admitted 10\\n'\n```\n\n```text output\nadmitted 10\n```",
			"```sh\n./rlbench analyze no-such-dir --expect-admitted 1\n```",
			"```sh\nprintf 'admitted 10\\n'\n```\n\n```text output\nadmitted 5\n```",
			"```sh\nmkdir -p bg\n./rlbench backend --listen 127.0.0.1:10200 --receipts bg/receipts.jsonl &\n./rlbench wait http://127.0.0.1:10200/healthz\n```",
			"```sh\n./rlbench demo | tee demo.txt\n```",
			"```sh\njq . report.json\n```",
			"```sh script\nfor k in 1 2; do ./rlbench attack --no-such-flag; done\n```",
			"```sh\nprintf 'still run\\n'\n```\n\n```text output\nstill run\n```",
		)
		out, err := child(t, readme)
		if err == nil {
			t.Fatalf("TestREADME passed on broken examples:\n%s", out)
		}
		sub := func(i int) string { return fmt.Sprintf("TestREADME/README.md:%d (", at[i]) }
		for _, want := range []string{
			"--- PASS: " + sub(0), "--- PASS: " + sub(1), "--- PASS: " + sub(8),
			"--- FAIL: " + sub(2),
			fmt.Sprintf("# README.md:%d: ./rlbench analyze no-such-dir --expect-admitted 1", at[2]+1),
			"unexpected command failure",
			"--- FAIL: " + sub(3), "the README's output block has 1 line(s) the command did not print:\n",
			"--- FAIL: " + sub(4), "(rlbench backend --listen 127.0.0.1:",
			"was not stopped and waited for by the block: add `kill -INT $!` and `wait` after it",
			"--- FAIL: " + sub(5), fmt.Sprintf("README.md:%d: ./rlbench demo | tee demo.txt: the README test runs simple commands only", at[5]+1),
			"--- FAIL: " + sub(6), fmt.Sprintf("README.md:%d: jq . report.json: jq is not on a fresh machine", at[6]+1), "mark the block `sh needs-jq`",
			"--- FAIL: " + sub(7), "+ ./rlbench attack --no-such-flag\n", "unknown flag: --no-such-flag", "(the block's commands are traced",
			"--- FAIL: TestREADME ",
			// ./rlbench without the go build before it (issue 25): reported, the blocks still run.
			fmt.Sprintf("README.md:%d: `./rlbench analyze no-such-dir --expect-admitted 1` before `go build -o rlbench ./cmd/rlbench`", at[2]+1),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		if strings.Contains(out, "--- FAIL: "+sub(0)) || strings.Contains(out, "--- FAIL: "+sub(1)) {
			t.Errorf("a working block failed")
		}
		// The backend of README port 10200 ran on base+200 of the span
		// TestREADME logged.
		m := regexp.MustCompile(`the README's ports 10000\.\.10300 run as (\d+)\.\.`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no port span logged:\n%s", out)
		}
		base, _ := strconv.Atoi(m[1])
		if !strings.Contains(out, fmt.Sprintf("http://127.0.0.1:%d", base+200)) {
			t.Errorf("the backend's address line does not show port %d (README 10200 moved to the span at %d)", base+200, base)
		}
		if t.Failed() {
			t.Logf("child output:\n%s", out)
		}
	})

	t.Run("unclassified blocks", func(t *testing.T) {
		readme, at := md("```bash\nrlbench demo\n```", "```\nrlbench demo\n```")
		out, err := child(t, readme)
		if err == nil {
			t.Fatalf("TestREADME passed:\n%s", out)
		}
		for _, want := range []string{
			"README.md has code blocks the README test cannot classify:",
			fmt.Sprintf(`README.md:%d (bash): unknown info string "bash"`, at[0]),
			fmt.Sprintf("README.md:%d (): a code block without an info string", at[1]),
			"the first code block must be the first screen's sh block: the demo and the test command",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the output lacks %q:\n%s", want, out)
			}
		}
	})
}
