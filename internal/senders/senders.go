// Package senders runs one attack as N sender processes on one host (issue
// 28): N child processes of the rlbench executable, each `rlbench attack
// --shard K/N` of the same attack, each warming its own connections, all
// held until one --start-at instant, so that the burst the limiter sees is
// the union of N bursts released together rather than one process's (whose
// send spread is bounded by what one process's senders can write). Each
// child writes its shard directory DIR/sender-K; the shard directories
// together are a shard set that `rlbench merge` and `rlbench analyze` join
// into one run (evidence/merge), which checks that every ID was sent once by
// exactly one shard, and reports a missing shard (a sender that crashed) as
// NOT_RUN.
package senders

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
)

// MaxSenders bounds the sender processes of one attack on one host.
const MaxSenders = 64

// DefaultLead is how long after Run begins the senders are released when
// Options.StartAt is zero: time for N processes to start, read their
// inputs and warm their connections (each begins warming at once, the
// instant being less than attack.DefaultWarmAhead away).
const DefaultLead = 3 * time.Second

// Options configure Run.
type Options struct {
	// Exe is the rlbench executable the senders run (os.Executable() for
	// the running one). It is started with argument 0 "rlbench".
	Exe string
	// Args are the attack's arguments after "attack", the same for every
	// sender, without --shard, --start-at, --out and --quiet (Run adds
	// them).
	Args []string
	// N is the number of senders (>= 1).
	N int
	// Out is the directory of the shard directories: sender K writes
	// Out/sender-K (SenderDir).
	Out string
	// StartAt is the common start; the zero time is Run's start plus
	// DefaultLead.
	StartAt time.Time
	// Env, when set, is added to each sender's environment (after the
	// parent's).
	Env []string
}

// SenderDir is the shard directory of sender k below out.
func SenderDir(out string, k int) string {
	return filepath.Join(out, "sender-"+strconv.Itoa(k))
}

// Sender is the outcome of one sender process.
type Sender struct {
	// Index is K, Dir its shard directory.
	Index int
	Dir   string
	// Summary is its attack.json (nil when it wrote none).
	Summary *evidence.AttackSummary
	// Err says why the sender failed: it exited non-zero or was killed,
	// or it wrote no attack.json; nil when it ran to its end.
	Err error
}

// Result is what Run returns.
type Result struct {
	// StartAt is the common start the senders were given.
	StartAt time.Time
	// Senders are the N senders, by index.
	Senders []Sender
}

// Failed returns the senders that failed (Sender.Err).
func (r *Result) Failed() []Sender {
	var out []Sender
	for _, s := range r.Senders {
		if s.Err != nil {
			out = append(out, s)
		}
	}
	return out
}

// stderrKeep is how much of a sender's stderr is kept for its error.
const stderrKeep = 4 << 10

// Run starts the N senders, waits for all of them and returns each one's
// outcome. A sender that fails does not stop the others (their requests
// are on the wire already, and their evidence is kept); the caller decides
// (the shard set is then NOT_RUN, evidence/merge). When ctx is done the
// senders are interrupted (SIGINT: each keeps the lines it recorded and
// writes attack.json with complete false). The error is for a sender that
// could not be started, or bad options.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.N < 1 {
		return nil, fmt.Errorf("senders: %d senders, want at least 1", o.N)
	}
	if o.Exe == "" || o.Out == "" {
		return nil, errors.New("senders: Exe and Out are required")
	}
	res := &Result{StartAt: o.StartAt, Senders: make([]Sender, o.N)}
	if res.StartAt.IsZero() {
		res.StartAt = time.Now().Add(DefaultLead)
	}
	cmds := make([]*exec.Cmd, o.N)
	errs := make([]*bytes.Buffer, o.N)
	for k := range o.N {
		dir := SenderDir(o.Out, k)
		res.Senders[k] = Sender{Index: k, Dir: dir}
		args := append([]string{"rlbench", "attack"}, o.Args...)
		args = append(args, "--shard", attack.Shard{Index: k, Count: o.N}.String(),
			"--start-at", strconv.FormatInt(res.StartAt.UnixNano(), 10), "--out", dir, "--quiet")
		c := exec.CommandContext(ctx, o.Exe)
		c.Args = args
		c.Env = append(os.Environ(), o.Env...)
		if _, set := os.LookupEnv("GOMAXPROCS"); !set {
			// N processes on this host's CPUs: each runs its share of
			// burst senders (one per P) and no more, or the senders of
			// one process would wait for CPU the others' spin on.
			c.Env = append(c.Env, "GOMAXPROCS="+strconv.Itoa(max(1, runtime.NumCPU()/o.N)))
		}
		errs[k] = new(bytes.Buffer)
		c.Stderr = &tailWriter{b: errs[k], max: stderrKeep}
		c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
		c.WaitDelay = 30 * time.Second
		cmds[k] = c
	}
	for k, c := range cmds {
		if err := c.Start(); err != nil {
			for _, s := range cmds[:k] {
				_ = s.Process.Kill()
				_ = s.Wait()
			}
			return nil, fmt.Errorf("senders: start sender %d: %w", k, err)
		}
	}
	var wg sync.WaitGroup
	for k, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &res.Senders[k]
			werr := c.Wait()
			s.Summary, s.Err = readSummary(s.Dir)
			if werr != nil {
				msg := strings.TrimSpace(errs[k].String())
				if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
					msg = msg[i+1:]
				}
				if msg != "" {
					werr = fmt.Errorf("%w: %s", werr, msg)
				}
				s.Err = werr
			}
			if s.Err != nil {
				s.Err = fmt.Errorf("sender %d/%d (%s): %w", k, o.N, s.Dir, s.Err)
			}
		}()
	}
	wg.Wait()
	return res, nil
}

// readSummary reads dir's attack.json (one phase: a shard's).
func readSummary(dir string) (*evidence.AttackSummary, error) {
	b, err := os.ReadFile(evidence.Dir(dir).Attack())
	if err != nil {
		return nil, fmt.Errorf("no %s: %w", evidence.AttackFile, err)
	}
	a, err := evidence.DecodeAttack(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", evidence.AttackFile, err)
	}
	if len(a.Phases) != 1 {
		return nil, fmt.Errorf("%s: %d phases, want 1", evidence.AttackFile, len(a.Phases))
	}
	return &a.Phases[0], nil
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	b   *bytes.Buffer
	max int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}
