package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"
)

// TestDemoFitsTTY: with standard output on an 80-column terminal and no
// COLUMNS in the environment (a shell keeps COLUMNS to itself unless it
// is exported), the demo's table is fitted to the terminal's 80 columns:
// Main's redacting writer around stdout hid the terminal, and the table
// was fitted to the default 100 (82 columns wide, Receipts shown).
func TestDemoFitsTTY(t *testing.T) {
	runsHome(t)
	t.Chdir(t.TempDir())
	t.Setenv("COLUMNS", "")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Skipf("pty size: %v", err)
	}
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&screen, ptmx)
		close(copied)
	}()
	var stderr bytes.Buffer
	code := Main([]string{"demo"}, &IOStreams{In: bytes.NewReader(nil), Out: tty, ErrOut: &stderr})
	tty.Close()
	<-copied
	ptmx.Close()
	if code != ExitOK {
		t.Fatalf("demo: exit %d\n%s", code, stderr.String())
	}
	out := strings.ReplaceAll(screen.String(), "\r", "")
	if !strings.Contains(out, "Verdict: PASS") || !strings.Contains(out, "hidden at 80 columns") {
		t.Fatalf("the demo's table on an 80-column terminal is not fitted to it:\n%s", out)
	}
	for l := range strings.Lines(out) {
		if n := utf8.RuneCountInString(strings.TrimSuffix(l, "\n")); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
}
