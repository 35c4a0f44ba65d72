package runner

import (
	"errors"
	"fmt"
	"github.com/rlbench/rlbench/evidence"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
)

// External proxies may name the file their Envoy access log goes to
// (ExternalProxy.AccessLog; for the example bootstraps that is Envoy's
// redirected stdout, envoy.access_loggers.stdout). The runner records each
// file's size before the scenario's first step (markAccessLogs) and, after the
// last step and the "after" stats snapshot, copies the bytes appended since
// into <scenario dir>/accesslog/<proxy>.log (copyAccessLogs), the same place
// lab proxies write theirs. analyze joins those lines to requests.
//
// Envoy writes file and stdout access logs through a buffer that its flush
// thread empties every --file-flush-interval-msec (default 10 s), so the
// copy first waits, bounded by accessLogSettle, until the file has stopped
// growing; start Envoy with a short flush interval (examples/envoy/run.sh
// passes 100 ms) so that the last lines are on disk by then.

// accessLogMark is the state of one external proxy's access log at the start
// of a scenario.
type accessLogMark struct {
	proxy, path string
	// size is the file's size before the first step; -1 when the file did
	// not exist then (everything in it afterwards is the scenario's).
	size int64
	err  error
}

// accessLogMarks holds the marks of scenarios in progress, keyed by run.
// (Kept outside scenarioRun so that run.go needs only the two calls.)
var accessLogMarks sync.Map // *scenarioRun -> []accessLogMark

// Bounds of the wait for an access log to stop growing before it is copied.
var (
	accessLogPoll   = 150 * time.Millisecond
	accessLogSettle = 3 * time.Second
)

// markAccessLogs records the size of every declared external access log
// (ExternalProxy.AccessLog, with $VAR / ${VAR} expanded from the environment)
// before the scenario's first step.
func (r *scenarioRun) markAccessLogs() {
	e := r.plan.External
	if e == nil {
		return
	}
	var marks []accessLogMark
	for _, p := range e.Proxies {
		if p.AccessLog == "" {
			continue
		}
		m := accessLogMark{proxy: p.Name, path: os.ExpandEnv(p.AccessLog), size: -1}
		if fi, err := os.Stat(m.path); err == nil {
			m.size = fi.Size()
		} else if !errors.Is(err, fs.ErrNotExist) {
			m.err = err
		}
		marks = append(marks, m)
	}
	if len(marks) > 0 {
		accessLogMarks.Store(r, marks)
	}
}

// copyAccessLogs copies the bytes each declared access log gained since
// markAccessLogs into <scenario dir>/accesslog/<proxy>.log. A file that is
// missing at the end, that shrank (rotated or truncated: the scenario's lines
// cannot be told apart), or cannot be read is an error naming the proxy and
// path; the other proxies' logs are still copied. Without a mark it does nothing.
func (r *scenarioRun) copyAccessLogs() error {
	v, ok := accessLogMarks.LoadAndDelete(r)
	if !ok {
		return nil
	}
	marks := v.([]accessLogMark)
	var errs []error
	for _, m := range marks {
		if err := r.copyAccessLog(m); err != nil {
			errs = append(errs, fmt.Errorf("access log of %s (%s): %w", m.proxy, m.path, err))
		}
	}
	return errors.Join(errs...)
}

func (r *scenarioRun) copyAccessLog(m accessLogMark) error {
	if m.err != nil {
		return m.err
	}
	size, err := settledSize(m.path, accessLogPoll, accessLogSettle)
	if err != nil {
		return err
	}
	from := max(m.size, 0)
	if size < from {
		return fmt.Errorf("file shrank from %d to %d bytes during the scenario (rotated or truncated)", from, size)
	}
	f, err := os.Open(m.path)
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := evidence.CreateAccessLog(evidence.Dir(r.dir), m.proxy)
	if err != nil {
		return err
	}
	// The copy is the log's lines but for their credentials (a request
	// path's query token): evidence.RedactReader.
	if _, err := io.Copy(out, evidence.RedactReader(io.NewSectionReader(f, from, size-from))); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// settledSize returns path's size once two polls poll apart agree, or the
// last size seen when settle runs out.
func settledSize(path string, poll, settle time.Duration) (int64, error) {
	deadline := time.Now().Add(settle)
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	last := fi.Size()
	for time.Now().Before(deadline) {
		time.Sleep(poll)
		if fi, err = os.Stat(path); err != nil {
			return 0, err
		}
		if fi.Size() == last {
			return last, nil
		}
		last = fi.Size()
	}
	return last, nil
}
