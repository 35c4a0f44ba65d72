// Package boundedio reads inputs with the bounds every rlbench reader needs:
// only regular files (a FIFO or a device is refused without blocking), a size
// limit that is an error rather than a silent truncation, and a context whose
// end stops the read. Evidence readers (package evidence and its
// callers), configuration readers and parsers (collect/envoy) use it. It is
// a leaf: it imports no rlbench package.
package boundedio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// SizeError is an input longer than the limit for its kind.
type SizeError struct {
	Name  string
	Limit int64
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: larger than %d bytes, the limit for this input", e.Name, e.Limit)
}

// NotRegularError is a path that names something other than a regular file
// (a named pipe, a device, a socket, a directory): rlbench reads evidence and
// configuration only from regular files, since reading the others may block
// forever (a FIFO without writer) or never end (/dev/zero).
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: not a regular file but %s; rlbench reads only regular files", e.Path, FileKind(e.Mode))
}

// FileKind names what a file mode is ("a named pipe (FIFO)", "a character
// device", "a directory", ...) for messages about a path that is not a
// regular file.
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// NewReader returns a reader of r that fails with ctx's error once ctx is
// done (checked before every Read) and with a *SizeError once more than
// limit bytes have been read (limit <= 0: no limit). When r can take a read
// deadline (os.File pipes and sockets in non-blocking mode, net.Conn), a done
// ctx also interrupts a Read that is blocked waiting for data. name is used
// in the SizeError.
func NewReader(ctx context.Context, r io.Reader, name string, limit int64) io.Reader {
	cr := &ctxReader{ctx: ctx, r: r, name: name, limit: limit}
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok && ctx.Done() != nil {
		cr.stop = context.AfterFunc(ctx, func() { _ = d.SetReadDeadline(time.Now()) })
	}
	return cr
}

type ctxReader struct {
	ctx   context.Context
	r     io.Reader
	name  string
	limit int64
	n     int64
	stop  func() bool
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.limit > 0 {
		if c.n > c.limit {
			return 0, &SizeError{Name: c.name, Limit: c.limit}
		}
		// Read at most one byte past the limit, to tell "exactly at the
		// limit" from "over it".
		if rest := c.limit + 1 - c.n; int64(len(p)) > rest {
			p = p[:rest]
		}
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.limit > 0 && c.n > c.limit {
		return n, &SizeError{Name: c.name, Limit: c.limit}
	}
	if err != nil && c.ctx.Err() != nil && !errors.Is(err, io.EOF) {
		// A deadline set by the AfterFunc: report the cancellation.
		return n, c.ctx.Err()
	}
	return n, err
}

// ReadAll reads r to its end through NewReader(ctx, r, name, limit).
func ReadAll(ctx context.Context, r io.Reader, name string, limit int64) ([]byte, error) {
	cr := NewReader(ctx, r, name, limit)
	defer cr.(*ctxReader).release()
	return io.ReadAll(cr)
}

func (c *ctxReader) release() {
	if c.stop != nil {
		c.stop()
	}
}

// File is a regular file opened by OpenRegular. Reads go through NewReader:
// they stop when the context is done and fail past the size limit.
type File struct {
	f    *os.File
	r    *ctxReader
	size int64
	once sync.Once
}

// Read reads from the file (see NewReader for the errors).
func (f *File) Read(p []byte) (int, error) { return f.r.Read(p) }

// Name is the path the file was opened by.
func (f *File) Name() string { return f.f.Name() }

// Size is the file's size in bytes when it was opened.
func (f *File) Size() int64 { return f.size }

// Close closes the file.
func (f *File) Close() error {
	f.once.Do(f.r.release)
	return f.f.Close()
}

// OpenRegular opens path for reading if it is a regular file (symbolic links
// are followed) and returns it wrapped by NewReader(ctx, ..., limit).
// Anything else is refused with a *NotRegularError naming path, before any
// byte is read and without blocking: the file is opened with O_NONBLOCK, so
// opening a FIFO does not wait for a writer, and checked with fstat (which
// also closes the race between a stat and the open). A file whose size is
// already over limit (limit > 0) is refused with a *SizeError. Open errors
// are *fs.PathError naming path.
func OpenRegular(ctx context.Context, path string, limit int64) (*File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, st, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	if limit > 0 && st.Size() > limit {
		f.Close()
		return nil, &SizeError{Name: path, Limit: limit}
	}
	// O_NONBLOCK has no effect on a regular file's reads (open(2)).
	return &File{f: f, r: &ctxReader{ctx: ctx, r: f, name: path, limit: limit}, size: st.Size()}, nil
}

// OpenFile is OpenRegular's check without the reader: it opens path
// (O_NONBLOCK, so a FIFO does not block the open), refuses anything but a
// regular file with a *NotRegularError, and returns the *os.File with its
// FileInfo, for readers that need the file itself (ReadAt, Seek, chunked
// parallel reads) and check their context themselves.
func OpenFile(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, st, nil
}

// ReadRegular reads the regular file at path whole, as os.ReadFile does,
// with OpenRegular's checks: it refuses non-regular files and files larger
// than limit (limit <= 0: no limit) and stops when ctx is done.
func ReadRegular(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := OpenRegular(ctx, path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, f.size+1)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}
