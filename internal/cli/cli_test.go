package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rlbench/rlbench/schemas"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rlbench": func() { os.Exit(Main(os.Args[1:], System())) },
	})
}

func repoRoot(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestScripts runs the end-to-end CLI scripts in testdata/script: the real
// command tree, real lab parts on 127.0.0.1, real exit codes.
func TestScripts(t *testing.T) {
	root := repoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("REPO", root)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// schemacheck FILE: FILE validates against schemas/report.v1.schema.json.
			"schemacheck": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: schemacheck FILE")
				}
				f, err := schemas.FS.Open(schemas.Report)
				ts.Check(err)
				doc, err := jsonschema.UnmarshalJSON(f)
				ts.Check(err)
				c := jsonschema.NewCompiler()
				ts.Check(c.AddResource(schemas.Report, doc))
				sch, err := c.Compile(schemas.Report)
				ts.Check(err)
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(ts.ReadFile(args[0]))))
				ts.Check(err)
				err = sch.Validate(inst)
				if neg && err == nil {
					ts.Fatalf("%s matches the schema", args[0])
				}
				if !neg && err != nil {
					ts.Fatalf("%s: %v", args[0], err)
				}
			},
		},
	})
}
