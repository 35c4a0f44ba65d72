package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/internal/human"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Intervals of the live progress: a terminal is redrawn every barEvery,
// other writers get a plain line every plainEvery.
const (
	barEvery   = 200 * time.Millisecond
	plainEvery = 2 * time.Second
)

// liveProgress shows p on w until stop is called: on a terminal a bar
// redrawn in place (schollz/progressbar) with human.Progress as its
// description, else a plain line every plainEvery (none when w is
// io.Discard, as with --quiet). stop ends it and, on a terminal, leaves
// the last state on its line.
func liveProgress(w io.Writer, label string, p *attack.Progress) (stop func()) {
	if w == io.Discard || p == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		// The bar is made once the total is known (Run sets it before
		// warming): with a known maximum progressbar runs no goroutine of
		// its own.
		var (
			bar  *progressbar.ProgressBar
			barW int
		)
		draw := func() {
			s := p.Snapshot()
			if s.Total == 0 {
				return
			}
			cols := progressColumns(w)
			if bar == nil {
				barW = progressBarWidth(cols)
				bar = newProgressBar(w, int64(s.Total), barW)
			}
			bar.Describe(progressDescription(label+": "+human.Progress(s), cols, barW))
			_ = bar.Set64(int64(s.Recorded))
		}
		go func() {
			defer wg.Done()
			t := time.NewTicker(barEvery)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					draw()
				case <-done:
					draw()
					if bar != nil {
						fmt.Fprintln(w)
					}
					return
				}
			}
		}()
	} else {
		go func() {
			defer wg.Done()
			t := time.NewTicker(plainEvery)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					fmt.Fprintf(w, "%s: %s\n", label, human.Progress(p.Snapshot()))
				case <-done:
					return
				}
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// progressAround is the cells of a bar's line besides the bar and its
// description, as schollz/progressbar draws it with the options of
// newProgressBar: " 100% " before the bar, its two ends, two spaces
// after it and one after the description.
const progressAround = 11

// newProgressBar is the bar liveProgress draws on w: total steps, barW
// cells wide between its ends, the description at the line's end, no
// rate or time estimate of its own (the description has them).
func newProgressBar(w io.Writer, total int64, barW int) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(barW),
		progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(false), progressbar.OptionThrottle(0),
		progressbar.OptionShowDescriptionAtLineEnd())
}

// progressColumns is the width of the terminal w the bar is drawn on:
// terminalWidth (COLUMNS, else the TTY's; the tables' one rule), or
// report.MinWidth when neither is known.
func progressColumns(w io.Writer) int {
	if c := terminalWidth(w); c > 0 {
		return c
	}
	return report.MinWidth
}

// progressBarWidth is the bar's width on a line of cols cells: 20 cells
// on a 120-column terminal, fewer on a narrower one, at least 5.
func progressBarWidth(cols int) int {
	return min(max((cols-40)/4, 5), 20)
}

// progressDescription is d cut with "…" to the cells a line of cols
// cells leaves beside a bar barW cells wide. The last column stays free,
// so that no terminal wraps the line the bar redraws in place.
func progressDescription(d string, cols, barW int) string {
	return report.Cut(d, max(cols-1-progressAround-barW, 1))
}
