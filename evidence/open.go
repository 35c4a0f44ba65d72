package evidence

import (
	"context"
	"io"
	"os"

	"github.com/rlbench/rlbench/evidence/boundedio"
)

// MaxDocumentBytes bounds a JSON document of an evidence directory that is
// read whole (scenario.json, attack.json, manifest.json, stats/*.json,
// rls/*.json): 64 MiB. JSON Lines files are read line by line (ReadLines)
// and bounded per line instead.
const MaxDocumentBytes = 64 << 20

// The bounded readers for evidence files (implemented by evidence/boundedio):
// regular files only, a size limit that is an error, reads that stop when
// the context is done.
type (
	// SizeError is an input longer than the limit for its kind.
	SizeError = boundedio.SizeError
	// NotRegularError is a path that names a FIFO, a device, a socket or a
	// directory: reading it may block forever or never end.
	NotRegularError = boundedio.NotRegularError
	// File is a regular file opened by OpenRegular.
	File = boundedio.File
)

// OpenRegular opens path for reading if it is a regular file, without
// blocking on a FIFO, and refuses a file larger than limit (limit <= 0: no
// limit); reads stop when ctx is done. See boundedio.OpenRegular.
func OpenRegular(ctx context.Context, path string, limit int64) (*File, error) {
	return boundedio.OpenRegular(ctx, path, limit)
}

// OpenRegularFile opens path as OpenRegular does (a FIFO or device is
// refused at once with a *NotRegularError) and returns the *os.File itself,
// for chunked readers that use ReadAt and check ctx themselves. See
// boundedio.OpenFile.
func OpenRegularFile(path string) (*os.File, os.FileInfo, error) {
	return boundedio.OpenFile(path)
}

// ReadRegular reads the regular file at path whole, at most limit bytes
// (limit <= 0: no limit), stopping when ctx is done. See
// boundedio.ReadRegular.
func ReadRegular(ctx context.Context, path string, limit int64) ([]byte, error) {
	return boundedio.ReadRegular(ctx, path, limit)
}

// NewReader returns r bounded by limit bytes (a *SizeError past it) and by
// ctx. See boundedio.NewReader.
func NewReader(ctx context.Context, r io.Reader, name string, limit int64) io.Reader {
	return boundedio.NewReader(ctx, r, name, limit)
}

// ReadAll reads r whole through NewReader.
func ReadAll(ctx context.Context, r io.Reader, name string, limit int64) ([]byte, error) {
	return boundedio.ReadAll(ctx, r, name, limit)
}
