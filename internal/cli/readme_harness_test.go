package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
		} {
			if _, _, err := translate(block(text), dir, 20000); err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "README.md:1") {
				t.Errorf("%q: err %v, want one naming its README line and %q", text, err, msg)
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
