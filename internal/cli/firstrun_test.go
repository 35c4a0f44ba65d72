package cli

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/buildinfo"
	"github.com/spf13/cobra"
)

// `rlbench --version` is the build info's line (evidence/buildinfo), not a
// bare "(devel)": the toolchain at least, and the revision when the build
// recorded one (a test binary records none, so the line says so).
func TestVersionFlag(t *testing.T) {
	code, out, errOut := runCLI(t, "--version")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "rlbench version " + buildinfo.Read().String() + "\n"
	if out != want {
		t.Fatalf("--version printed %q, want %q", out, want)
	}
	if !strings.Contains(out, runtime.Version()) || strings.TrimSpace(out) == "rlbench version (devel)" {
		t.Fatalf("--version printed %q: no toolchain, or (devel) alone", out)
	}
}

// Papercuts of issue 25 in attack's flags: --ids 0 says what --ids wants;
// a URL without NAME= is the only target, named after its host:port, and
// is refused beside another target.
func TestAttackFirstRunFlags(t *testing.T) {
	one := func(name, u string) *AttackOptions {
		return &AttackOptions{IO: tio, Targets: []attack.Target{{Name: name, URL: u}}, IDs: 3, IDPrefix: "req", Split: attack.Split{Mode: attack.SplitEven},
			Seed: 1, Method: "GET", Path: "/", Timeout: 10 * time.Second, Out: "ev", TargetsFormat: "http", WarmAhead: attack.DefaultWarmAhead, Engine: "auto"}
	}
	testCmd(t, NewAttackCmd, []cmdCase[AttackOptions]{
		{name: "ids 0", argv: argv("--target a=http://127.0.0.1:1 --ids 0 --out ev"), err: "--ids must be at least 1, not 0"},
		{name: "bare URL", argv: argv("--target http://127.0.0.1:10000 --ids 3 --out ev"), want: one("127.0.0.1:10000", "http://127.0.0.1:10000")},
		{name: "bare URL with path", argv: argv("--target https://example.com/api --ids 3 --out ev"), want: one("example.com", "https://example.com/api")},
		{name: "bare URL and a named one", argv: argv("--target http://127.0.0.1:1 --target b=http://127.0.0.1:2 --ids 3 --out ev"),
			err: "--target b=http://127.0.0.1:2: with more than one target, give each as NAME=URL (the other is http://127.0.0.1:1)"},
		{name: "named and a bare URL", argv: argv("--target a=http://127.0.0.1:1 --target http://127.0.0.1:2 --ids 3 --out ev"),
			err: "--target http://127.0.0.1:2: with more than one target, give each as NAME=URL (the other is a)"},
		{name: "two bare URLs", argv: argv("--target http://127.0.0.1:1 --target http://127.0.0.1:2 --ids 3 --out ev"), err: "with more than one target, give each as NAME=URL"},
		{name: "bare URL without host", argv: argv("--target http:///x --ids 3 --out ev"), err: "want http(s)://host[:port][/path], or NAME=URL"},
	})
}

// A bare --target URL runs end to end: the requests are recorded under the
// target host:port and analyze reads them (NOT_RUN: an httptest server
// writes no receipts).
func TestAttackBareTarget(t *testing.T) {
	srv := newIDServer(t, nil)
	out := filepath.Join(t.TempDir(), "ev")
	code, _, errOut := runCLI(t, "attack", "--target", srv.URL, "--ids", "3", "--out", out, "-q")
	if code != ExitOK {
		t.Fatalf("attack: exit %d: %s", code, errOut)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	data, err := os.ReadFile(filepath.Join(out, evidence.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"target":"`+host+`"`); n != 3 {
		t.Fatalf("%d of 3 requests name target %s:\n%s", n, host, data)
	}
	code, stdout, errOut := runCLI(t, "analyze", "--expect-admitted", "3", out)
	if code != ExitNotRun || !strings.Contains(stdout, host) {
		t.Fatalf("analyze: exit %d, stdout without %s:\n%s\n%s", code, host, stdout, errOut)
	}
}

// A command run without its argument says what it needs, with an example,
// and points at its own help (exit 2); cobra's "accepts 1 arg(s), received
// 0" is not the message.
func TestMissingArgumentSaysWhat(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze"}, "rlbench: analyze needs an evidence or run directory, e.g. rlbench analyze " + latestRun() + "\nRun 'rlbench analyze --help' for usage.\n"},
		{[]string{"run"}, "rlbench: run needs a plan file, e.g. rlbench run examples/e06/plan.yaml\nRun 'rlbench run --help' for usage.\n"},
		{[]string{"collect", "rls-log"}, "rlbench: rls-log needs envoyproxy/ratelimit's log file (or - for stdin), e.g. rlbench collect rls-log ratelimit.log --out ev\nRun 'rlbench collect rls-log --help' for usage.\n"},
		// Two arguments where one is wanted: cobra's count, and the command's help.
		{[]string{"analyze", "a", "b"}, "rlbench: accepts 1 arg(s), received 2\nRun 'rlbench analyze --help' for usage.\n"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != ExitUsage || errOut != c.want {
			t.Errorf("rlbench %v: exit %d, stderr %q; want exit 2, %q", c.args, code, errOut, c.want)
		}
	}
}

// Every command's argument check has a hint: a command that takes
// arguments and has none in argHints would fall back to cobra's count.
func TestArgHintsCoverCommands(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		if c.Runnable() && c.Args != nil && c.Args(c, nil) != nil && !c.HasSubCommands() {
			if _, ok := argHints[c.CommandPath()]; !ok {
				t.Errorf("%s needs arguments but has no argHints entry", c.CommandPath())
			}
		}
	}
	walk(NewRoot(tio))
}

// A missing input path is a usage error (exit 2) in every command that
// reads one, through the one exit-code mapping, and names the path.
func TestMissingInputIsUsage(t *testing.T) {
	dir := t.TempDir()
	nope := filepath.Join(dir, "nope")
	for _, args := range [][]string{
		{"analyze", nope},
		{"report", nope, "--html", filepath.Join(dir, "r.html")},
		{"run", nope + ".yaml"},
		{"simulate", nope + ".yaml"},
		{"lint", nope + ".yaml"},
		{"export", "vegeta", nope},
		{"merge", nope, "--out", filepath.Join(dir, "merged")},
		{"collect", "rls-log", nope, "--out", filepath.Join(dir, "ev")},
		{"collect", "envoy-access-log", nope},
		{"collect", "nginx-access-log", nope, "--out", filepath.Join(dir, "ev"), "--proxy", "edge"},
		{"attack", "--target", "a=http://127.0.0.1:1", "--ids-file", nope, "--out", filepath.Join(dir, "ev")},
		{"lab", "-f", nope + ".yaml"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, nope) {
			t.Errorf("rlbench %v: exit %d, stderr %q; want exit 2 naming %s", args, code, errOut, nope)
		}
	}
}

// The JUnit report of <root>/latest names its suite and classes after the
// run directory the link points at (its stamp), not "latest".
func TestJUnitOfLatestNamesTheRun(t *testing.T) {
	root := t.TempDir()
	const stamp = "20261205T101500Z-1"
	if err := os.CopyFS(filepath.Join(root, stamp), os.DirFS(filepath.Join("..", "..", "analyze", "testdata", "v1-release", "e06"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(stamp, filepath.Join(root, evidence.LatestLink)); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "analyze", "--format", "junit", "--status-file", "-", filepath.Join(root, evidence.LatestLink))
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Classname string `xml:"classname,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != stamp || len(doc.Suites[0].Cases) == 0 || doc.Suites[0].Cases[0].Classname != "rlbench."+stamp {
		t.Fatalf("suites %+v: want one suite named %s, classes rlbench.%s", doc.Suites, stamp, stamp)
	}
}

// The example of a missing run directory is the latest run under the
// default root (RLBENCH_HOME here), with the home shortened to ~.
func TestLatestRunExample(t *testing.T) {
	t.Setenv("RLBENCH_HOME", filepath.Join(t.TempDir(), "rh"))
	if got, want := latestRun(), filepath.Join(os.Getenv("RLBENCH_HOME"), "runs", "latest"); got != want {
		t.Errorf("latestRun() = %q, want %q", got, want)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("RLBENCH_HOME", filepath.Join(home, "rh"))
	if got, want := latestRun(), filepath.Join("~", "rh", "runs", "latest"); got != want {
		t.Errorf("under the home: latestRun() = %q, want %q", got, want)
	}
}
