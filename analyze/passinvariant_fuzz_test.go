package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// demoScenario is the previous release's demo run (two local buckets of 5,
// 20 IDs, 10 admitted, 10 receipts).
const demoScenario = "testdata/v1-release/demo/01-two-local-buckets/1"

// FuzzJudgeNeverPassesMismatch is the PASS invariant of analyze: the demo's
// requests.jsonl and receipts.jsonl, mutated, never PASS unless requests and
// receipts still match exactly. Whatever the mutation, a PASS must mean
// (checked here from the files with encoding/json, not with analyze's own
// readers): every request ID is unique, every receipt names a request that
// was sent, no ID has two receipts, every 2xx has its receipt (a proxy
// answers 2xx only with the backend's answer), and the backend received
// exactly the 10 the demo's buckets admit.
func FuzzJudgeNeverPassesMismatch(f *testing.F) {
	reqs, err := os.ReadFile(filepath.Join(demoScenario, evidence.RequestsFile))
	if err != nil {
		f.Fatal(err)
	}
	recs, err := os.ReadFile(filepath.Join(demoScenario, evidence.ReceiptsFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(reqs, recs)
	// Seeds that must not PASS: a receipt dropped, a receipt repeated, a
	// rejected request's receipt, the requests cut short.
	lines := bytes.SplitAfter(recs, []byte("\n"))
	f.Add(reqs, bytes.Join(lines[1:], nil))
	f.Add(reqs, append(append([]byte{}, recs...), lines[0]...))
	f.Add(reqs[:len(reqs)/2], recs)
	f.Add(bytes.Replace(reqs, []byte(`"code":200`), []byte(`"code":429`), 1), recs)
	f.Fuzz(func(t *testing.T, reqs, recs []byte) {
		dir := t.TempDir()
		copyDir(t, demoScenario, dir)
		must(t, os.WriteFile(filepath.Join(dir, evidence.RequestsFile), reqs, 0o644))
		must(t, os.WriteFile(filepath.Join(dir, evidence.ReceiptsFile), recs, 0o644))
		rep, err := Analyze(context.Background(), dir, Options{Now: func() time.Time { return time.Unix(0, t0) }})
		if err != nil || rep.Status != evidence.Pass {
			return
		}
		if why := mismatch(t, reqs, recs, 10); why != "" {
			t.Fatalf("PASS although %s; reasons %v", why, rep.Scenarios[0].Reasons)
		}
	})
}

// mismatch says how requests and receipts fail to match exactly (see
// FuzzJudgeNeverPassesMismatch), or "".
func mismatch(t *testing.T, reqs, recs []byte, admitted int) string {
	sent := map[string]int{} // id -> code
	ok := true
	eachJSONLine(t, reqs, func(b []byte) {
		var r struct {
			ID   *string `json:"id"`
			Code int     `json:"code"`
		}
		if json.Unmarshal(b, &r) != nil || r.ID == nil {
			ok = false
			return
		}
		if _, dup := sent[*r.ID]; dup {
			ok = false
		}
		sent[*r.ID] = r.Code
	})
	if !ok {
		return "a request line does not decode, has no id or repeats one"
	}
	got := map[string]int{}
	n := 0
	eachJSONLine(t, recs, func(b []byte) {
		var r struct {
			ID *string `json:"id"`
		}
		if json.Unmarshal(b, &r) != nil || r.ID == nil {
			ok = false
			return
		}
		n++
		got[*r.ID]++
	})
	switch {
	case !ok:
		return "a receipt does not decode or has no id"
	case n != admitted:
		return "the backend holds " + strconv.Itoa(n) + " receipts, not " + strconv.Itoa(admitted)
	}
	for id, k := range got {
		if _, was := sent[id]; !was {
			return "receipt " + id + " names no request"
		}
		if k > 1 {
			return "request " + id + " has " + strconv.Itoa(k) + " receipts"
		}
	}
	for id, code := range sent {
		if code >= 200 && code < 300 && got[id] == 0 {
			return "request " + id + " got " + strconv.Itoa(code) + " without a receipt"
		}
	}
	return ""
}

// copyDir copies the regular files of src (recursively) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	must(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
}
