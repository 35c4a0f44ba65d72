package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/internal/userdirs"
	"github.com/rlbench/rlbench/schemas"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(homeM{m}, map[string]func(){
		"rlbench": func() { os.Exit(Main(os.Args[1:], System())) },
	})
}

// homeM runs the package's tests with $RLBENCH_HOME in a temporary directory, removed afterwards, so that a
// test that runs, demos or starts a lab without --root never writes into the user's runs directory (tests that
// look at the default set their own with t.Setenv). Its bin/ links to the user's installed parts (userdirs.Bin),
// which the README's real-parts blocks use.
type homeM struct{ m *testing.M }

func (h homeM) Run() int {
	dir, err := os.MkdirTemp("", "rlbench-home-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if bin, err := userdirs.Bin(); err == nil {
		if _, err := os.Stat(bin); err == nil {
			_ = os.Symlink(bin, filepath.Join(dir, userdirs.BinDir))
		}
	}
	os.Setenv(userdirs.EnvHome, dir)
	code := h.m.Run()
	if binPath != "" { // rlbenchBinary's build (shards_test.go), 66 MB a run otherwise left in $TMPDIR
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	return code
}

// TestScripts runs the end-to-end CLI scripts in testdata/script: the real
// command tree, real lab parts on 127.0.0.1, real exit codes.
func TestScripts(t *testing.T) {
	root := testfix.RepoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", root)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// schemacheck FILE [SCHEMA]: FILE (JSON, or JSON Lines for *.jsonl,
			// every line) validates against schemas/SCHEMA (default the report's).
			"schemacheck": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 1 || len(args) > 2 {
					ts.Fatalf("usage: schemacheck FILE [SCHEMA]")
				}
				name := schemas.Report
				if len(args) == 2 {
					name = args[1]
				}
				data := []byte(ts.ReadFile(args[0]))
				var err error
				if strings.HasSuffix(args[0], ".jsonl") {
					err = schemas.ValidateLines(name, data)
				} else {
					err = schemas.Validate(name, data)
				}
				if neg && err == nil {
					ts.Fatalf("%s matches %s", args[0], name)
				}
				if !neg && err != nil {
					ts.Fatalf("%s: %v", args[0], err)
				}
			},
			// schemacheckdir DIR [MIN]: every JSON file of the evidence layout
			// under DIR matches its schema (schemas.ValidateDir), and there
			// are at least MIN of them.
			"schemacheckdir": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 1 || len(args) > 2 {
					ts.Fatalf("usage: schemacheckdir DIR [MIN]")
				}
				n, err := schemas.ValidateDir(ts.MkAbs(args[0]))
				ts.Check(err)
				if len(args) == 2 {
					min, err := strconv.Atoi(args[1])
					ts.Check(err)
					if n < min {
						ts.Fatalf("%s: %d schema-checked files, want at least %d", args[0], n, min)
					}
				}
				ts.Logf("%s: %d files match their schemas", args[0], n)
			},
		},
	})
}
