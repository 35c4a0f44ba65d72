package evidence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// scenarioWith writes a minimal scenario directory (attack.json, one
// request) whose receipts.jsonl is written by w's caller.
func scenarioWith(t *testing.T) Dir {
	t.Helper()
	d := Dir(t.TempDir())
	writeFile(t, d.Attack(), `{"complete":true,"sent":1}`)
	writeFile(t, d.Requests(), `{"id":"a","target":"p","code":200,"sent_ns":1,"latency_ns":1}`+"\n")
	return d
}

func TestSealClosedFileLoadsClean(t *testing.T) {
	for name, create := range map[string]func(string) (*Writer, error){"buffered": Create, "write-through": CreateSync} {
		d := scenarioWith(t)
		w, err := create(d.Receipts())
		if err != nil {
			t.Fatal(err)
		}
		st, err := ReadFileState(d.Receipts())
		if err != nil || st.State != StateOpen || st.File != ReceiptsFile || st.PID != os.Getpid() || st.Writer == "" {
			t.Fatalf("%s: state before the first line %+v %v", name, st, err)
		}
		for i := range 3 {
			id := fmt.Sprint("a", i)
			if err := w.Write(Receipt{ID: &id, RecvNs: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(d.Receipts())
		st, err = ReadFileState(d.Receipts())
		if err != nil || st.State != StateClosed || st.Records != 3 || st.Bytes != fi.Size() || st.Error != "" || st.ClosedNs < st.OpenedNs {
			t.Fatalf("%s: closed state %+v %v (file %d bytes)", name, st, err, fi.Size())
		}
		if p := problemsOf(LoadScenario(t.Context(), string(d), false), ReceiptsFile); len(p) != 0 {
			t.Errorf("%s: problems %q", name, p)
		}
	}
}

// TestSealOpenIsIncomplete: a file whose writer never closed it (the
// recorder was killed: here, the state is read while the writer is still
// open, as a SIGKILL leaves it) is a Problem naming the file, which
// analyze turns into NOT_RUN — never "lost". A file without a sidecar, from
// a writer before seals, stays clean.
func TestSealOpenIsIncomplete(t *testing.T) {
	d := scenarioWith(t)
	w, err := CreateSync(d.Receipts())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	id := "a"
	if err := w.Write(Receipt{ID: &id, RecvNs: 1}); err != nil {
		t.Fatal(err)
	}
	got := problemsOf(LoadScenario(t.Context(), string(d), false), ReceiptsFile)
	if len(got) != 1 || !strings.Contains(got[0], d.Receipts()+": never closed by its writer") || !strings.Contains(got[0], "killed or crashed") {
		t.Errorf("open: problems %q", got)
	}

	old := scenarioWith(t)
	writeFile(t, old.Receipts(), `{"id":"a","recv_ns":1}`+"\n")
	if got := problemsOf(LoadScenario(t.Context(), string(old), false), ReceiptsFile); len(got) != 0 {
		t.Errorf("a file without a seal (older writer): problems %q", got)
	}
}

// failAfter fails every write after the first n bytes with ENOSPC.
type failAfter struct {
	w    io.Writer
	left int
}

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.left {
		n, _ := f.w.Write(b[:f.left])
		f.left = 0
		return n, &os.PathError{Op: "write", Path: "receipts.jsonl", Err: syscall.ENOSPC}
	}
	f.left -= len(b)
	return f.w.Write(b)
}

func (f *failAfter) Close() error { return f.w.(io.Closer).Close() }

// TestSealRecordsWriteError: a write-through Writer whose file fails
// returns the error from that very Write, and every later one; its close
// record keeps the error, and Load reports it.
func TestSealRecordsWriteError(t *testing.T) {
	d := scenarioWith(t)
	w, err := create(d.Receipts(), func(f io.Writer) *Writer { return NewSyncWriter(&failAfter{w: f, left: 120}) })
	if err != nil {
		t.Fatal(err)
	}
	id := "a"
	var errs []error
	for range 4 {
		errs = append(errs, w.Write(Receipt{ID: &id, RecvNs: 1}))
	}
	if errs[0] != nil || !errors.Is(errs[1], syscall.ENOSPC) || !errors.Is(errs[3], syscall.ENOSPC) {
		t.Fatalf("write errors %v", errs)
	}
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Close: %v", err)
	}
	st, err := ReadFileState(d.Receipts())
	if err != nil || st.State != StateClosed || !strings.Contains(st.Error, "no space left on device") || st.Records != 1 {
		t.Fatalf("state %+v %v", st, err)
	}
	got := problemsOf(LoadScenario(t.Context(), string(d), false), ReceiptsFile)
	if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), "its writer (") || !strings.Contains(strings.Join(got, "\n"), "no space left on device") {
		t.Errorf("problems %q", got)
	}
}

// TestSealSizeChanged: lines appended after the close record are reported.
func TestSealSizeChanged(t *testing.T) {
	d := scenarioWith(t)
	w, err := Create(d.Receipts())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(d.Receipts(), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"id":"a","recv_ns":1}` + "\n")
	f.Close()
	got := problemsOf(LoadScenario(t.Context(), string(d), false), ReceiptsFile)
	if len(got) != 1 || !strings.Contains(got[0], "closed it at 0 bytes: the file changed") {
		t.Errorf("problems %q", got)
	}
	// A torn close record is as incomplete as an open one.
	writeFile(t, StatePath(d.Receipts()), `{"schema":"`+StateSchema+`","state":"clo`)
	if got := problemsOf(LoadScenario(t.Context(), string(d), false), ReceiptsFile); len(got) != 1 || !strings.Contains(got[0], "close record is unreadable") {
		t.Errorf("torn: problems %q", got)
	}
}

// TestSyncWriterWritesThrough: every line a Write returned for is in the
// file, before Close, under concurrent writers; the counts add up.
func TestSyncWriterWritesThrough(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := CreateSync(p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				id := fmt.Sprintf("g%d-%d", g, i)
				if err := w.Write(Receipt{ID: &id}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := 0 // before Close: nothing is buffered
	if err := ReadFile(p, func(int, *Receipt) error { seen++; return nil }); err != nil || seen != 2400 {
		t.Fatalf("before Close: %d lines, %v", seen, err)
	}
	lines, n := w.Written()
	fi, _ := os.Stat(p)
	if lines != 2400 || n != fi.Size() {
		t.Errorf("Written %d lines %d bytes, file %d bytes", lines, n, fi.Size())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(Receipt{}); err == nil {
		t.Error("write after Close succeeded")
	}
}
