package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/spf13/cobra"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// AttackOptions are the inputs of `rlbench attack`, parsed from its flags.
type AttackOptions struct {
	IO *IOStreams
	// Targets are the --target NAME=URL flags, in order, names unique.
	Targets []attack.Target
	// IDs is --ids (generated PREFIX-0001...); IDsFile is --ids-file. Exactly one is set.
	IDs      int
	IDPrefix string
	IDsFile  string
	Split    attack.Split
	Seed     int64
	Method   string
	Path     string
	// Header holds the --header "Name: value" flags, validated.
	Header   http.Header
	Body     string
	BodyFile string
	// Concurrency caps the requests in flight; 0 = all IDs at once (capped
	// below the descriptor limit), or with a Rate a pool sized from it.
	Concurrency int
	// NoKeepAlive is --no-keepalive: one new connection per request.
	NoKeepAlive bool
	// Rate is --rate; the zero Rate means no pacing.
	Rate    vegeta.Rate
	Timeout time.Duration
	Capture []string
	Out     string
}

// NewAttackCmd is `rlbench attack`. runF, when not nil, receives the parsed
// options instead of running the attack (tests).
func NewAttackCmd(io *IOStreams, runF func(*AttackOptions) error) *cobra.Command {
	o := &AttackOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "attack --target NAME=URL... (--ids N | --ids-file FILE) --out DIR",
		Short: "Fire a fixed set of request IDs at one or more targets, once each, and record every outcome",
		Long: `attack sends each ID exactly once (no retries, no silent re-send on a dead
keep-alive connection) in the X-Rlbench-Id header, split over the targets:
even (round robin), sticky (all to the first), counts=10,10 or
weights=60,30,10 (deterministic with --seed). It writes DIR/requests.jsonl
(one line per ID, flushed as results arrive) and DIR/attack.json. SIGINT
stops it: recorded lines are kept and attack.json says "complete": false.`,
		Example: `  rlbench attack --target proxy-a=http://127.0.0.1:10000 --target proxy-b=http://127.0.0.1:10001 \
      --ids 20 --split even --path /inventory --out evidence/manual`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runAttack(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	targetsFlag(f, &o.Targets, "target", "target as `NAME=URL` (repeatable); NAME should be the proxy name used for its stats")
	f.IntVar(&o.IDs, "ids", 0, "number of IDs to fire")
	f.StringVar(&o.IDPrefix, "id-prefix", "req", "prefix of generated IDs (PREFIX-0001, ...)")
	f.StringVar(&o.IDsFile, "ids-file", "", "file with one ID per line (instead of --ids)")
	splitFlag(f, &o.Split, "split", attack.Split{Mode: attack.SplitEven}, "even | sticky | counts=N,N,... | weights=W,W,...")
	f.Int64Var(&o.Seed, "seed", 1, "seed for weights splits")
	f.StringVar(&o.Method, "method", "GET", "HTTP method")
	f.StringVar(&o.Path, "path", "/", "request path (appended to each target URL)")
	headerFlag(f, &o.Header, "header", "request header `\"Name: value\"` (repeatable)")
	f.StringVar(&o.Body, "body", "", "request body")
	f.StringVar(&o.BodyFile, "body-file", "", "file holding the request body")
	f.IntVar(&o.Concurrency, "concurrency", 0, "most requests in flight (default: all IDs at once, capped below the file-descriptor limit; with --rate, a pool sized from the rate and latency)")
	f.BoolVar(&o.NoKeepAlive, "no-keepalive", false, "one new connection per request (one Envoy per-connection bucket per request)")
	rateFlag(f, &o.Rate, "rate", "open-loop rate such as 100/1s (default: no pacing)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Second, "per-request timeout")
	f.StringArrayVar(&o.Capture, "capture-header", nil, "response header to record (repeatable; default: the rate-limit headers)")
	f.StringVar(&o.Out, "out", "", "evidence directory to write requests.jsonl and attack.json into")
	return cmd
}

// validate reports flag combinations that cannot work, as usage errors.
func (o *AttackOptions) validate() error {
	if len(o.Targets) == 0 {
		return usageErrorf("at least one --target NAME=URL is required")
	}
	if o.Out == "" {
		return usageErrorf("--out DIR is required")
	}
	if o.IDs < 0 {
		return usageErrorf("--ids must be positive, not %d", o.IDs)
	}
	if (o.IDs > 0) == (o.IDsFile != "") {
		return usageErrorf("give exactly one of --ids N or --ids-file FILE")
	}
	if o.Concurrency < 0 {
		return usageErrorf("--concurrency must be >= 0, not %d", o.Concurrency)
	}
	return nil
}

func runAttack(ctx context.Context, o *AttackOptions) error {
	var err error
	body := []byte(o.Body)
	if o.BodyFile != "" {
		if body, err = os.ReadFile(o.BodyFile); err != nil {
			return err
		}
	}
	var ids []string
	if o.IDsFile != "" {
		f, err := os.Open(o.IDsFile)
		if err != nil {
			return err
		}
		ids, err = attack.ReadIDs(f, o.IDsFile)
		f.Close()
		if err != nil {
			return err
		}
	} else {
		ids = attack.IDs(o.IDs, o.IDPrefix)
	}
	opts := attack.Options{IDs: ids, Targets: o.Targets, Split: o.Split, Seed: o.Seed, Method: o.Method,
		Path: o.Path, Header: o.Header, Body: body, Concurrency: o.Concurrency, Rate: o.Rate, Timeout: o.Timeout,
		CaptureHeaders: o.Capture, DisableKeepAlives: o.NoKeepAlive}
	// A split that does not fit the IDs and targets, an invalid method or
	// header, a concurrency beyond the descriptor limit: usage errors, found
	// before anything is sent or written.
	if err := attack.Check(opts); err != nil {
		if errors.Is(err, attack.ErrInvalidOptions) {
			return &UsageError{Err: err}
		}
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	w, err := evidence.Create(filepath.Join(o.Out, evidence.RequestsFile))
	if err != nil {
		return err
	}
	sum, runErr := attack.Run(ctx, opts, w)
	if cerr := w.Close(); runErr == nil && cerr != nil {
		runErr = cerr
	}
	if sum != nil {
		if err := evidence.WriteJSONFile(evidence.Dir(o.Out).Attack(), evidence.NewAttack(sum)); err != nil {
			return err
		}
		printAttackSummary(o, sum, len(ids))
		if sum.Interrupted {
			return &ExitCodeError{Code: ExitInterrupted, Msg: fmt.Sprintf("interrupted after %d of %d IDs; recorded lines kept, attack.json says complete=false", sum.Sent, len(ids))}
		}
	}
	if runErr == nil && sum != nil && sum.NotSent > 0 {
		return fmt.Errorf("attack incomplete: %s", sum.Error)
	}
	return runErr
}

// printAttackSummary prints the outcome, the worker bound and where it
// came from (descriptor cap included), and the burst or pacing figures.
func printAttackSummary(o *AttackOptions, sum *attack.Summary, ids int) {
	c := sum.Config
	fmt.Fprintf(o.IO.ErrOut, "attack: %d of %d IDs sent (%d not sent), codes %v -> %s\n", sum.Sent-sum.NotSent, ids, sum.NotSent, sum.CodesByTarget, o.Out)
	fmt.Fprintf(o.IO.ErrOut, "attack: workers %d (from %s; descriptor cap %d of limit %d, %d open)\n", c.Workers, c.WorkersFrom, c.FDCap, c.FDLimit, c.FDOpen)
	if b := sum.Burst; b != nil {
		fmt.Fprintf(o.IO.ErrOut, "attack: burst of %d on %d warm connections, send spread %s (p50 %s, p99 %s after release)\n",
			b.Requests, b.WarmConnections, time.Duration(b.SpreadNs), time.Duration(b.SendNs.P50), time.Duration(b.SendNs.P99))
	}
	if pc := sum.Pacing; pc != nil {
		fmt.Fprintf(o.IO.ErrOut, "attack: rate %.0f/s achieved (intended %.0f/s), pacing error p50 %s p99 %s max %s, latency from intended p99 %s, workers peak %d bound %d\n",
			pc.AchievedPerSec, c.RatePerSec, time.Duration(pc.ErrorNs.P50), time.Duration(pc.ErrorNs.P99), time.Duration(pc.ErrorNs.Max),
			time.Duration(pc.LatencyFromIntendedNs.P99), pc.WorkersPeak, pc.WorkersBound)
	}
}
