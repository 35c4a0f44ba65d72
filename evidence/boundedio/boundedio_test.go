package boundedio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRegularRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "requests.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, c := range []struct{ path, kind string }{
		{fifo, "named pipe"}, // opening must not wait for a writer
		{"/dev/zero", "character device"},
		{"/dev/null", "character device"},
		{dir, "directory"},
	} {
		if _, err := os.Stat(c.path); err != nil {
			continue
		}
		f, err := OpenRegular(context.Background(), c.path, 0)
		if err == nil {
			f.Close()
			t.Errorf("%s: opened", c.path)
			continue
		}
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Path != c.path || !strings.Contains(err.Error(), c.kind) || !strings.HasPrefix(err.Error(), c.path+": ") {
			t.Errorf("%s: err = %v, want NotRegularError naming it as a %s", c.path, err, c.kind)
		}
		if _, err := ReadRegular(context.Background(), c.path, 0); !errors.As(err, &nr) {
			t.Errorf("ReadRegular(%s) = %v", c.path, err)
		}
		if f, _, err := OpenFile(c.path); !errors.As(err, &nr) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenFile(%s) = %v", c.path, err)
		}
	}
	// A symbolic link to a regular file is followed.
	reg := filepath.Join(dir, "scenario.json")
	if err := os.WriteFile(reg, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	b, err := ReadRegular(context.Background(), link, 0)
	if err != nil || string(b) != `{"a":1}` {
		t.Errorf("ReadRegular(link) = %q, %v", b, err)
	}
	f, st, err := OpenFile(link)
	if err != nil || st.Size() != 7 {
		t.Fatalf("OpenFile(link) = %v, %v", st, err)
	}
	f.Close()
	if _, err := OpenRegular(context.Background(), filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadRegularSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "attack.json")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(context.Background(), p, 100); err != nil || len(b) != 100 {
		t.Errorf("at the limit: %d bytes, %v", len(b), err)
	}
	_, err := ReadRegular(context.Background(), p, 99)
	var se *SizeError
	if !errors.As(err, &se) || se.Name != p || se.Limit != 99 {
		t.Errorf("over the limit: %v", err)
	}
	// A file that grows after the open is still stopped at the limit.
	f, err := OpenRegular(context.Background(), p, 120)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(p, bytes.Repeat([]byte("y"), 500), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if !errors.As(err, &se) || len(b) > 121 {
		t.Errorf("grown file: %d bytes, %v", len(b), err)
	}
}

func TestNewReaderLimitAndCancel(t *testing.T) {
	ctx := context.Background()
	b, err := ReadAll(ctx, strings.NewReader("hello"), "<stdin>", 5)
	if err != nil || string(b) != "hello" {
		t.Errorf("ReadAll at limit = %q, %v", b, err)
	}
	_, err = ReadAll(ctx, strings.NewReader("hello!"), "<stdin>", 5)
	var se *SizeError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "<stdin>: larger than 5 bytes") {
		t.Errorf("ReadAll over limit: %v", err)
	}

	// An endless source stops at the first Read after cancellation.
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer zero.Close()
	cctx, cancel := context.WithCancel(ctx)
	r := NewReader(cctx, zero, "/dev/zero", 0)
	buf := make([]byte, 4096)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := r.Read(buf); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}

	// A Read blocked on a pipe with no data is interrupted by cancellation.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	pctx, pcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := ReadAll(pctx, pr, "pipe", 0)
		done <- err
	}()
	if _, err := pw.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	pcancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("blocked pipe read after cancel: %v", err)
	}

	// A done context refuses the open itself.
	dctx, dcancel := context.WithCancel(ctx)
	dcancel()
	if _, err := OpenRegular(dctx, "/etc/hostname", 0); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenRegular with a done context: %v", err)
	}
}
