package evidence

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rlbench/rlbench/evidence/boundedio"
)

// TestOpenRegularFIFO: a requests.jsonl that is a FIFO without writer is
// refused at once, naming it, instead of blocking the reader (and the first
// SIGTERM with it). evidence/boundedio holds the full tests.
func TestOpenRegularFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), RequestsFile)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	_, err := boundedio.OpenRegular(context.Background(), fifo, 0)
	var nr *boundedio.NotRegularError
	if !errors.As(err, &nr) || nr.Path != fifo {
		t.Fatalf("err = %v, want boundedio.NotRegularError naming %s", err, fifo)
	}
	if _, err := boundedio.ReadRegular(context.Background(), fifo, MaxDocumentBytes); !errors.As(err, &nr) {
		t.Fatalf("ReadRegular: %v", err)
	}
}
