package schemas

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

// ValidateDir validates every rlbench JSON file under dir (an evidence root,
// run directory or scenario directory) against its schema, chosen by the
// file's place in the layout (evidence.SchemaOf; attack.json by its "schema"
// field), and returns how many files it validated. Files kept in their
// producer's format are skipped; a file that is not part of the layout, or
// that does not match, is an error naming it. Symbolic links (latest) are
// not followed.
func ValidateDir(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		id, ok := evidence.SchemaOf(filepath.ToSlash(rel))
		if !ok {
			return fmt.Errorf("%s: not a file of the evidence layout", p)
		}
		if id == "" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if id == evidence.AttackSchema {
			var probe struct {
				Schema string `json:"schema"`
			}
			if json.Unmarshal(data, &probe) == nil && probe.Schema == evidence.AttackSummarySchema {
				id = evidence.AttackSummarySchema
			}
		}
		name := FileName(id)
		if strings.HasSuffix(p, ".jsonl") {
			err = ValidateLines(name, data)
		} else {
			err = Validate(name, data)
		}
		if err != nil {
			return fmt.Errorf("%s does not match %s: %w", p, name, err)
		}
		n++
		return nil
	})
	return n, err
}
