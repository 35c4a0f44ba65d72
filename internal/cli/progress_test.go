package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/rlbench/rlbench/evidence"
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

// TestAttackSummaryFits80: the summary of a paced attack (figures as one
// measured on a loaded machine) has no line over 80 columns, where its
// pacing line was 221 with durations to the nanosecond, and rounds them
// to 3 significant digits.
func TestAttackSummaryFits80(t *testing.T) {
	sum := &evidence.AttackSummary{
		Config:        evidence.AttackConfig{IDs: 25, RatePerSec: 5, Workers: 16, WorkersFrom: "rate", FDCap: 9962, FDLimit: 20000, FDOpen: 12},
		Sent:          25,
		CodesByTarget: map[string]map[string]int{"127.0.0.1:46267": {"200": 20, "429": 5}},
		Pacing: &evidence.AttackPacing{AchievedPerSec: 5, ErrorNs: evidence.AttackQuantiles{N: 25, P50: 87039, P99: 7554550, Max: 7554550},
			LatencyFromIntendedNs: evidence.AttackQuantiles{N: 25, P99: 7785423}, WorkersPeak: 16, WorkersBound: 16, DirectSends: 25, ReliefSends: 1},
		Burst: &evidence.AttackBurst{Requests: 25, WarmConnections: 16, SpreadNs: 86618, SendNs: evidence.AttackQuantiles{P50: 100351, P99: 113047}},
	}
	var buf bytes.Buffer
	printAttackSummary(&buf, "ev", sum)
	out := buf.String()
	for l := range strings.Lines(out) {
		if n := utf8.RuneCountInString(strings.TrimSuffix(l, "\n")); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	for _, want := range []string{"pacing error p50 87µs p99 7.55ms max 7.55ms", "latency from intended p99 7.79ms", "25 of 25 sent directly",
		"1 of the direct sends by the relief dispatcher", "send spread 86.6µs", "sent p50 100µs, p99 113µs after release"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
