package cli

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
	"github.com/rlbench/rlbench/schemas"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rlbench": func() { os.Exit(Main(os.Args[1:], System())) },
	})
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
				f, err := schemas.FS.Open(name)
				ts.Check(err)
				doc, err := jsonschema.UnmarshalJSON(f)
				ts.Check(err)
				c := jsonschema.NewCompiler()
				ts.Check(c.AddResource(name, doc))
				sch, err := c.Compile(name)
				ts.Check(err)
				docs := []string{ts.ReadFile(args[0])}
				if strings.HasSuffix(args[0], ".jsonl") {
					docs = strings.Split(strings.TrimSpace(docs[0]), "\n")
				}
				var verr error
				for i, d := range docs {
					inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(d)))
					ts.Check(err)
					if err := sch.Validate(inst); err != nil && verr == nil {
						verr = fmt.Errorf("line %d: %v", i+1, err)
					}
				}
				if neg && verr == nil {
					ts.Fatalf("%s matches %s", args[0], name)
				}
				if !neg && verr != nil {
					ts.Fatalf("%s: %v", args[0], verr)
				}
			},
		},
	})
}
