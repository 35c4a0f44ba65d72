package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/realparts"
	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/internal/userdirs"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The README test. README.md's code blocks are its examples, and a reader on
// a fresh machine runs them as written, top to bottom, in the repository's
// directory. TestREADME does the same: it reads README.md when it runs (so it
// follows every README edit), classifies every code block by its fence's info
// string, and runs the runnable ones in README order, each in its own
// testscript, all in one work directory (the reader's shell: a later block
// sees what an earlier one wrote, e.g. runs/latest) that holds a copy of
// examples/. $RLBENCH_HOME is a directory of its own (rlbench's runs directory
// is not the reader's working directory), and afterwards nothing the blocks
// wrote may be a file that `git status` of the repository would show.
//
// Classification (the rules the HTML comment at the top of README.md states):
//
//   - ```sh: runnable. Every command runs and must exit 0.
//   - ```sh script: runnable as a whole by /bin/sh -e (for loops,
//     variables, $(...)); it must start what it uses and stop it: processes
//     it leaves running fail the test (and are killed with their process
//     group). `go run ./cmd/rlbench` is a shell function that runs rlbench,
//     ./rlbench is a link to it; its ports are moved as below.
//   - ```sh needs-real-parts: needs Redis and envoyproxy/ratelimit from
//     scripts/install-real-parts.sh; run by `go test -tags integration` when
//     they are installed (skipped without them, failed without them when
//     RLBENCH_REQUIRE_REAL_PARTS=1), skipped otherwise.
//   - ```sh needs-WORD (any other word): needs something the README does not
//     start (a real Envoy, an RLS, nginx, kubectl, root): not run. Its first
//     line must be a "# needs: ..." comment saying what; that is the reason
//     the test logs.
//   - ```text output: what the runnable sh block just before it prints: every
//     non-blank line of it must be a line of the stdout of that block's last
//     command that ran.
//   - ```text, ```yaml, ```json, ```nginx: documentation, not run.
//   - anything else (no info string, another language or marker, an indented
//     code block) fails the test: every block is classified on purpose.
//
// A runnable block is parsed as POSIX shell (mvdan.cc/sh) and each command
// becomes one testscript line, with the README line it came from as a
// comment. The text is executed as written, with these mappings, which are
// the only liberties taken:
//
//   - `go run ./cmd/rlbench ARGS`, `./rlbench ARGS` and `rlbench ARGS` run
//     the rlbench command of this test binary (testscript.Main): the same
//     code, built once;
//   - `go build -o rlbench ./cmd/rlbench`, `go install ./cmd/rlbench` and
//     `go install github.com/rlbench/rlbench/cmd/rlbench@VERSION` are
//     therefore already done, and `go test ...` is the suite this test runs
//     in: none of them runs again; a reader's shell needs them, so a bare
//     `rlbench` must come after an install line and `./rlbench` after the
//     `go build` (readmeInstallOrder);
//   - the fixed ports the README uses for the lab's layout, 10000..10300
//     (`--listen-base 10000`, `:10000`, `:10100`, ...), are moved to a span
//     of ports this test found free (base+k for 10000+k), as ports must not
//     be assumed free;
//   - `CMD &` starts CMD in the background and goes on once it has printed
//     its first line on stdout (the address line of `rlbench lab` and
//     `rlbench backend`); the README's next command must be `rlbench wait
//     URL...`, which makes a reader's shell wait as well; `kill [-SIG] $!`
//     signals the block's last background job by its PID and `wait` waits
//     for all of them, each of which must exit 0. A block must stop what it
//     started. (`kill %N` is refused: dash, Debian's sh, cannot signal a job
//     spec without job control.)
//
// Besides go and rlbench, a block runs only programs a fresh machine has
// (readmeFreshPrograms: the POSIX shell's utilities) or files of the work
// directory; any other program (curl, jq, kubectl, envoy) fails it, naming
// the README line and the needs-WORD marker to add. A sh script block is
// checked for the same before it runs, and traced (set -x).
//
// Words are expanded as the shell does (quotes, globs in the work directory;
// an unset variable is an error). What the translation cannot run as
// written (pipes, &&, variable assignments, redirections other than
// `> FILE`, subshells...) fails the test, naming the README line: make the
// example simpler, or mark its block needs-WORD.
//
// The first code block of the README must be the first screen's commands:
// the demo and the test command, or the install line, `rlbench demo` and
// the test command.

// readmeBlock is one fenced code block of README.md.
type readmeBlock struct {
	line    int    // README line of the opening fence
	lang    string // first word of the info string
	markers []string
	text    string // content, with the container's indentation removed
}

func (b readmeBlock) String() string {
	return fmt.Sprintf("README.md:%d (%s)", b.line, strings.TrimSpace(b.lang+" "+strings.Join(b.markers, " ")))
}

// parse parses the block's text as POSIX shell (mvdan.cc/sh); a syntax
// error names the block.
func (b readmeBlock) parse() (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(b.text), "")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b, err)
	}
	return f, nil
}

// readmeBlocks returns every code block of the Markdown src in order; an
// indented code block is an error.
func readmeBlocks(src []byte) ([]readmeBlock, error) {
	lineOf := func(off int) int { return bytes.Count(src[:off], []byte("\n")) + 1 }
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var blocks []readmeBlock
	var errs []string
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if n.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		var content strings.Builder
		lines := n.Lines()
		first := -1
		for i := range lines.Len() {
			seg := lines.At(i)
			if first < 0 {
				first = seg.Start
			}
			content.Write(seg.Value(src))
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			b := readmeBlock{text: content.String()}
			if n.Info != nil {
				seg := n.Info.Segment
				b.line = lineOf(seg.Start)
				f := strings.Fields(string(seg.Value(src)))
				if len(f) > 0 {
					b.lang, b.markers = f[0], f[1:]
				}
			} else if first >= 0 {
				b.line = lineOf(first) - 1
			}
			blocks = append(blocks, b)
		case *ast.CodeBlock:
			errs = append(errs, fmt.Sprintf("README.md:%d: an indented code block: use a fenced one with an info string (```sh, ```sh needs-WORD, ```text ...) so the README test can classify it", lineOf(first)))
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return blocks, nil
}

// readmeKind is what the test does with a block.
type readmeKind int

const (
	kindRun       readmeKind = iota // a runnable sh block
	kindScript                      // sh script: run by /bin/sh as a whole
	kindRealParts                   // sh needs-real-parts
	kindNeeds                       // sh needs-WORD: not run
	kindOutput                      // text output: checked against the block before
	kindDoc                         // documentation: not run
)

// docLanguages are the fence languages that are documentation, never run.
var docLanguages = map[string]bool{"text": true, "yaml": true, "json": true, "nginx": true}

// classify returns the block's kind, and for a needs-WORD block the reason
// its "# needs:" line gives; an unclassifiable block is an error.
func classify(b readmeBlock) (readmeKind, string, error) {
	switch {
	case b.lang == "sh" && len(b.markers) == 0:
		return kindRun, "", nil
	case b.lang == "sh" && len(b.markers) == 1 && b.markers[0] == "script":
		return kindScript, "", nil
	case b.lang == "sh" && len(b.markers) == 1 && strings.HasPrefix(b.markers[0], "needs-") && len(b.markers[0]) > len("needs-"):
		first, _, _ := strings.Cut(b.text, "\n")
		reason, ok := strings.CutPrefix(strings.TrimSpace(first), "# needs:")
		if !ok || strings.TrimSpace(reason) == "" {
			return 0, "", fmt.Errorf("%s: a %s block must start with a line \"# needs: ...\" saying what it needs", b, b.markers[0])
		}
		if b.markers[0] == "needs-real-parts" {
			return kindRealParts, strings.TrimSpace(reason), nil
		}
		return kindNeeds, strings.TrimSpace(reason), nil
	case b.lang == "text" && len(b.markers) == 1 && b.markers[0] == "output":
		return kindOutput, "", nil
	case docLanguages[b.lang] && len(b.markers) == 0:
		return kindDoc, "", nil
	case b.lang == "":
		return 0, "", fmt.Errorf("%s: a code block without an info string: say what it is (```sh for commands, ```text output for what the block before prints, ```text, ```yaml ...)", b)
	}
	return 0, "", fmt.Errorf("%s: unknown info string %q: the README test knows sh, sh script, sh needs-WORD, text output, and %v for documentation", b, strings.Join(append([]string{b.lang}, b.markers...), " "), slices.Sorted(maps.Keys(docLanguages)))
}

// readmePortRE finds the README's fixed lab ports in a word: a host:port
// or a --listen-base=PORT of five digits (readmeMovePorts keeps those
// outside readmePortLow..readmePortHigh).
var readmePortRE = regexp.MustCompile(`(:|^--listen-base=)(\d{5})\b`)

const (
	readmePortLow  = 10000 // the README's --listen-base
	readmePortHigh = 10300 // its lab RLS port (lab.RLSPortOffset)
)

// readmeMovePorts moves the README's ports readmePortLow+k in the words of
// a command to base+k: in host:port, --listen-base=PORT, and the word
// after --listen-base.
func readmeMovePorts(args []string, base int) []string {
	move := func(p int) (int, bool) {
		return base + p - readmePortLow, p >= readmePortLow && p <= readmePortHigh
	}
	out := make([]string, len(args))
	for i, a := range args {
		if p, err := strconv.Atoi(a); err == nil && i > 0 && args[i-1] == "--listen-base" {
			if q, ok := move(p); ok {
				out[i] = strconv.Itoa(q)
				continue
			}
		}
		out[i] = readmePortRE.ReplaceAllStringFunc(a, func(m string) string {
			sub := readmePortRE.FindStringSubmatch(m)
			p, _ := strconv.Atoi(sub[2])
			if q, ok := move(p); ok {
				return sub[1] + strconv.Itoa(q)
			}
			return m
		})
	}
	return out
}

// readmeTextPortRE is readmePortRE for a whole script: host:port and
// --listen-base PORT.
var readmeTextPortRE = regexp.MustCompile(`(:|--listen-base[ =])(\d{5})\b`)

// readmeMoveTextPorts moves the README's ports in the text of a script
// block, as readmeMovePorts does in a command's words.
func readmeMoveTextPorts(s string, base int) string {
	return readmeTextPortRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := readmeTextPortRE.FindStringSubmatch(m)
		p, _ := strconv.Atoi(sub[2])
		if p < readmePortLow || p > readmePortHigh {
			return m
		}
		return sub[1] + strconv.Itoa(base+p-readmePortLow)
	})
}

// readmeFreshPrograms are the programs besides go and rlbench that a fresh
// machine (Debian with Go installed) has: the POSIX shell's builtins and
// the utilities of Debian's essential packages (coreutils, dash, findutils,
// grep, sed, diffutils, tar, gzip). A README example that runs anything else
// (curl, jq, kubectl, envoy, redis-server...) needs it installed, and its
// block is marked needs-WORD.
var readmeFreshPrograms = map[string]bool{
	// sh builtins (POSIX.1-2017 XCU 1.6 and 2.14)
	":": true, ".": true, "cd": true, "command": true, "echo": true, "exit": true, "export": true, "false": true,
	"kill": true, "printf": true, "read": true, "return": true, "set": true, "shift": true, "test": true, "[": true,
	"trap": true, "true": true, "unset": true, "wait": true,
	// coreutils, findutils, grep, sed, diffutils, tar, gzip, dash
	"basename": true, "cat": true, "chmod": true, "cmp": true, "cp": true, "cut": true, "date": true, "diff": true,
	"dirname": true, "env": true, "find": true, "grep": true, "gzip": true, "head": true, "ln": true, "ls": true,
	"mkdir": true, "mktemp": true, "mv": true, "rm": true, "sed": true, "seq": true, "sh": true, "sleep": true,
	"sort": true, "tail": true, "tar": true, "tee": true, "touch": true, "tr": true, "uniq": true, "wc": true,
	"xargs": true,
}

// readmeInstallable are the programs a sh script block may run besides a
// fresh machine's because scripts/install-real-parts.sh installs them (jq,
// for the event stream's example): the block runs where they are on PATH
// and is skipped elsewhere (failed with RLBENCH_REQUIRE_REAL_PARTS=1, as CI
// runs after the install script).
var readmeInstallable = map[string]bool{"jq": true}

// readmeScriptInstallables returns the readmeInstallable programs the sh
// script block b runs, in order of first use.
func readmeScriptInstallables(b readmeBlock) []string {
	f, err := b.parse()
	if err != nil {
		return nil
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 {
			if p := call.Args[0].Lit(); readmeInstallable[p] && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		return true
	})
	return out
}

// readmeNeedInstallables skips t (fails it with RLBENCH_REQUIRE_REAL_PARTS=1)
// when a program of progs is not on PATH.
func readmeNeedInstallables(t *testing.T, progs []string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
				t.Fatalf("RLBENCH_REQUIRE_REAL_PARTS=1 and %s is not on PATH (scripts/install-real-parts.sh installs it)", p)
			}
			t.Skipf("needs %s (scripts/install-real-parts.sh installs it): %v", p, err)
		}
	}
}

// readmeFreshProgram returns an error unless prog is one a fresh machine
// has in the README work directory dir: go, rlbench (./rlbench), a program
// of readmeFreshPrograms, or a file of the repository given by a relative
// path (examples/envoy/run.sh).
func readmeFreshProgram(prog, dir string) error {
	switch {
	case prog == "go" || prog == "rlbench" || prog == "./rlbench" || readmeFreshPrograms[prog]:
		return nil
	case strings.Contains(prog, "/") && !filepath.IsAbs(prog):
		if _, err := os.Stat(filepath.Join(dir, prog)); err != nil {
			return fmt.Errorf("%s is not in the README work directory (a copy of examples/)", prog)
		}
		return nil
	}
	name := filepath.Base(prog)
	return fmt.Errorf("%s is not on a fresh machine (the README test runs go, rlbench and the POSIX shell's utilities): mark the block `sh needs-%s` with a first line `# needs: ...` saying what to install", prog, name)
}

// readmeCheckScript returns an error naming the README line of the first
// command of the sh script block b that a fresh machine does not have
// (readmeFreshProgram) nor readmeInstallable; functions the script defines
// are its own.
func readmeCheckScript(b readmeBlock, dir string) error {
	f, err := b.parse()
	if err != nil {
		return err
	}
	own := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok {
			own[fd.Name.Value] = true
		}
		return true
	})
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || err != nil || len(call.Args) == 0 {
			return err == nil
		}
		prog := call.Args[0].Lit() // "" for a word with expansions: not checked
		if prog == "" || own[prog] || readmeInstallable[prog] {
			return true
		}
		if e := readmeFreshProgram(prog, dir); e != nil {
			err = fmt.Errorf("README.md:%d: %v", b.line+int(call.Pos().Line()), e)
		}
		return err == nil
	})
	return err
}

// readmeCheckUnrun checks what can be checked of a block the test does not
// run (needs-WORD, and needs-real-parts without the parts): it parses as
// POSIX shell, and each of its rlbench commands names a subcommand, flags
// and arguments that rlbench accepts (cobra's Find, ParseFlags and
// ValidateArgs; what the command checks when it runs is not checked).
// Variables are expanded as empty, command substitutions are left as
// written.
func readmeCheckUnrun(b readmeBlock) error {
	f, err := b.parse()
	if err != nil {
		return err
	}
	cfg := &expand.Config{Env: expand.ListEnviron()}
	var errs []string
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var args []string
		for _, w := range call.Args {
			a, err := expand.Literal(cfg, w)
			if err != nil {
				a = b.text[w.Pos().Offset():w.End().Offset()]
			}
			args = append(args, a)
		}
		switch {
		case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/rlbench":
			args = args[3:]
		case args[0] == "rlbench" || args[0] == "./rlbench":
			args = args[1:]
		default:
			return true
		}
		var out bytes.Buffer
		root := NewRoot(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		cmd, rest, err := root.Find(args)
		if err == nil {
			err = cmd.ParseFlags(rest)
		}
		if err == nil {
			err = cmd.ValidateArgs(cmd.Flags().Args())
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("README.md:%d: rlbench %s: %v (not run: the block %s, but its rlbench commands must be valid)",
				b.line+int(call.Pos().Line()), strings.Join(args, " "), err, strings.Join(b.markers, " ")))
		}
		return true
	})
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// readmeScriptPrelude runs before a script block: `go run ./cmd/rlbench`
// is rlbench; any other go command is refused. Then the block's commands
// are traced (set -x) on its stderr.
const readmeScriptPrelude = `go() {
  if [ "$1" = run ] && [ "$2" = ./cmd/rlbench ]; then shift 2; rlbench "$@"; return; fi
  echo "README test: go $* is not run in a script block" >&2; return 2
}
set -x
`

// tsQuote quotes s as one testscript word (single quotes disable its
// variable expansion; a quote inside is doubled).
func tsQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// translate turns the runnable block b into testscript lines, expanding
// words in dir and moving the README's ports to base (readmeMovePorts). It
// also returns how many commands run.
func translate(b readmeBlock, dir string, base int) (script []string, runs int, err error) {
	f, err := b.parse()
	if err != nil {
		return nil, 0, err
	}
	cfg := &expand.Config{Env: expand.ListEnviron("PWD=" + dir), ReadDir2: os.ReadDir, NoUnset: true}
	jobs := 0
	needWait := "" // the background command the next one must wait for
	for _, st := range f.Stmts {
		line := b.line + int(st.Pos().Line())
		src := strings.TrimSuffix(strings.TrimSpace(b.text[st.Pos().Offset():st.End().Offset()]), ";")
		fail := func(format string, a ...any) error {
			return fmt.Errorf("README.md:%d: %s: %s", line, src, fmt.Sprintf(format, a...))
		}
		script = append(script, fmt.Sprintf("# README.md:%d: %s", line, strings.ReplaceAll(src, "\n", " ")))
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || st.Negated || st.Coprocess || st.Disown {
			return nil, 0, fail("the README test runs simple commands only (no pipes, &&, ||, !, loops or subshells); simplify it or mark the block needs-WORD")
		}
		if len(call.Assigns) > 0 {
			return nil, 0, fail("variable assignments are not run by the README test; mark the block needs-WORD")
		}
		var args []string
		if len(call.Args) > 0 && call.Args[0].Lit() == "kill" {
			args = []string{"kill"} // its words are read as written, below
		} else if args, err = expand.Fields(cfg, call.Args...); err != nil {
			return nil, 0, fail("%v", err)
		}
		var out string
		for _, r := range st.Redirs {
			if r.Op != syntax.RdrOut || r.N != nil || out != "" {
				return nil, 0, fail("the README test runs only one `> FILE` redirection")
			}
			if out, err = expand.Literal(cfg, r.Word); err != nil {
				return nil, 0, fail("%v", err)
			}
		}
		if len(args) == 0 {
			return nil, 0, fail("nothing to run")
		}
		if needWait != "" {
			w := strings.Join(args, " ")
			if !strings.HasPrefix(w, "rlbench wait ") && !strings.HasPrefix(w, "./rlbench wait ") && !strings.HasPrefix(w, "go run ./cmd/rlbench wait ") {
				return nil, 0, fail("the command after `%s` must be `./rlbench wait URL...` for its readiness URLs: a reader's shell goes on at once", needWait)
			}
			needWait = ""
		}
		// Any other program runs as it is, from PATH: a fresh machine must
		// have it, or the block needs marking.
		if err := readmeFreshProgram(args[0], dir); err != nil {
			return nil, 0, fail("%v", err)
		}
		switch {
		case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/rlbench":
			args = append([]string{"rlbench"}, args[3:]...)
			if st.Background {
				return nil, 0, fail("`go run` in the background: kill would stop go, not rlbench (go run does not pass signals on); build the binary and run ./rlbench")
			}
		case args[0] == "rlbench" || args[0] == "./rlbench":
			args[0] = "rlbench"
		case strings.Join(args, " ") == "go build -o rlbench ./cmd/rlbench" || readmeInstalls(strings.Join(args, " ")):
			script = append(script, "# (rlbench is this test binary's command, built already)")
			continue
		case len(args) >= 2 && args[0] == "go" && args[1] == "test":
			script = append(script, "# (the test suite: this test runs inside it)")
			continue
		case args[0] == "go":
			return nil, 0, fail("the README test runs go run ./cmd/rlbench, go build -o rlbench ./cmd/rlbench, go install ./cmd/rlbench (or github.com/rlbench/rlbench/cmd/rlbench@VERSION) and go test only")
		case args[0] == "kill" || args[0] == "wait":
			if st.Background || out != "" {
				return nil, 0, fail("kill and wait run in the foreground, without redirection")
			}
			if args[0] == "wait" {
				if len(args) != 1 {
					return nil, 0, fail("the README test runs `wait` without arguments (all background jobs)")
				}
				script = append(script, "readme-wait")
				continue
			}
			// The words as written: $! is the shell's, not expanded here.
			var raw []string
			for _, w := range call.Args {
				raw = append(raw, b.text[w.Pos().Offset():w.End().Offset()])
			}
			sig, job := "TERM", ""
			switch len(raw) {
			case 2:
				job = raw[1]
			case 3:
				sig, job = strings.TrimPrefix(raw[1], "-"), raw[2]
			}
			if strings.HasPrefix(job, "%") {
				return nil, 0, fail("use `kill [-SIGNAL] $!`: dash (Debian's sh) has no job control in a script, so `kill %%N` fails there")
			}
			if job != "$!" || jobs == 0 {
				return nil, 0, fail("the README test runs `kill [-SIGNAL] $!` after a background job (the block has %d)", jobs)
			}
			script = append(script, fmt.Sprintf("readme-kill %s %d", sig, jobs))
			continue
		}
		args = readmeMovePorts(args, base)
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = tsQuote(a)
		}
		if st.Background {
			if out != "" {
				return nil, 0, fail("a background job's output goes to the test log, not to a file")
			}
			jobs++
			needWait = src
			script = append(script, "readme-bg "+strings.Join(quoted, " "))
			runs++
			continue
		}
		script = append(script, "exec "+strings.Join(quoted, " "))
		if out != "" {
			script = append(script, "cp stdout "+tsQuote(out))
		}
		runs++
	}
	script = append(script, "readme-end")
	return script, runs, nil
}

// readmeJob is a background job of a block.
type readmeJob struct {
	name   string
	cmd    *exec.Cmd
	stdout bytes.Buffer // after the first line
	stderr bytes.Buffer
	mu     sync.Mutex
	done   chan struct{} // closed when the process has exited
	err    error         // its exit, once done
	waited bool
}

type readmeJobsKey struct{}
type readmeEnvKey struct{}

// readmeJobs are the background jobs of one script.
type readmeJobs struct{ list []*readmeJob }

var readmeCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	// readme-bg PROG ARGS...: start PROG in the background and return once
	// it has printed its first line (the address line) on stdout.
	"readme-bg": func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 1 {
			ts.Fatalf("usage: readme-bg PROG ARGS...")
		}
		jobs := ts.Value(readmeJobsKey{}).(*readmeJobs)
		prog, err := exec.LookPath(args[0])
		ts.Check(err)
		j := &readmeJob{name: strings.Join(args, " "), done: make(chan struct{})}
		j.cmd = exec.Command(prog, args[1:]...)
		j.cmd.Dir = ts.MkAbs(".")
		j.cmd.Env = append(append([]string(nil), ts.Value(readmeEnvKey{}).([]string)...), "PWD="+j.cmd.Dir)
		j.cmd.Stderr = &lockedWriter{mu: &j.mu, w: &j.stderr}
		out, err := j.cmd.StdoutPipe()
		ts.Check(err)
		ts.Check(j.cmd.Start())
		jobs.list = append(jobs.list, j)
		first := make(chan string, 1)
		go func() {
			r := bufio.NewReader(out)
			line, err := r.ReadString('\n')
			if err == nil {
				first <- strings.TrimSpace(line)
			}
			close(first)
			_, _ = io.Copy(&lockedWriter{mu: &j.mu, w: &j.stdout}, r)
			j.err = j.cmd.Wait()
			close(j.done)
		}()
		ts.Defer(func() { // a job left running when the script fails
			select {
			case <-j.done:
			default:
				_ = j.cmd.Process.Kill()
				<-j.done
			}
		})
		select {
		case line, ok := <-first:
			if !ok {
				<-j.done
				ts.Fatalf("%s exited (%v) before printing its address line; stderr:\n%s", j.name, j.err, j.stderr.String())
			}
			if !json.Valid([]byte(line)) {
				ts.Fatalf("%s printed %q first, not its JSON address line", j.name, line)
			}
			ts.Logf("[background %d, pid %d] %s", len(jobs.list), j.cmd.Process.Pid, line)
		case <-time.After(30 * time.Second):
			ts.Fatalf("%s printed no address line in 30s", j.name)
		}
	},
	// readme-sh FILE: run FILE with sh -e in its own process group, which
	// must be empty when it exits (what is left is killed, and fails).
	"readme-sh": func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: readme-sh FILE")
		}
		// Files, not pipes: a process left running keeps a pipe open, and
		// Wait would wait for it.
		out, err := os.Create(filepath.Join(ts.Getenv("WORK"), "readme-sh.stdout"))
		ts.Check(err)
		defer out.Close()
		errOut, err := os.Create(filepath.Join(ts.Getenv("WORK"), "readme-sh.stderr"))
		ts.Check(err)
		defer errOut.Close()
		cmd := exec.Command("sh", "-e", ts.MkAbs(args[0]))
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = append(append([]string(nil), ts.Value(readmeEnvKey{}).([]string)...), "PWD="+cmd.Dir)
		cmd.Stdout, cmd.Stderr = out, errOut
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		ts.Check(cmd.Start())
		pgid := cmd.Process.Pid
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			err = fmt.Errorf("still running after 60s: %v", <-done)
		}
		left := syscall.Kill(-pgid, 0) == nil
		if left {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		ts.Logf("[sh] stdout:\n%s[sh] stderr:\n%s", ts.ReadFile(out.Name()), ts.ReadFile(errOut.Name()))
		if err != nil {
			ts.Fatalf("sh -e %s: %v (the block's commands are traced, + ..., in its stderr above)", args[0], err)
		}
		if left {
			ts.Fatalf("the block left processes running (process group %d, killed): stop what it starts (kill -INT $PID; wait $PID)", pgid)
		}
	},
	// readme-kill SIGNAL N: signal the N-th background job by its PID.
	"readme-kill": func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: readme-kill SIGNAL N")
		}
		jobs := ts.Value(readmeJobsKey{}).(*readmeJobs)
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		if n < 1 || n > len(jobs.list) {
			ts.Fatalf("no background job %d", n)
		}
		sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM}[args[0]]
		if sig == 0 {
			ts.Fatalf("readme-kill: signal %q: the README test sends INT or TERM", args[0])
		}
		ts.Check(jobs.list[n-1].cmd.Process.Signal(sig))
	},
	// readme-wait: wait for every background job; each must exit 0.
	"readme-wait": func(ts *testscript.TestScript, neg bool, args []string) {
		jobs := ts.Value(readmeJobsKey{}).(*readmeJobs)
		for i, j := range jobs.list {
			if j.waited {
				continue
			}
			select {
			case <-j.done:
			case <-time.After(30 * time.Second):
				ts.Fatalf("background job %d (%s) still running 30s after wait", i+1, j.name)
			}
			j.waited = true
			j.mu.Lock()
			ts.Logf("[background %d] exit %v; stdout after the address line:\n%sstderr:\n%s", i+1, j.err, j.stdout.String(), j.stderr.String())
			j.mu.Unlock()
			if j.err != nil {
				ts.Fatalf("background job %d (%s): %v", i+1, j.name, j.err)
			}
		}
	},
	// readme-end: the block stopped everything it started.
	"readme-end": func(ts *testscript.TestScript, neg bool, args []string) {
		for i, j := range ts.Value(readmeJobsKey{}).(*readmeJobs).list {
			if !j.waited {
				ts.Fatalf("background job %d (%s) was not stopped and waited for by the block: add `kill -INT $!` and `wait` after it", i+1, j.name)
			}
		}
	},
	// readme-output FILE: every non-blank line of FILE is a line of the
	// last command's stdout (trailing spaces ignored).
	"readme-output": func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: readme-output FILE")
		}
		if missing := readmeMissingLines(ts.ReadFile("stdout"), ts.ReadFile(args[0])); len(missing) > 0 {
			ts.Fatalf("the README's output block has %d line(s) the command did not print:\n%s", len(missing), strings.Join(missing, "\n"))
		}
	},
}

// readmeMissingLines returns the non-blank lines of want that are not lines
// of out (trailing spaces ignored).
func readmeMissingLines(out, want string) []string {
	have := map[string]bool{}
	for l := range strings.Lines(out) {
		have[strings.TrimRight(l, " \t\r\n")] = true
	}
	var missing []string
	for l := range strings.Lines(want) {
		l = strings.TrimRight(l, " \t\r\n")
		if l != "" && !have[l] {
			missing = append(missing, l)
		}
	}
	return missing
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// readmeFileEnv names a Markdown file for TestREADME to run instead of the
// repository's README.md, with the examples/ directory beside it (if any):
// TestREADMEFailures runs TestREADME on small synthetic READMEs in a child
// test process to show how it fails.
const readmeFileEnv = "RLBENCH_README_TEST_FILE"

// TestREADME runs README.md's examples (see the comment at the top of this
// file for the rules).
func TestREADME(t *testing.T) {
	file := filepath.Join(testfix.RepoRoot(t), "README.md")
	if f := os.Getenv(readmeFileEnv); f != "" {
		file = f
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := readmeBlocks(src)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]readmeKind, len(blocks))
	reasons := make([]string, len(blocks))
	var errs []string
	for i, b := range blocks {
		if kinds[i], reasons[i], err = classify(b); err != nil {
			errs = append(errs, err.Error())
		}
		if kinds[i] == kindOutput && (i == 0 || kinds[i-1] != kindRun && kinds[i-1] != kindRealParts) {
			errs = append(errs, fmt.Sprintf("%s: an output block must follow the sh block whose output it shows", b))
		}
	}
	if len(blocks) == 0 || kinds[0] != kindRun || !firstScreen(blocks[0].text) {
		errs = append(errs, "README.md: the first code block must be the first screen's sh block: the demo and the test command (`go run ./cmd/rlbench demo` and `go test ...`), or the install line, `rlbench demo` and `go test ...`")
	}
	if len(errs) > 0 {
		t.Fatalf("README.md has code blocks the README test cannot classify:\n%s", strings.Join(errs, "\n"))
	}
	// A reader's shell has rlbench only after the install line: a failure,
	// but the blocks still run.
	for _, e := range readmeInstallOrder(blocks) {
		t.Error(e)
	}

	work := t.TempDir()
	if examples := filepath.Join(filepath.Dir(file), "examples"); readmeIsDir(examples) {
		if err := os.CopyFS(filepath.Join(work, "examples"), os.DirFS(examples)); err != nil {
			t.Fatal(err)
		}
	}
	// ./rlbench, as a reader's `go build -o rlbench ./cmd/rlbench` leaves it
	// (for sh script blocks): this test binary's rlbench command.
	prog, err := exec.LookPath("rlbench")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prog, filepath.Join(work, "rlbench")); err != nil {
		t.Fatal(err)
	}
	// rlbench's runs directory (a demo or run without --root, a lab without --receipts) is a directory of its own,
	// outside the work directory: a block that names a run directory must give --root, as a reader's must.
	homeEnv := userdirs.EnvHome + "=" + t.TempDir()
	base := testfix.FreePortSpan(t, readmePortHigh-readmePortLow+1)
	t.Logf("the README's ports %d..%d run as %d..%d; its text is otherwise executed as written", readmePortLow, readmePortHigh, base, base+readmePortHigh-readmePortLow)
	scripts := t.TempDir()
	for i, b := range blocks {
		switch kinds[i] {
		case kindDoc, kindOutput:
			continue
		case kindNeeds:
			t.Logf("%s: not run, needs: %s", b, reasons[i])
			if err := readmeCheckUnrun(b); err != nil {
				t.Error(err)
			}
			continue
		case kindScript:
			t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
				if err := readmeCheckScript(b, work); err != nil {
					t.Fatal(err)
				}
				readmeNeedInstallables(t, readmeScriptInstallables(b))
				archive := fmt.Sprintf("# %s, run by sh -e in the README work directory\nreadme-sh $WORK/readme-block.sh\n-- readme-block.sh --\n%s%s",
					b, readmeScriptPrelude, readmeMoveTextPorts(b.text, base))
				runReadmeScript(t, filepath.Join(scripts, fmt.Sprintf("block%03d.txtar", i)), archive, work, []string{homeEnv})
			})
			continue
		}
		name := fmt.Sprintf("README.md:%d", b.line)
		t.Run(name, func(t *testing.T) {
			env := []string{homeEnv}
			if kinds[i] == kindRealParts {
				if err := readmeCheckUnrun(b); err != nil {
					t.Fatal(err)
				}
				env = append(env, readmeRealParts(t, reasons[i])...)
			}
			lines, runs, err := translate(b, work, base)
			if err != nil {
				t.Fatal(err)
			}
			if runs == 0 {
				t.Fatalf("%s runs no command", b)
			}
			archive := fmt.Sprintf("# %s, executed in the README work directory\n", b)
			archive += strings.Join(lines, "\n") + "\n"
			if i+1 < len(blocks) && kinds[i+1] == kindOutput {
				// After the block's last command (readme-end checks nothing
				// of stdout): check the output block against it.
				archive = strings.TrimSuffix(archive, "readme-end\n") + "readme-output $WORK/readme-output.txt\nreadme-end\n"
				archive += "-- readme-output.txt --\n" + blocks[i+1].text
			}
			runReadmeScript(t, filepath.Join(scripts, fmt.Sprintf("block%03d.txtar", i)), archive, work, env)
		})
	}
	t.Run("git status stays clean", func(t *testing.T) { readmeCheckClean(t, filepath.Dir(file), work) })
}

// readmeIsDir reports whether path is a directory.
func readmeIsDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// runReadmeScript writes archive to file and runs it with testscript in
// the README work directory, env added to the script's environment.
func runReadmeScript(t *testing.T, file, archive, work string, env []string) {
	if err := os.WriteFile(file, []byte(archive), 0o644); err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, readmeParams(file, work, env))
}

// readmeParams are the testscript parameters of one README block's script.
func readmeParams(file, work string, env []string) testscript.Params {
	return testscript.Params{
		Files:               []string{file},
		RequireExplicitExec: true,
		Cmds:                readmeCmds,
		Setup: func(e *testscript.Env) error {
			e.Vars = append(e.Vars, env...)
			if os.Getenv("GORACE") == "" {
				// A -race binary sleeps 1 s at exit by default
				// (atexit_sleep_ms), once per README command.
				e.Vars = append(e.Vars, "GORACE=atexit_sleep_ms=10")
			}
			e.Cd = work
			e.Values[readmeJobsKey{}] = &readmeJobs{}
			e.Values[readmeEnvKey{}] = append([]string(nil), e.Vars...)
			return nil
		},
	}
}

// firstScreen reports whether the block text is the first-screen commands:
// the demo, then the test command; or the install line (readmeInstalls),
// the demo (`rlbench demo` or `go run ./cmd/rlbench demo`), then the test
// command.
func firstScreen(s string) bool {
	var cmds []string
	for l := range strings.Lines(s) {
		if c, _, _ := strings.Cut(l, "#"); strings.TrimSpace(c) != "" {
			cmds = append(cmds, strings.Join(strings.Fields(c), " "))
		}
	}
	if len(cmds) == 3 && readmeInstalls(cmds[0]) && cmds[1] == "rlbench demo" {
		return strings.HasPrefix(cmds[2], "go test ")
	}
	if len(cmds) == 3 && readmeInstalls(cmds[0]) {
		cmds = cmds[1:]
	}
	return len(cmds) == 2 && cmds[0] == "go run ./cmd/rlbench demo" && strings.HasPrefix(cmds[1], "go test ")
}

// readmeRealParts returns the environment that points a needs-real-parts
// block at the installed real parts, or skips the block: without the
// integration tag, or without the parts (unless RLBENCH_REQUIRE_REAL_PARTS=1:
// then it fails).
func readmeRealParts(t *testing.T, reason string) []string {
	t.Helper()
	if !readmeIntegration {
		t.Skipf("needs: %s; run by go test -tags integration", reason)
	}
	rls, err := realparts.FindRLS()
	var redis string
	if err == nil {
		redis, err = realparts.FindRedis()
	}
	if err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatalf("RLBENCH_REQUIRE_REAL_PARTS=1 and %v", err)
		}
		t.Skipf("needs: %s: %v", reason, err)
	}
	return []string{realparts.EnvRLSBin + "=" + rls, realparts.EnvRedisBin + "=" + redis}
}
