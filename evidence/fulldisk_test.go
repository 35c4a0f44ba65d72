package evidence

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fullDisk is a file on a disk with room bytes left: a write takes what
// fits and fails with ENOSPC, as write(2) does. Its write number block
// (1-based; 0: none) signals entered and waits for release.
type fullDisk struct {
	f       *os.File
	room    int
	calls   int
	block   int
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	d.calls++
	if d.calls == d.block {
		d.mu.Unlock()
		close(d.entered)
		<-d.release
		d.mu.Lock()
	}
	defer d.mu.Unlock()
	n := min(len(p), d.room)
	n, err := d.f.Write(p[:n])
	d.room -= n
	if err == nil && n < len(p) {
		err = syscall.ENOSPC
	}
	return n, err
}

// line is the 11-byte JSON line of id (one letter).
func line(id string) []byte { return []byte(`{"id":"` + id + `"}`) }

// TestSyncWriterFullDiskKeepsOnlyAcknowledgedLines (issue 27): the
// backend's receipts are written through in batches of concurrent
// requests (group commit). On a full disk, write(2) took the first lines of
// a batch and failed: every Write of the batch returned the error (the
// backend answered those requests 500), yet the lines that fitted stayed
// on the file claiming the status the backend meant to answer, 200. Now the
// file is cut back to the last line a Write returned nil for, and its seal
// counts exactly those lines and says so.
func TestSyncWriterFullDiskKeepsOnlyAcknowledgedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), ReceiptsFile)
	disk := &fullDisk{room: 3*11 + 5, block: 2, entered: make(chan struct{}), release: make(chan struct{})}
	w, err := createOn(path, NewSyncWriter, func(f *os.File) io.Writer { disk.f = f; return disk })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRaw(line("a")); err != nil { // write 1
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	go func() { errs <- w.WriteRaw(line("b")) }() // write 2, held until released
	<-disk.entered
	var batch sync.WaitGroup
	var batchErrs [3]error
	for i, id := range []string{"c", "d", "e"} { // queued while b is written: write 3 is their batch
		batch.Add(1)
		go func() { defer batch.Done(); batchErrs[i] = w.WriteRaw(line(id)) }()
	}
	for queued := int64(0); queued < 3; runtime.Gosched() {
		w.mu.Lock()
		queued = w.pendLines
		w.mu.Unlock()
	}
	close(disk.release)
	if err := <-errs; err != nil {
		t.Fatalf("b (written whole): %v", err)
	}
	batch.Wait()
	for i, err := range batchErrs {
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("write %d of the failed batch: %v, want ENOSPC", i, err)
		}
	}
	if disk.calls != 3 {
		t.Fatalf("%d writes, want 3 (c, d and e in one batch)", disk.calls)
	}
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v", err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "{\"id\":\"a\"}\n{\"id\":\"b\"}\n" {
		t.Errorf("file %q: want a and b only, the lines whose Writes returned nil", b)
	}
	st, err := ReadFileState(path)
	if err != nil || st.State != StateClosed || st.Records != 2 || st.Bytes != 22 || !strings.Contains(st.Error, "no space left on device") ||
		!strings.Contains(st.Error, "cut back to its last acknowledged line, record 2") {
		t.Errorf("seal %+v (%v)", st, err)
	}
	if msg := SealProblem(path); !strings.Contains(msg, "failed") {
		t.Errorf("seal problem %q", msg)
	}
}

// TestBufferedWriterFullDiskCutsAtLastLine: a buffered Writer (the
// attack's requests.jsonl, lines recorded after the response) whose flush
// fits part of its buffer left half a line on the file and a seal counting
// every line accepted. Now the file ends at its last complete line and the
// seal counts the lines on it.
func TestBufferedWriterFullDiskCutsAtLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), RequestsFile)
	disk := &fullDisk{room: 2*11 + 5}
	never := make(chan time.Time) // flushed by the test only
	w, err := createOn(path, func(o io.Writer) *Writer { return newWriter(o, never) }, func(f *os.File) io.Writer { disk.f = f; return disk })
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if err := w.WriteRaw(line(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Flush: %v", err)
	}
	if lines, n := w.Written(); lines != 2 || n != 22 {
		t.Errorf("Written() = %d lines, %d bytes; want 2, 22", lines, n)
	}
	if err := w.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v", err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "{\"id\":\"a\"}\n{\"id\":\"b\"}\n" {
		t.Errorf("file %q: want the complete lines a and b", b)
	}
	st, err := ReadFileState(path)
	if err != nil || st.Records != 2 || st.Bytes != 22 || !strings.Contains(st.Error, "cut back to its last complete line, record 2") {
		t.Errorf("seal %+v (%v)", st, err)
	}
}

// TestSyncWriterPartialWriteWithoutTruncate: on a writer that cannot be
// cut back, the error says where the true lines end.
func TestSyncWriterPartialWriteWithoutTruncate(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "x.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := NewSyncWriter(struct{ io.Writer }{&fullDisk{f: f, room: 11 + 5}})
	if err := w.WriteRaw(line("a")); err != nil {
		t.Fatal(err)
	}
	err = w.WriteRaw(line("b"))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "the lines after byte 11, the last acknowledged line, are not records") {
		t.Errorf("err = %v", err)
	}
	_ = w.Close()
	_ = f.Close()
}
