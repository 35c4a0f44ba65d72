package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/events"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/internal/human"
	"github.com/rlbench/rlbench/internal/senders"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// AttackOptions are the inputs of `rlbench attack`, parsed from its flags.
type AttackOptions struct {
	IO *IOStreams
	// Targets are the --target NAME=URL flags, in order, names unique.
	Targets []attack.Target
	// IDs is --ids (generated PREFIX-0001...); IDsFile is --ids-file. At most
	// one is set; one is required unless flows or a targets file give the IDs.
	IDs      int
	IDPrefix string
	IDsFile  string
	Split    attack.Split
	Seed     int64
	Method   string
	Path     string
	// Header holds the --header "Name: value" flags, validated; with flows
	// they are sent by every flow.
	Header   http.Header
	Body     string
	BodyFile string
	// Concurrency caps the requests in flight; 0 = all IDs at once (capped
	// below the descriptor limit), or with a Rate a pool sized from it.
	Concurrency int
	// NoKeepAlive is --no-keepalive: one new connection per request.
	NoKeepAlive bool
	// Engine is --engine: attack.Options.Engine ("auto" is
	// attack.EngineAuto). EventLoop is the deprecated --event-loop (the
	// loops are the default now): it changes nothing.
	Engine    string
	EventLoop bool
	// Pipeline is --pipeline: attack.Options.Pipeline.
	Pipeline int
	// Rate is --rate; the zero Rate means no pacing. Duration is
	// --duration: with a rate, the IDs are rate x duration (vegeta's
	// -duration).
	Rate     vegeta.Rate
	Duration time.Duration
	Timeout  time.Duration
	Capture  []string
	Out      string

	// Flows are the --flow flags (a multi-flow attack).
	Flows []FlowSpec
	// TargetsFile is --targets-file in TargetsFormat (--targets-format:
	// vegeta's "http" or "json" target format).
	TargetsFile   string
	TargetsFormat string

	// TLS: --insecure, --cacert, --cert and --key; Protocol from --http2
	// (attack.ProtoH2) or --h2c (attack.ProtoH2C).
	Insecure     bool
	CACert       string
	Cert, Key    string
	HTTP2, H2C   bool
	Shard        attack.Shard
	ShardFromEnv string
	Shards       int
	StartAt      time.Time
	WarmAhead    time.Duration
	Quiet        bool
	// Overwrite replaces the attack evidence already in Out (--overwrite).
	Overwrite bool
	// RemoteWrite is --remote-write and --remote-write-interval: the series
	// carry run_id = the --out directory's name and scenario = "attack".
	RemoteWrite RemoteWriteOptions
	// Events is --events: "" none, "-" standard output, else a file.
	Events         string
	changedForFlow []string // attack-level flags that flows replace, as given
	// Senders is --senders: run the attack as that many sender processes
	// (internal/senders), 0 or 1 in this process.
	Senders int
}

// givenFlag is one flag as given on the command line: its name and the
// value Set received; the sender processes of --senders are given them.
type givenFlag struct{ name, value string }

// recordValue records the values a flag is Set to, in order.
type recordValue struct {
	pflag.Value
	name string
	to   *[]givenFlag
}

func (r *recordValue) Set(v string) error {
	*r.to = append(*r.to, givenFlag{r.name, v})
	return r.Value.Set(v)
}

// NewAttackCmd is `rlbench attack`. runF, when not nil, receives the parsed
// options instead of running the attack (tests).
func NewAttackCmd(io *IOStreams, runF func(*AttackOptions) error) *cobra.Command {
	o := &AttackOptions{IO: io}
	var given []givenFlag // the flags as given, for --senders
	cmd := &cobra.Command{
		Use:   "attack --target NAME=URL... (--ids N | --ids-file FILE | --flow SPEC... | --targets-file FILE) --out DIR",
		Short: "Fire a fixed set of request IDs at one or more targets, once each, and record every outcome",
		Long: `attack sends each ID exactly once (no retries, no silent re-send on a dead
keep-alive connection or HTTP/2 stream) in the X-Rlbench-Id header, split over
the targets: even (round robin), sticky (all to the first), counts=10,10 or
weights=60,30,10 (deterministic with --seed). It writes DIR/requests.jsonl
(one line per ID, flushed as results arrive) and DIR/attack.json. SIGINT
stops it: recorded lines are kept and attack.json says "complete": false.

Flows: --flow 'name=A,rate=300/s,ids=1500,header=x-user:A,path=/ping'
--flow 'name=B,rate=20/s,ids=100,header=x-user:B,path=/ping'
(repeatable) runs several clients at once, each with its own IDs, rate (or
all at once), request and split; they start together and every line names
its flow. Keys: name (required), ids=N or ids-file=FILE or duration=D (with
rate: rate x D IDs), id-prefix (default PREFIX-NAME), rate, method, path,
header=Name:value (repeatable), body, split (weights=60:30:10 or
counts=5:5, ':' between the values), seed, concurrency, no-keepalive.
A value cannot hold a comma.

Targets files: --targets-file FILE reads vegeta's HTTP or JSON target
format (--targets-format) with vegeta's own decoders; target line k (0-based)
is one request template, and ID j is sent as template j mod L (L lines: the
order in which vegeta cycles through its targets). The IDs are --ids N,
--ids-file, rate x --duration, or one per line. Each URL's scheme://host:port
is the target of the --target with that URL, else a target named host:port.

Sharding: --shard K/N (or --shard-from-env JOB_COMPLETION_INDEX --shards N)
sends the K-th of N slices of every flow (IDs at positions k with
k mod N == K), so N shards send the whole attack between them; --start-at
holds the start until a wall-clock instant (RFC 3339 or unix ns), with the
connections warmed --warm-ahead before it. --senders N runs the attack as N
sender processes of this executable on this host, each a shard K/N with its
own warm connections writing --out/sender-K, all released at one --start-at
(default: in 3 s); analyze --out joins them and reports each sender's send
and landed widths (arrivals). Progress is shown on stderr (a
bar on a terminal, a line every few seconds otherwise; none with --quiet);
--events FILE (or - for stdout) writes it as JSON Lines every second too
(schemas/event.v1.schema.json: started, progress per target and class,
finished).`,
		Example: `  rlbench attack --target http://127.0.0.1:10000 --ids 20 --out ev            # one target, 20 IDs at once
  rlbench attack --target a=http://127.0.0.1:10000 --target b=http://127.0.0.1:10001 --ids 20 --out ev
  rlbench attack --target http://127.0.0.1:10000 --rate 50/1s --duration 10s --out ev    # paced: 500 IDs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range []string{"ids", "ids-file", "id-prefix", "split", "seed", "method", "path", "body", "body-file", "concurrency", "rate", "duration"} {
				if cmd.Flags().Changed(name) {
					o.changedForFlow = append(o.changedForFlow, "--"+name)
				}
			}
			if err := o.validate(); err != nil {
				return err
			}
			o.changedForFlow = nil
			if runF != nil {
				return runF(o)
			}
			if o.Senders > 1 {
				return runSenders(cmd.Context(), o, given)
			}
			return runAttack(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	targetsFlag(f, &o.Targets, "target", "target as `NAME=URL` (repeatable); NAME should be the proxy name used for its stats; a single target may be a bare URL, named host:port")
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
	f.StringVar(&o.Engine, "engine", "auto", "auto: closed-loop HTTP/1.1 flows to one plain-http target on epoll event loops (Linux), the others on goroutines; goroutines: every flow on a goroutine per connection")
	f.BoolVar(&o.EventLoop, "event-loop", false, "the event loops are the default now (--engine auto)")
	_ = f.MarkDeprecated("event-loop", "the event loops are the default (--engine auto); --engine goroutines opts out")
	f.IntVar(&o.Pipeline, "pipeline", 0, "HTTP/1.1 pipelining: each connection writes this many consecutive IDs' requests at once, then reads their responses in order (a burst in fewer reads; no --rate; --concurrency counts connections)")
	rateFlag(f, &o.Rate, "rate", "open-loop rate such as 100/1s (default: no pacing)")
	f.DurationVar(&o.Duration, "duration", 0, "with --rate: send rate x duration IDs (instead of --ids)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Second, "per-request timeout")
	f.StringArrayVar(&o.Capture, "capture-header", nil, "response header to record (repeatable; default: the rate-limit headers)")
	f.StringVar(&o.Out, "out", "", "evidence directory to write requests.jsonl and attack.json into")
	flowsFlag(f, &o.Flows, "flow", "a flow `SPEC` such as 'name=A,rate=300/s,ids=1500,header=x-user:A,path=/ping' (repeatable)")
	f.StringVar(&o.TargetsFile, "targets-file", "", "vegeta targets `FILE` (one request template per target)")
	enumFlag(cmd, &o.TargetsFormat, "targets-format", "http", []string{"http", "json"}, "format of --targets-file (vegeta's)")
	f.BoolVar(&o.Insecure, "insecure", false, "do not verify the servers' TLS certificates")
	f.StringVar(&o.CACert, "cacert", "", "PEM `FILE` of the CA certificates that sign the servers' certificates")
	f.StringVar(&o.Cert, "cert", "", "PEM `FILE` of the client certificate (mTLS; with --key)")
	f.StringVar(&o.Key, "key", "", "PEM `FILE` of the client certificate's private key")
	f.BoolVar(&o.HTTP2, "http2", false, "HTTP/2 over TLS (ALPN h2) to https targets")
	f.BoolVar(&o.H2C, "h2c", false, "HTTP/2 over cleartext TCP with prior knowledge to http targets")
	shardFlag(f, &o.Shard, "shard", "send the K-th of N slices (`K/N`, 0 <= K < N)")
	f.StringVar(&o.ShardFromEnv, "shard-from-env", "", "read the shard index K from environment `VAR` (e.g. JOB_COMPLETION_INDEX; with --shards)")
	f.IntVar(&o.Shards, "shards", 0, "the shard count N with --shard-from-env")
	startAtFlag(f, &o.StartAt, "start-at", "hold the start until this wall-clock `TIME` (RFC 3339 or unix ns); connections are warmed before")
	f.DurationVar(&o.WarmAhead, "warm-ahead", attack.DefaultWarmAhead, "with --start-at: begin warming connections this long before it")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress or summary lines on stderr")
	eventsFlag(cmd, &o.Events)
	f.BoolVar(&o.Overwrite, "overwrite", false, "replace the requests.jsonl and attack.json already in --out (default: refuse)")
	remoteWriteFlags(cmd, &o.RemoteWrite)
	f.IntVar(&o.Senders, "senders", 0, "run the attack as `N` sender processes of this executable, each a shard, warmed and released at one --start-at instant (writes --out/sender-K; at most 64; 0 or 1: one process, as without it)")
	f.VisitAll(func(fl *pflag.Flag) { fl.Value = &recordValue{Value: fl.Value, name: fl.Name, to: &given} })
	return cmd
}

// validate reports flag combinations that cannot work, as usage errors,
// one concern after the other: the targets, --out, the flows or the IDs,
// the transport, the shard, --warm-ahead.
func (o *AttackOptions) validate() error {
	if len(o.Targets) == 0 && o.TargetsFile == "" {
		return usageErrorf("at least one --target NAME=URL is required")
	}
	if err := o.validateOut(); err != nil {
		return err
	}
	if err := checkEvents(o.Events); err != nil {
		return err
	}
	if len(o.Flows) > 0 {
		if err := o.validateFlows(); err != nil {
			return err
		}
	} else if err := o.validateIDs(); err != nil {
		return err
	}
	if err := o.validateTransport(); err != nil {
		return err
	}
	if err := o.validateShard(); err != nil {
		return err
	}
	if err := o.validateSenders(); err != nil {
		return err
	}
	if o.WarmAhead < 0 {
		return usageErrorf("--warm-ahead must be >= 0, not %s", o.WarmAhead)
	}
	if o.Engine != "auto" && o.Engine != attack.EngineGoroutines {
		return usageErrorf("--engine %q: want auto or %s", o.Engine, attack.EngineGoroutines)
	}
	return nil
}

// validateOut checks --out: given, a directory (checkOutputDir), and
// without --overwrite free of an earlier attack's evidence.
func (o *AttackOptions) validateOut() error {
	if o.Out == "" {
		return usageErrorf("--out DIR is required")
	}
	if err := checkOutputDir("--out", o.Out, false); err != nil {
		return err
	}
	if !o.Overwrite {
		// An earlier attack's evidence is never replaced by accident.
		for _, name := range []string{evidence.RequestsFile, evidence.AttackFile} {
			if _, err := os.Lstat(filepath.Join(o.Out, name)); err == nil {
				return usageErrorf("--out %s: already holds %s from an earlier attack: give a new directory, or --overwrite to replace its attack evidence", o.Out, name)
			}
		}
	}
	return nil
}

// validateFlows checks an attack of --flow specs: no --targets-file, no
// per-flow flag set for the whole attack, at most attack.MaxIDs IDs in all.
func (o *AttackOptions) validateFlows() error {
	if o.TargetsFile != "" {
		return usageErrorf("give --flow or --targets-file, not both")
	}
	if len(o.changedForFlow) > 0 {
		return usageErrorf("with --flow, set %s in each flow (e.g. --flow 'name=A,ids=10,rate=5/s'), not for the attack", strings.Join(o.changedForFlow, ", "))
	}
	total := 0
	for _, f := range o.Flows {
		total += f.IDs // each is at most attack.MaxIDs (parseFlow)
	}
	if err := attack.CheckIDs(fmt.Sprintf("--flow: %d flows", len(o.Flows)), total); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// validateIDs checks the IDs of an attack without --flow: --ids,
// --ids-file or --duration with --rate (which sets IDs to rate x duration),
// exactly one unless --targets-file gives them; --concurrency >= 0; and
// the request flags that --targets-file replaces.
func (o *AttackOptions) validateIDs() error {
	if o.IDs < 0 || o.IDs == 0 && slices.Contains(o.changedForFlow, "--ids") {
		return usageErrorf("--ids must be at least 1, not %d", o.IDs)
	}
	if o.IDs > 0 && o.IDsFile != "" {
		return usageErrorf("give exactly one of --ids N or --ids-file FILE")
	}
	if err := o.validateDuration(); err != nil {
		return err
	}
	if err := attack.CheckIDs(fmt.Sprintf("--ids %d", o.IDs), o.IDs); err != nil {
		return &UsageError{Err: err}
	}
	if o.IDs == 0 && o.IDsFile == "" && o.TargetsFile == "" {
		return usageErrorf("give exactly one of --ids N or --ids-file FILE")
	}
	if o.Concurrency < 0 {
		return usageErrorf("--concurrency must be >= 0, not %d", o.Concurrency)
	}
	if o.TargetsFile != "" {
		for _, name := range []string{"--method", "--path", "--body", "--body-file", "--split"} {
			if slices.Contains(o.changedForFlow, name) {
				return usageErrorf("%s does not go with --targets-file: each target line gives its request", name)
			}
		}
	}
	return nil
}

// validateDuration checks --duration (>= 0; with --rate, instead of --ids
// and --ids-file) and sets IDs to rate x duration (attack.DurationIDs),
// at least one and at most attack.MaxIDs.
func (o *AttackOptions) validateDuration() error {
	if o.Duration < 0 {
		return usageErrorf("--duration must be positive, not %s", o.Duration)
	}
	if o.Duration == 0 {
		return nil
	}
	if o.Rate.Freq == 0 {
		return usageErrorf("--duration needs --rate (the IDs are rate x duration)")
	}
	if o.IDs > 0 || o.IDsFile != "" {
		return usageErrorf("give --duration or --ids/--ids-file, not both")
	}
	o.IDs = attack.DurationIDs(o.Rate, o.Duration)
	if o.IDs == 0 {
		return usageErrorf("--rate %s for --duration %s is no request", attack.FormatRate(o.Rate), o.Duration)
	}
	if err := attack.CheckIDs(fmt.Sprintf("--rate %s for --duration %s", attack.FormatRate(o.Rate), o.Duration), o.IDs); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// validateTransport checks the protocol and TLS flags: --http2 or --h2c,
// --cert with --key.
func (o *AttackOptions) validateTransport() error {
	if o.HTTP2 && o.H2C {
		return usageErrorf("give --http2 (TLS) or --h2c (cleartext), not both")
	}
	if (o.Cert == "") != (o.Key == "") {
		return usageErrorf("--cert and --key go together (the client certificate and its key)")
	}
	return nil
}

// validateShard checks --shard-from-env VAR with --shards N (not with
// --shard K/N) and sets Shard from the variable's index 0..N-1.
func (o *AttackOptions) validateShard() error {
	if o.ShardFromEnv == "" && o.Shards == 0 {
		return nil
	}
	if o.Shard.Count > 0 {
		return usageErrorf("give --shard K/N or --shard-from-env VAR --shards N, not both")
	}
	if o.ShardFromEnv == "" || o.Shards < 1 {
		return usageErrorf("--shard-from-env VAR needs --shards N (N >= 1), and --shards needs --shard-from-env")
	}
	v, ok := os.LookupEnv(o.ShardFromEnv)
	if !ok {
		return usageErrorf("--shard-from-env %s: the variable is not set", o.ShardFromEnv)
	}
	k, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || k < 0 || k >= o.Shards {
		return usageErrorf("--shard-from-env %s=%q: want an index 0..%d for --shards %d", o.ShardFromEnv, v, o.Shards-1, o.Shards)
	}
	o.Shard = attack.Shard{Index: k, Count: o.Shards}
	return nil
}

// sendersOwn are the flags --senders gives each sender itself (the shard,
// the start, the directory, quiet) or keeps for the parent (--senders,
// --overwrite: the parent checks --out once), never passed through.
var sendersOwn = map[string]bool{"senders": true, "shard": true, "shard-from-env": true, "shards": true, "start-at": true,
	"out": true, "quiet": true, "overwrite": true}

// validateSenders checks --senders N: 0 .. senders.MaxSenders, at most
// the IDs (--ids), a --start-at still to come, and with more than one
// no shard of its own (the senders are the shards), no --events or
// --remote-write (each sender would report a part of the attack as the
// whole), and an --out without earlier senders' directories.
func (o *AttackOptions) validateSenders() error {
	if o.Senders < 0 || o.Senders > senders.MaxSenders {
		return usageErrorf("--senders must be 0..%d (processes on this host), not %d", senders.MaxSenders, o.Senders)
	}
	if o.Senders <= 1 {
		return nil
	}
	if o.IDs > 0 && len(o.Flows) == 0 && o.Senders > o.IDs {
		return usageErrorf("--senders %d: more senders than the %d IDs (a sender would send none)", o.Senders, o.IDs)
	}
	if !o.StartAt.IsZero() && !o.StartAt.After(time.Now()) {
		return usageErrorf("--senders: --start-at %s has passed: the senders could not start together", o.StartAt.UTC().Format(time.RFC3339Nano))
	}
	if o.Shard.Count > 0 {
		return usageErrorf("--senders %d runs the shards itself: give --senders or --shard, not both", o.Senders)
	}
	if o.Events != "" || o.RemoteWrite.URL != "" {
		return usageErrorf("--senders: --events and --remote-write are not supported (each sender would report its part as the attack)")
	}
	for k := range o.Senders {
		d := senders.SenderDir(o.Out, k)
		if _, err := os.Lstat(d); err == nil && !o.Overwrite {
			return usageErrorf("--out %s: already holds %s from an earlier attack: give a new directory, or --overwrite to replace it", o.Out, d)
		}
	}
	return nil
}

// runSenders runs the attack as o.Senders sender processes of this
// executable (internal/senders), given the flags as given except
// sendersOwn, each a shard --shard K/N writing
// --out/sender-K, all released at --start-at (default: in
// senders.DefaultLead), then prints each one's figures and the burst's send
// window over all. A sender that failed is an error (exit 1) naming it;
// its shard is missing or incomplete, so `rlbench analyze --out` (which
// merges the shard directories) judges the run NOT_RUN.
func runSenders(ctx context.Context, o *AttackOptions, given []givenFlag) error {
	// What every sender would refuse (an invalid pipeline, a split that
	// does not fit, a header): a usage error here, named, before any starts.
	opts, err := o.attackOptions()
	if err != nil {
		return err
	}
	opts.Shard = attack.Shard{Index: 0, Count: o.Senders}
	if err := attack.Check(opts); err != nil {
		if errors.Is(err, attack.ErrInvalidOptions) {
			return &UsageError{Err: err}
		}
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--senders: %w", err)
	}
	var args []string
	for _, g := range given {
		if !sendersOwn[g.name] {
			args = append(args, "--"+g.name+"="+g.value)
		}
	}
	for k := range o.Senders {
		d := senders.SenderDir(o.Out, k)
		if o.Overwrite {
			if err := os.RemoveAll(d); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	res, err := senders.Run(ctx, senders.Options{Exe: exe, Args: args, N: o.Senders, Out: o.Out, StartAt: o.StartAt})
	if err != nil {
		return err
	}
	errOut := o.IO.ErrOut
	if o.Quiet {
		errOut = io.Discard
	}
	printSendersSummary(errOut, res)
	// A sender that an interrupt stopped (exit ExitInterrupted, its
	// attack.json written, interrupted) did not fail: the run was
	// interrupted, reported below.
	var failed []senders.Sender
	for _, s := range res.Failed() {
		var ee *exec.ExitError
		if s.Summary != nil && s.Summary.Interrupted && errors.As(s.Err, &ee) && ee.ExitCode() == ExitInterrupted {
			continue
		}
		failed = append(failed, s)
	}
	if len(failed) > 0 {
		msgs := make([]string, len(failed))
		for i, s := range failed {
			msgs[i] = evidence.RedactText(s.Err.Error())
		}
		return fmt.Errorf("%d of %d senders failed (the run is NOT_RUN): %s", len(failed), o.Senders, strings.Join(msgs, "; "))
	}
	for _, s := range res.Senders {
		if sum := s.Summary; sum.Interrupted {
			return &ExitCodeError{Code: ExitInterrupted, Msg: fmt.Sprintf("sender %d interrupted; recorded lines kept, its attack.json says complete=false", s.Index)}
		}
	}
	return nil
}

// printSendersSummary prints each sender's figures (IDs sent, send spread,
// lateness against the common start) and the send window over all of them
// (first send of any sender to the last of any: one host, one clock). A
// sender without attack.json (killed before writing it) sent an unknown
// part of its IDs: they count among the attack's IDs, never as sent, and
// the line names them "sent status unknown".
func printSendersSummary(w io.Writer, res *senders.Result) {
	d := report.HumanNs
	var first, last int64
	sent, ids := 0, 0
	var unknown []int // senders without attack.json
	for _, s := range res.Senders {
		sum := s.Summary
		if sum == nil {
			fmt.Fprintf(w, "attack: sender %d: no %s: the IDs it sent are unknown\n", s.Index, evidence.AttackFile)
			unknown = append(unknown, s.Index)
			continue
		}
		sent += sum.Sent - sum.NotSent
		ids += sum.Config.IDs
		late := int64(0)
		if sum.StartAt != nil {
			late = sum.StartAt.LateNs
		}
		fmt.Fprintf(w, "attack: sender %d: %d of %d IDs sent, send spread %s, started %s after the start -> %s\n", s.Index, sum.Sent-sum.NotSent, sum.Config.IDs, d(sum.SendSpreadNs), d(late), s.Dir)
		if sum.FirstSendNs > 0 && (first == 0 || sum.FirstSendNs < first) {
			first = sum.FirstSendNs
		}
		last = max(last, sum.LastSendNs)
	}
	if len(unknown) == 0 {
		fmt.Fprintf(w, "attack: %d senders: %d of %d IDs sent, send window %s (first send of any sender to the last)\n", len(res.Senders), sent, ids, d(last-first))
		return
	}
	names := make([]string, len(unknown))
	for i, k := range unknown {
		names[i] = strconv.Itoa(k)
	}
	who := "sender " + strings.Join(names, ", ")
	if len(unknown) > 1 {
		who = "senders " + strings.Join(names, ", ")
	}
	if n, ok := senderIDs(res, unknown); ok {
		fmt.Fprintf(w, "attack: %d senders: %d of %d IDs sent; sent status unknown: the %d IDs of %s (no %s); send window %s (first send of any sender to the last)\n",
			len(res.Senders), sent, ids+n, n, who, evidence.AttackFile, d(last-first))
		return
	}
	fmt.Fprintf(w, "attack: %d senders: %d IDs sent by the senders with %s; sent status unknown: the IDs of %s (no %s)\n",
		len(res.Senders), sent, evidence.AttackFile, who, evidence.AttackFile)
}

// senderIDs is how many IDs the senders of index ks were to send, from the
// shard record (evidence.AttackShard) of a sender that wrote attack.json:
// each flow's share (attack.Shard.Share) of its unsharded IDs. ok is false
// when no sender wrote one.
func senderIDs(res *senders.Result, ks []int) (n int, ok bool) {
	for _, s := range res.Senders {
		if s.Summary == nil || s.Summary.Shard == nil {
			continue
		}
		sh := s.Summary.Shard
		for _, k := range ks {
			for _, f := range sh.Flows {
				n += attack.Shard{Index: k, Count: sh.Count}.Share(f.TotalIDs)
			}
		}
		return n, true
	}
	return 0, false
}

// attackOptions builds the library's options from the flags: it reads the
// ID, body, targets and certificate files. Errors name the file.
func (o *AttackOptions) attackOptions() (attack.Options, error) {
	opts := attack.Options{Targets: o.Targets, Timeout: o.Timeout, CaptureHeaders: o.Capture, DisableKeepAlives: o.NoKeepAlive,
		Engine: engineOption(o.Engine), Pipeline: o.Pipeline, Shard: o.Shard, StartAt: o.StartAt, WarmAhead: o.WarmAhead, Node: evidence.NodeName(os.Getenv)}
	cfg, err := o.tlsConfig()
	if err != nil {
		return opts, err
	}
	opts.TLSConfig = cfg
	switch {
	case o.HTTP2:
		opts.Protocol = attack.ProtoH2
	case o.H2C:
		opts.Protocol = attack.ProtoH2C
	}
	switch {
	case len(o.Flows) > 0:
		for _, fs := range o.Flows {
			fl, err := fs.flow(o.IDPrefix, o.Header)
			if err != nil {
				return opts, err
			}
			opts.Flows = append(opts.Flows, fl)
		}
	case o.TargetsFile != "":
		fl, targets, err := o.targetsFileFlow()
		if err != nil {
			return opts, err
		}
		opts.Targets, opts.Flows = targets, []attack.Flow{fl}
	default:
		body := []byte(o.Body)
		if o.BodyFile != "" {
			f, err := inputFile("--body-file", o.BodyFile)
			if err != nil {
				return opts, err
			}
			body, err = io.ReadAll(f)
			f.Close()
			if err != nil {
				return opts, fmt.Errorf("--body-file %s: %w", o.BodyFile, err)
			}
		}
		ids, err := readIDs(o.IDs, o.IDsFile, o.IDPrefix)
		if err != nil {
			return opts, err
		}
		opts.IDs, opts.Split, opts.Seed, opts.Method, opts.Path, opts.Header, opts.Body = ids, o.Split, o.Seed, o.Method, o.Path, o.Header, body
		opts.Concurrency, opts.Rate = o.Concurrency, o.Rate
	}
	return opts, nil
}

// readIDs is --ids-file's IDs, or n generated with prefix.
func readIDs(n int, file, prefix string) ([]string, error) {
	if file == "" {
		return attack.IDs(n, prefix), nil
	}
	f, err := inputFile("--ids-file", file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return attack.ReadIDs(f, file)
}

// inputFile opens path, given with flag, as a regular file
// (boundedio.OpenFile). A path that does not exist is a usage error
// naming the flag; one that is not a regular file (a FIFO may block for
// ever, /dev/zero never ends) is the *boundedio.NotRegularError, which
// exitCode makes a usage error too, its message led by the flag.
func inputFile(flag, path string) (*os.File, error) {
	f, _, err := boundedio.OpenFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, usageErrorf("%s %s: no such file", flag, path)
	case err != nil:
		return nil, fmt.Errorf("%s %w", flag, err)
	}
	return f, nil
}

// tlsConfig builds the client TLS configuration of --insecure, --cacert
// and --cert/--key; nil when none is given.
func (o *AttackOptions) tlsConfig() (*tls.Config, error) {
	if !o.Insecure && o.CACert == "" && o.Cert == "" {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: o.Insecure}
	if o.CACert != "" {
		pem, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate found", o.CACert)
		}
		cfg.RootCAs = pool
	}
	if o.Cert != "" {
		c, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("--cert %s --key %s: %w", o.Cert, o.Key, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// targetsFileFlow reads --targets-file with vegeta's decoder of
// --targets-format into one flow of request templates, and the targets
// their URLs name (package doc of attack: ID j goes to template j mod L).
func (o *AttackOptions) targetsFileFlow() (attack.Flow, []attack.Target, error) {
	f, err := os.Open(o.TargetsFile)
	if err != nil {
		return attack.Flow{}, nil, err
	}
	defer f.Close()
	var body []byte
	if o.Body != "" || o.BodyFile != "" {
		return attack.Flow{}, nil, &UsageError{Err: errors.New("--body does not go with --targets-file: each target gives its body")}
	}
	var tr vegeta.Targeter
	if o.TargetsFormat == "json" {
		tr = vegeta.NewJSONTargeter(f, body, o.Header)
	} else {
		tr = vegeta.NewHTTPTargeter(f, body, o.Header)
	}
	targets := append([]attack.Target(nil), o.Targets...)
	byOrigin := map[string]string{}
	for _, t := range targets {
		byOrigin[strings.TrimRight(t.URL, "/")] = t.Name
	}
	var tmpls []attack.RequestTemplate
	for k := 1; ; k++ {
		var t vegeta.Target
		if err := tr(&t); err != nil {
			if errors.Is(err, vegeta.ErrNoTargets) {
				break
			}
			return attack.Flow{}, nil, fmt.Errorf("%s: target %d: %w", o.TargetsFile, k, targetsFileError(err))
		}
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return attack.Flow{}, nil, fmt.Errorf("%s: target %d: URL %q: want http(s)://host[:port]/path", o.TargetsFile, k, evidence.RedactText(t.URL))
		}
		origin := u.Scheme + "://" + u.Host
		name, ok := byOrigin[origin]
		if !ok {
			name = u.Host
			targets = append(targets, attack.Target{Name: name, URL: origin})
			byOrigin[origin] = name
		}
		path := u.EscapedPath()
		if u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
		tmpls = append(tmpls, attack.RequestTemplate{Target: name, Method: t.Method, Path: path, Header: t.Header, Body: t.Body})
	}
	if len(tmpls) == 0 {
		return attack.Flow{}, nil, fmt.Errorf("%s: no targets", o.TargetsFile)
	}
	n := o.IDs
	if n == 0 && o.IDsFile == "" {
		n = len(tmpls)
	}
	ids, err := readIDs(n, o.IDsFile, o.IDPrefix)
	if err != nil {
		return attack.Flow{}, nil, err
	}
	fl := attack.Flow{Name: filepath.Base(o.TargetsFile), IDs: ids, Requests: tmpls, Rate: o.Rate, Concurrency: o.Concurrency, Seed: 0}
	return fl, targets, nil
}

func runAttack(ctx context.Context, o *AttackOptions) (err error) {
	opts, err := o.attackOptions()
	if err != nil {
		return err
	}
	// A split that does not fit the IDs and targets, an invalid method or
	// header, a concurrency beyond the descriptor limit: usage errors, found
	// before anything is sent or written.
	if err := attack.Check(opts); err != nil {
		if errors.Is(err, attack.ErrInvalidOptions) {
			return &UsageError{Err: err}
		}
		return err
	}
	pusher, err := o.RemoteWrite.newPusher(nil, attackRunID(o.Out))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	// Receipts already on the file are an earlier run's: analyze would
	// count them with this attack's (as re-sends and phantoms).
	rp := filepath.Join(o.Out, evidence.ReceiptsFile)
	if st, err := os.Stat(rp); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		fmt.Fprintf(o.IO.ErrOut, "attack: warning: %s already holds %d bytes of receipts from before this attack; restart the backend (it truncates its file at start), or analyze counts them with this attack's\n", rp, st.Size())
	}
	w, err := evidence.Create(filepath.Join(o.Out, evidence.RequestsFile))
	if err != nil {
		return err
	}
	sink, closeEvents, err := openEvents(o.Events, o.IO.Out)
	if err != nil {
		w.Close()
		return err
	}
	sink.SetRunID(filepath.Base(filepath.Clean(o.Out)))
	_ = sink.Emit(events.Event{Type: events.TypeStarted, Started: &events.Started{Command: "attack", Dir: o.Out}})
	defer func() {
		emitFinished(sink, err, nil, o.Out)
		if cerr := closeEvents(); cerr != nil && err == nil {
			err = fmt.Errorf("--events: %w", cerr)
		}
	}()
	errOut := o.IO.ErrOut
	if o.Quiet {
		errOut = io.Discard
	}
	opts.Progress = new(attack.Progress)
	stopRW := func() {}
	if pusher != nil {
		stopRW = pusher.Attack(attackScenario, 1, opts.Progress)
		pusher.Start(ctx)
	}
	stop := liveProgress(errOut, "attack", opts.Progress)
	stopEvents := sink.Follow(opts.Progress, events.Progress{})
	sum, runErr := attack.Run(ctx, opts, w)
	stop()
	stopEvents()
	stopRW()
	closePusher(ctx, pusher, o.RemoteWrite.URL, nil, o.IO.ErrOut, !o.Quiet)
	// A requests.jsonl that could not be written whole (the last lines
	// are flushed by Close) makes the attack incomplete in attack.json too.
	if cerr := w.Close(); cerr != nil {
		if runErr == nil {
			runErr = cerr
		}
		if sum != nil && (sum.Complete || sum.Error == "") {
			sum.Complete = false
			sum.Error = evidence.RequestsFile + ": " + cerr.Error()
		}
	}
	if sum != nil {
		if o.ShardFromEnv != "" && sum.Shard != nil {
			sum.Shard.FromEnv = o.ShardFromEnv
		}
		if err := evidence.WriteJSONFile(evidence.Dir(o.Out).Attack(), evidence.NewAttack(sum)); err != nil {
			return err
		}
		printAttackSummary(errOut, o.Out, sum)
		if sum.Interrupted {
			return &ExitCodeError{Code: ExitInterrupted, Msg: fmt.Sprintf("interrupted after %d of %d IDs; recorded lines kept, attack.json says complete=false", sum.Sent, sum.Config.IDs)}
		}
	}
	if runErr == nil && sum != nil && sum.NotSent > 0 {
		return fmt.Errorf("attack incomplete: %s", sum.Error)
	}
	return runErr
}

// printAttackSummary prints the outcome, the worker bound and where it
// came from (descriptor cap included), the burst or pacing figures, each
// flow's, the shard and the start's lateness.
func printAttackSummary(w io.Writer, out string, sum *evidence.AttackSummary) {
	c := sum.Config
	fmt.Fprintf(w, "attack: %d of %d IDs sent (%d not sent) -> %s\n", sum.Sent-sum.NotSent, c.IDs, sum.NotSent, out)
	fmt.Fprintf(w, "attack: codes %s\n", human.Codes(sum.CodesByTarget, sum.NotSent))
	fmt.Fprintf(w, "attack: workers %d (from %s; descriptor cap %d of limit %d, %d open)\n", c.Workers, c.WorkersFrom, c.FDCap, c.FDLimit, c.FDOpen)
	if len(sum.Flows) == 0 {
		printFigures(w, "attack: ", c, sum.Burst, sum.Pacing)
	}
	for _, f := range sum.Flows {
		fmt.Fprintf(w, "attack: flow %s: %d of %d IDs sent, codes %s\n", f.Config.Flow, f.Sent-f.NotSent, f.Config.IDs, human.Codes(f.CodesByTarget, f.NotSent))
		printFigures(w, "attack: flow "+f.Config.Flow+": ", f.Config, f.Burst, f.Pacing)
	}
	if sh := sum.Shard; sh != nil {
		fmt.Fprintf(w, "attack: shard %d/%d: %d of the attack's %d IDs (id set %s)\n", sh.Index, sh.Count, sh.IDs, sh.TotalIDs, sh.IDSetDigest)
	}
	if sa := sum.StartAt; sa != nil {
		fmt.Fprintf(w, "attack: started %s after --start-at %s\n", time.Duration(sa.LateNs), sa.At)
	}
}

// printFigures prints the burst or pacing figures of an attack (or of a
// flow, after prefix), durations to 3 significant digits
// (report.HumanNs), on lines that fit 80 columns for a short prefix.
func printFigures(w io.Writer, prefix string, c evidence.AttackConfig, b *evidence.AttackBurst, pc *evidence.AttackPacing) {
	d := report.HumanNs
	if b != nil {
		on := ""
		if c.Engine != "" {
			on = " (" + c.Engine + ")"
		}
		fmt.Fprintf(w, "%sburst of %d on %d warm connections%s, send spread %s\n", prefix, b.Requests, b.WarmConnections, on, d(b.SpreadNs))
		fmt.Fprintf(w, "%ssent p50 %s, p99 %s after release\n", prefix, d(b.SendNs.P50), d(b.SendNs.P99))
	}
	if pc != nil {
		fmt.Fprintf(w, "%srate %.0f/s achieved (intended %.0f/s), %d of %d sent directly\n", prefix, pc.AchievedPerSec, c.RatePerSec, pc.DirectSends, pc.ErrorNs.N)
		fmt.Fprintf(w, "%spacing error p50 %s p99 %s max %s\n", prefix, d(pc.ErrorNs.P50), d(pc.ErrorNs.P99), d(pc.ErrorNs.Max))
		fmt.Fprintf(w, "%slatency from intended p99 %s, workers peak %d bound %d\n", prefix, d(pc.LatencyFromIntendedNs.P99), pc.WorkersPeak, pc.WorkersBound)
		if pc.ReliefSends > 0 {
			fmt.Fprintf(w, "%s%d of the direct sends by the relief dispatcher\n", prefix, pc.ReliefSends)
		}
	}
}

// engineOption is attack.Options.Engine of --engine (checked by
// validate): "auto" is attack.EngineAuto.
func engineOption(v string) string {
	if v == "auto" {
		return attack.EngineAuto
	}
	return v
}
