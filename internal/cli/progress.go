package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

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
		var bar *progressbar.ProgressBar
		draw := func() {
			s := p.Snapshot()
			if s.Total == 0 {
				return
			}
			if bar == nil {
				bar = progressbar.NewOptions64(int64(s.Total), progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(20),
					progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(false), progressbar.OptionThrottle(0),
					progressbar.OptionShowDescriptionAtLineEnd())
			}
			bar.Describe(label + ": " + human.Progress(s))
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
