package evidence

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// Writer writes JSON Lines. It is safe for concurrent use. It has two
// modes:
//
//   - buffered (NewWriter, Create): lines go through a 64 KiB buffer that is
//     flushed at least every FlushEvery and on Close; a process killed
//     meanwhile loses at most that much, and a write error shows at the
//     next Write, Flush or Close;
//   - write-through (NewSyncWriter, CreateSync): Write returns once the
//     line, and every line written before it, has been handed to the
//     underlying writer (one write(2) of a file); concurrent Writes share
//     those calls (group commit: while one call writes, the lines of the
//     others gather for the next). A killed process loses nothing that a
//     Write returned for, and a failed write fails that very Write.
//
// Either way the first write error is kept: that call and every later one
// return it. A Writer made by Create or CreateSync also keeps the file's
// seal (seal.go): the sidecar <file>.state.json says "open" until Close
// says "closed" with the line and byte counts, or the error.
//
// A write that fails part-way (a full disk: write(2) takes what fits) never
// leaves a line that claims what did not happen. In write-through mode the
// lines of a batch that failed are those whose Writes return the error (the
// backend answers their requests 500), so a file of Create or CreateSync
// is cut back to the last line a Write returned nil for; in buffered mode
// (lines recorded after the fact, e.g. the attack's responses) it is cut
// back to its last complete line. The seal then counts exactly those
// lines; when the cut itself fails, the error says so and the seal's
// records and bytes still end at the last true line (cut).
type Writer struct {
	mu      sync.Mutex
	bw      *bufio.Writer // buffered mode
	out     io.Writer     // write-through mode
	c       io.Closer
	stop    chan struct{} // buffered mode: ends the flush loop
	done    chan struct{}
	err     error
	closed  bool
	records int64 // lines accepted (buffered) or written (write-through)
	bytes   int64 // their bytes, newlines included
	seal    *seal
	// tally counts what reached the file (buffered mode), and truncate
	// cuts the file back (Create, CreateSync: the file starts at offset
	// 0); after a write error the file ends at its last true line (cut).
	tally    *lineTally
	truncate func(size int64) error

	// write-through mode: lines queued while another call writes.
	cond      *sync.Cond
	pend      []byte
	spare     []byte
	pendLines int64
	queued    uint64 // lines queued so far
	committed uint64 // lines written so far
	writing   bool
}

// FlushEvery is the longest a written line may stay in a buffered Writer's buffer.
const FlushEvery = 100 * time.Millisecond

// NewWriter returns a buffered Writer on w; if w is an io.Closer, Close closes it.
func NewWriter(w io.Writer) *Writer { return newWriter(w, nil) }

// newWriter is NewWriter flushing at each value of ticks; nil ticks is a
// ticker of FlushEvery (tests drive the flushes with their own channel).
func newWriter(w io.Writer, ticks <-chan time.Time) *Writer {
	t := &lineTally{w: w}
	jw := &Writer{bw: bufio.NewWriterSize(t, 64<<10), tally: t, stop: make(chan struct{}), done: make(chan struct{})}
	if c, ok := w.(io.Closer); ok {
		jw.c = c
	}
	go jw.loop(ticks)
	return jw
}

// NewSyncWriter returns a write-through Writer on w; if w is an
// io.Closer, Close closes it.
func NewSyncWriter(w io.Writer) *Writer {
	jw := &Writer{out: w}
	jw.cond = sync.NewCond(&jw.mu)
	if c, ok := w.(io.Closer); ok {
		jw.c = c
	}
	return jw
}

// Create creates (truncating) the file at path, and its parent
// directories, and returns a buffered Writer on it, sealed (seal.go): its
// sidecar says "open" before the first line and "closed" after Close.
func Create(path string) (*Writer, error) { return create(path, NewWriter) }

// CreateSync is Create with a write-through Writer: for a recorder whose
// every line must be on the file before it acts on it (the backend answers
// a request only once its receipt is written).
func CreateSync(path string) (*Writer, error) { return create(path, NewSyncWriter) }

func create(path string, mk func(io.Writer) *Writer) (*Writer, error) {
	return createOn(path, mk, func(f *os.File) io.Writer { return f })
}

// createOn is create writing through out(f), the file as the Writer sees
// it (tests inject a disk that fills).
func createOn(path string, mk func(io.Writer) *Writer, out func(*os.File) io.Writer) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	// The seal first: a file that has lines always says what wrote it.
	sl, err := openSeal(path)
	if err != nil {
		return nil, err
	}
	f, err := safefile.Create(path, 0o666)
	if err != nil {
		sl.discard()
		return nil, err
	}
	w := mk(out(f))
	w.c = f
	w.seal, w.truncate = sl, f.Truncate
	return w, nil
}

func (w *Writer) loop(ticks <-chan time.Time) {
	defer close(w.done)
	if ticks == nil {
		t := time.NewTicker(FlushEvery)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-w.stop:
			return
		case <-ticks:
			_ = w.Flush()
		}
	}
}

// Write encodes v as one JSON line.
func (w *Writer) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.WriteRaw(b)
}

// errClosedWriter is returned by a write on a closed Writer.
var errClosedWriter = errors.New("evidence: write on closed writer")

// WriteRaw writes b (one JSON document without newline) as one line.
func (w *Writer) WriteRaw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosedWriter
	}
	if w.bw == nil {
		return w.commit(b)
	}
	if _, err := w.bw.Write(b); err != nil {
		w.failed(err)
		return w.err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		w.failed(err)
		return w.err
	}
	w.records++
	w.bytes += int64(len(b)) + 1
	return nil
}

// commit queues b and returns once it is written (write-through mode;
// w.mu is held, and released while this or another call writes).
func (w *Writer) commit(b []byte) error {
	w.pend = append(append(w.pend, b...), '\n')
	w.pendLines++
	w.queued++
	mine := w.queued
	for w.committed < mine {
		if w.err != nil {
			return w.err
		}
		if w.writing {
			w.cond.Wait()
			continue
		}
		w.writing = true
		batch, lines, upto := w.pend, w.pendLines, w.queued
		w.pend, w.pendLines = w.spare[:0], 0
		w.mu.Unlock()
		n, err := w.out.Write(batch)
		if err == nil && n < len(batch) {
			err = io.ErrShortWrite
		}
		w.mu.Lock()
		w.writing = false
		if err != nil {
			// The lines of this batch fail their Writes: none of them may
			// stay on the file (those that fitted would claim an answer
			// their requests never got).
			w.cutAt(err, n > 0, w.records, w.bytes, "acknowledged")
		} else {
			w.records += lines
			w.bytes += int64(n)
			w.committed = upto
		}
		w.spare = nil
		if cap(batch) <= 1<<20 { // keep a modest buffer for the next batch
			w.spare = batch[:0]
		}
		w.cond.Broadcast()
	}
	return nil
}

// WriteLines creates (truncating) path and writes one JSON line per element
// of vs, for a record file written at once (e.g. rls/decisions.jsonl from a
// parsed RLS log).
func WriteLines[T any](path string, vs []T) error {
	w, err := Create(path)
	if err != nil {
		return err
	}
	for i := range vs {
		if err := w.Write(&vs[i]); err != nil {
			_ = w.Close()
			return err
		}
	}
	return w.Close()
}

// Flush writes buffered lines to the underlying writer (write-through
// Writers have none: it returns the first write error).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed || w.bw == nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.failed(err)
	}
	return w.err
}

// failed records err, a write error of the buffered mode (w.mu held): the
// file is cut back to its last complete line, which the seal then counts
// (bufio keeps what was not written; what was is tallied).
func (w *Writer) failed(err error) {
	t := w.tally
	w.cutAt(err, t.n > t.lineEnd, t.lines, t.lineEnd, "complete")
}

// cutAt records err as the writer's error (w.mu held) with the file ending
// at its last true line: records lines, size bytes. When more bytes than
// that reached the file (partial), it is truncated to size, or, when it
// cannot be, err says where the true lines end. what names the lines kept
// ("acknowledged", "complete").
func (w *Writer) cutAt(err error, partial bool, records, size int64, what string) {
	if w.err != nil {
		return
	}
	w.records, w.bytes = records, size
	switch {
	case !partial:
	case w.truncate == nil:
		err = fmt.Errorf("%w (the lines after byte %d, the last %s line, are not records)", err, size, what)
	default:
		if terr := w.truncate(size); terr != nil {
			err = fmt.Errorf("%w (and the file could not be cut back to its last %s line, byte %d: %v: the lines after it are not records)", err, what, size, terr)
		} else {
			err = fmt.Errorf("%w (the file was cut back to its last %s line, record %d)", err, what, records)
		}
	}
	w.err = err
}

// lineTally passes writes to w and counts what w took: bytes, lines, and
// the offset just after the last newline.
type lineTally struct {
	w       io.Writer
	n       int64
	lines   int64
	lineEnd int64
}

func (t *lineTally) Write(p []byte) (int, error) {
	m, err := t.w.Write(p)
	if k := min(max(m, 0), len(p)); k > 0 {
		q := p[:k]
		if i := bytes.LastIndexByte(q, '\n'); i >= 0 {
			t.lines += int64(bytes.Count(q, []byte{'\n'}))
			t.lineEnd = t.n + int64(i) + 1
		}
		t.n += int64(k)
	}
	return m, err
}

// Written returns the lines and bytes on the underlying writer so far:
// in write-through mode exactly what Writes returned for (the bytes end at
// a line boundary), in buffered mode what was flushed of them (lines
// counts the lines accepted). After a write error, both are the file's
// true lines (see Writer: the file is cut back to them).
func (w *Writer) Written() (lines, bytes int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bw != nil && w.err == nil {
		return w.records, w.bytes - int64(w.bw.Buffered())
	}
	return w.records, w.bytes
}

// Fail records err (not nil) as the writer's error, after flushing what
// is buffered, unless it already has one: later Writes return it and Close
// seals the file with it. It is for a recorder whose source failed (a
// receipts stream cut short): the file's seal then says it may miss lines.
func (w *Writer) Fail(err error) {
	if err == nil {
		return
	}
	_ = w.Flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	if w.cond != nil {
		w.cond.Broadcast()
	}
}

// Err returns the first write error, nil while every write succeeded.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes and closes the writer (and the underlying io.Closer), then
// seals the file of a Writer made by Create or CreateSync: its sidecar
// says "closed", with the lines and bytes written, or with the first write
// error. It returns that error, or the close's or the seal's.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	if w.bw == nil {
		for w.writing || len(w.pend) > 0 && w.err == nil { // Writes still under way finish first
			w.cond.Wait()
		}
		w.closed = true
		w.mu.Unlock()
	} else {
		w.mu.Unlock()
		close(w.stop)
		<-w.done
		_ = w.Flush()
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
	}
	w.mu.Lock()
	err, records, bytes := w.err, w.records, w.bytes
	w.mu.Unlock()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}
	if w.seal != nil {
		if serr := w.seal.close(records, bytes, err); err == nil {
			err = serr
		}
	}
	return err
}

// LineError reports a malformed line of an evidence file.
type LineError struct {
	File string
	Line int
	Err  error
	// Truncated is true when the bad line is the last one and lacks its
	// newline: the writer was interrupted mid-line.
	Truncated bool
}

func (e *LineError) Error() string {
	if e.Truncated {
		return fmt.Sprintf("%s:%d: truncated last line: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadLines decodes each line of r as a T and calls fn with it and its line
// number (1-based). Blank lines are skipped. A line that does not decode stops
// the read with a *LineError naming name and the line (Truncated when it is
// a last line without newline). Lines may be up to 16 MiB.
func ReadLines[T any](r io.Reader, name string, fn func(line int, v *T) error) error {
	return eachLine(r, name, func(line int, b []byte, complete bool) error {
		if len(b) == 0 {
			return nil
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return &LineError{File: name, Line: line, Err: err, Truncated: !complete}
		}
		return fn(line, &v)
	})
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// ReadFile opens path and calls ReadLines on it, naming errors by path.
func ReadFile[T any](path string, fn func(line int, v *T) error) error {
	f, err := boundedio.OpenRegular(context.Background(), path, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return ReadLines(f, path, fn)
}
