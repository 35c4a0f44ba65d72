package evidence_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

// TestSealMatchesSchema: open and closed seals, and one closed with a
// write error (the disk is full), validate against
// schemas/jsonl-state.v1.schema.json, and schemas.ValidateDir finds them
// as files of the layout.
func TestSealMatchesSchema(t *testing.T) {
	d := evidence.Dir(t.TempDir())
	check := func(what, path string) {
		t.Helper()
		b, err := os.ReadFile(evidence.StatePath(path))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(schemas.FileState, b); err != nil {
			t.Errorf("%s: %v\n%s", what, err, b)
		}
	}
	w, err := evidence.CreateSync(d.Receipts())
	if err != nil {
		t.Fatal(err)
	}
	check("open", d.Receipts())
	id := "a"
	if err := w.Write(evidence.Receipt{ID: &id, RecvTime: "2026-12-01T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed", d.Receipts())
	{
		full := filepath.Join(t.TempDir(), evidence.RequestsFile)
		w, err := evidence.CreateSyncFull(full)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(evidence.Request{ID: "x"}); err == nil {
			t.Fatal("a write to a full disk succeeded")
		}
		_ = w.Close()
		check("closed with an error", full)
		if st, err := evidence.ReadFileState(full); err != nil || st.Error == "" {
			t.Errorf("seal %+v %v", st, err)
		}
	}
	if n, err := schemas.ValidateDir(string(d)); err != nil || n != 2 {
		t.Errorf("ValidateDir: %d files, %v; want receipts.jsonl and its seal", n, err)
	}
}
