package cli

import (
	"bytes"
	"io"
	"sync"

	"github.com/rlbench/rlbench/evidence"
)

// maxHeldLine bounds what a redactingWriter holds while it waits for the
// end of a line; a longer line is redacted and written in pieces.
const maxHeldLine = 1 << 20

// redactingWriter passes a command's output through evidence.RedactText a
// line at a time: the last line of defence for what the sources did not
// redact (a reason quoted from evidence written by an older release, which
// kept query tokens). Main puts it around stdout and stderr; a line without
// a secret passes unchanged. It is safe for concurrent writers (the lab's
// goroutines); Flush writes a last line without its newline.
type redactingWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newRedactingWriter(w io.Writer) *redactingWriter { return &redactingWriter{w: w} }

// Unwrap is the writer r writes to: terminalWidth looks through r for the
// terminal behind it.
func (r *redactingWriter) Unwrap() io.Writer { return r.w }

// Write writes every complete line of p (with what was held before it)
// redacted and holds the rest. It reports len(p) unless the underlying
// writer fails.
func (r *redactingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nl := bytes.LastIndexByte(p, '\n')
	var err error
	switch {
	case nl >= 0:
		r.buf = append(r.buf, p[:nl+1]...)
		err = r.emit(r.buf)
		r.buf = append(r.buf[:0], p[nl+1:]...)
	default:
		r.buf = append(r.buf, p...)
		if len(r.buf) >= maxHeldLine { // a line this long is written in pieces
			err = r.emit(r.buf)
			r.buf = r.buf[:0]
		}
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// emit writes lines (whole lines, or one piece of a long one) redacted.
func (r *redactingWriter) emit(lines []byte) error {
	s := string(lines)
	_, err := io.WriteString(r.w, evidence.RedactText(s))
	return err
}

// Flush writes what is held (a last line without its newline), redacted.
func (r *redactingWriter) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		return nil
	}
	err := r.emit(r.buf)
	r.buf = r.buf[:0]
	return err
}
