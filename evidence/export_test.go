package evidence

import (
	"io"
	"os"
	"syscall"
)

// CreateSyncFull is CreateSync on path whose every write fails with ENOSPC
// ("no space left on device"), as on a full disk: the file and its seal are
// created as CreateSync creates them; only the lines do not go in. (Tests
// used a link to /dev/full; Create refuses links now.)
func CreateSyncFull(path string) (*Writer, error) {
	return create(path, func(w io.Writer) *Writer {
		return NewSyncWriter(struct {
			io.Writer
			io.Closer
		}{noSpace{}, w.(*os.File)})
	})
}

type noSpace struct{}

func (noSpace) Write([]byte) (int, error) { return 0, syscall.ENOSPC }
