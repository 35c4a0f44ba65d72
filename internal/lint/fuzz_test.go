package lint

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

var codeRE = regexp.MustCompile(`^[EWI]_[A-Z0-9_]+$`)

// FuzzLint: any input lints without a returned error (problems are
// findings), every finding names the file, a line of it (or 0), a level and
// a stable code, the report is deterministic, sorted and marshals, and an
// input with nothing in it always has an error finding. Seeds: the shipped
// Envoy examples, the broken variants of testdata and an alias bomb.
func FuzzLint(f *testing.F) {
	var seeds []string
	for _, dir := range []string{examplesDir(f), "testdata"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("node: {id: x}\nadmin:\n" + testfix.AliasBomb("  ", 4, 4)))
	f.Add([]byte("{}"))
	rls := exampleRLS(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lint := func() *Report {
			rep, err := Lint(context.Background(), []Source{{Name: "f.yaml", R: strings.NewReader(string(data))}}, Options{RLSConfigs: rls})
			if err != nil {
				t.Fatalf("Lint returned an error for an in-memory source: %v", err)
			}
			return rep
		}
		rep := lint()
		lines := yamlLines(data)
		for _, fd := range rep.Findings {
			if fd.File != "f.yaml" && fd.File != rls[0].File {
				t.Fatalf("finding names file %q: %s", fd.File, fd)
			}
			if fd.File == "f.yaml" && (fd.Line < 0 || fd.Line > lines) {
				t.Fatalf("finding at line %d of a %d-line input: %s", fd.Line, lines, fd)
			}
			if fd.Level != LevelError && fd.Level != LevelWarning && fd.Level != LevelInfo || !codeRE.MatchString(fd.Code) || fd.Message == "" {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		if strings.TrimSpace(strings.Trim(string(data), "{}\n\r\t ")) == "" && rep.Errors() == 0 {
			t.Fatalf("empty input %q has no error finding", data)
		}
		sorted := append([]Finding{}, rep.Findings...)
		sortFindings(sorted)
		if !reflect.DeepEqual(sorted, rep.Findings) {
			t.Fatal("findings not sorted")
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("report does not marshal: %v", err)
		}
		if again := lint(); !reflect.DeepEqual(again, rep) {
			t.Fatalf("second lint differs:%s\nvs%s", dump(rep), dump(again))
		}
	})
}

// yamlLines counts lines as YAML does: "\r\n", "\r" and "\n" end a line, and
// so do NEL, LS and PS (yaml.v3 is_break).
func yamlLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1
	for _, r := range s {
		switch r {
		case '\n', '\r', '\u0085', '\u2028', '\u2029':
			n++
		}
	}
	return n
}
