package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"
)

// longestSegment is the width in runes of the longest line of a
// terminal's output s that contains within, lines ending at a carriage
// return or a line feed (a bar redrawn in place is one line per state).
func longestSegment(s, within string) (int, string) {
	n, line := 0, ""
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' }) {
		if w := utf8.RuneCountInString(l); w > n && strings.Contains(l, within) {
			n, line = w, l
		}
	}
	return n, line
}

// TestProgressBarFitsColumns: the bar's line, as schollz/progressbar
// draws it with newProgressBar, is at most cols-1 cells wide on 40- to
// 200-column terminals, at every state of a long description, and keeps
// the description's start.
func TestProgressBarFitsColumns(t *testing.T) {
	desc := "attack: 9990/10000 sent, 9990 answered (200: 5000, 429: 4900, 503: 90), 8 without response, 1234/s, 1m20s left"
	for _, cols := range []int{40, 80, 100, 120, 200} {
		var buf bytes.Buffer
		barW := progressBarWidth(cols)
		bar := newProgressBar(&buf, 10000, barW)
		for _, n := range []int64{0, 1, 5000, 9990, 10000} {
			bar.Describe(progressDescription(desc, cols, barW))
			if err := bar.Set64(n); err != nil {
				t.Fatal(err)
			}
		}
		w, line := longestSegment(buf.String(), "")
		if w > cols-1 || !strings.Contains(line, "attack: 9990/10000") {
			t.Errorf("%d columns: a line of %d: %q", cols, w, line)
		}
		if cols >= 120 && barW != 20 {
			t.Errorf("%d columns: bar %d wide, want 20", cols, barW)
		}
	}
}

// TestAttackProgressFitsTerminal: a live attack's bar on an 80-column
// terminal (the TTY's width, or COLUMNS=80 on a wider TTY, as the tables
// are fitted) draws no line wider than 79 columns (the lines of the bar:
// those with its "%"; the summary after it is prose a terminal wraps).
func TestAttackProgressFitsTerminal(t *testing.T) {
	for _, c := range []struct {
		ttyCols uint16
		columns string
	}{{80, ""}, {200, "80"}} {
		t.Run(fmt.Sprintf("tty%d_COLUMNS%s", c.ttyCols, c.columns), func(t *testing.T) {
			t.Setenv("COLUMNS", c.columns)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pty: %v", err)
			}
			if err := pty.Setsize(tty, &pty.Winsize{Rows: 24, Cols: c.ttyCols}); err != nil {
				t.Skipf("pty size: %v", err)
			}
			var screen bytes.Buffer
			copied := make(chan struct{})
			go func() {
				io.Copy(&screen, ptmx)
				close(copied)
			}()
			progressAttack(t, tty, false)
			tty.Close()
			<-copied
			ptmx.Close()
			s := screen.String()
			if !strings.Contains(s, "\r") || !sentRE.MatchString(s) {
				t.Fatalf("no bar drawn:\n%q", s)
			}
			if w, line := longestSegment(s, "%"); w > 79 || w == 0 {
				t.Fatalf("a line of %d columns on an 80-column terminal: %q", w, line)
			}
		})
	}
}
