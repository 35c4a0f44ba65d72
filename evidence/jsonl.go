package evidence

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	json "github.com/goccy/go-json"
)

// Writer writes JSON Lines through a buffer that is flushed at least every
// FlushEvery and on Close. It is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	bw     *bufio.Writer
	c      io.Closer
	stop   chan struct{}
	done   chan struct{}
	err    error
	closed bool
}

// FlushEvery is the longest a written line may stay in a Writer's buffer.
const FlushEvery = 100 * time.Millisecond

// NewWriter returns a Writer on w; if w is an io.Closer, Close closes it.
func NewWriter(w io.Writer) *Writer {
	jw := &Writer{bw: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	if c, ok := w.(io.Closer); ok {
		jw.c = c
	}
	go jw.loop()
	return jw
}

// Create creates (truncating) the file at path, and its parent directories,
// and returns a Writer on it.
func Create(path string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return NewWriter(f), nil
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
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

// WriteRaw writes b (one JSON document without newline) as one line.
func (w *Writer) WriteRaw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("evidence: write on closed writer")
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		w.err = err
	}
	return w.err
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

// Flush writes buffered lines to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// Close flushes and closes the writer (and the underlying io.Closer).
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	err := w.Flush()
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
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
	f, err := OpenRegular(context.Background(), path, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return ReadLines(f, path, fn)
}
