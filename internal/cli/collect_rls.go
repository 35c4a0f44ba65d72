package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/collect/snapshot"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/spf13/cobra"
)

// openInput opens FILE, or standard input for "-", for a streaming parser:
// reads stop when ctx is done (the first SIGINT/SIGTERM). FILE must be a
// regular file (boundedio.OpenRegular); a pipe is read through "-". The
// lines read are redacted (evidence.RedactReader): a log's credentials
// (a request path's query token, a Redis URL's password) reach neither the
// output nor the evidence.
func openInput(ctx context.Context, s *IOStreams, name string) (io.ReadCloser, string, error) {
	if name == "-" {
		return io.NopCloser(evidence.RedactReader(boundedio.NewReader(ctx, s.In, "<stdin>", 0))), "<stdin>", nil
	}
	f, err := boundedio.OpenRegular(ctx, name, 0)
	var nr *boundedio.NotRegularError
	if errors.As(err, &nr) {
		return nil, name, fmt.Errorf("%w (to read a pipe, give - and redirect it to standard input)", err)
	}
	if err != nil {
		return nil, name, err
	}
	return redactedFile{Reader: evidence.RedactReader(f), Closer: f}, name, nil
}

// redactedFile reads a file through evidence.RedactReader and closes the file.
type redactedFile struct {
	io.Reader
	io.Closer
}

// writeJSONOut writes v as indented JSON without HTML escaping ("<stdin>"
// stays "<stdin>").
func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// RLSLogSummary is what `rlbench collect rls-log` prints.
type RLSLogSummary struct {
	Source         string         `json:"source"`
	Lines          int            `json:"lines"`
	Decisions      int            `json:"decisions"`
	ByCode         map[string]int `json:"by_code"`
	Errors         int            `json:"errors"`
	ConfigLoads    int            `json:"config_loads"`
	UnknownDomains int            `json:"unknown_domains"`
	NoMatch        int            `json:"no_match"`
	PendingLookups int            `json:"pending_lookups"`
	Unparsed       int            `json:"unparsed"`
	Restarts       int            `json:"restarts"`
	// Warnings are rls.Log.Warnings (e.g. no decision line without LOG_LEVEL=debug), also printed on stderr.
	Warnings []string `json:"warnings,omitempty"`
}

// CollectRLSLogOptions are the inputs of `rlbench collect rls-log`.
type CollectRLSLogOptions struct {
	IO *IOStreams
	// File is the log file, or "-" for standard input.
	File string
	// Out, when set, is the evidence directory to write rls/ into.
	Out string
}

// NewCollectRLSLogCmd is `rlbench collect rls-log`. runF, when not nil,
// receives the parsed options instead of parsing the log (tests).
func NewCollectRLSLogCmd(io *IOStreams, runF func(*CollectRLSLogOptions) error) *cobra.Command {
	o := &CollectRLSLogOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "rls-log FILE|-",
		Short: "Parse an envoyproxy/ratelimit log (text or JSON, LOG_LEVEL=debug) into decisions and errors",
		Long: `rls-log reads an envoyproxy/ratelimit log (logrus text or LOG_FORMAT=json, which still
starts with a few text lines), reconstructs each descriptor decision (cache key,
domain, descriptor, window start, current, limit, code), errors (caught error
during call, Redis connection errors), config loads and unknown-domain/no-match
lines. Text timestamps have one-second resolution; that is kept with each
decision. It prints a JSON summary; with --out DIR it also writes
DIR/rls/decisions.jsonl (read by analyze), DIR/rls/log.json (everything parsed)
and DIR/rls/rls.log (the log as read). A log without decision lines gets a
warning on stderr (most often the RLS did not run with LOG_LEVEL=debug).`,
		Example: `  rlbench collect rls-log ratelimit.log --out evidence/manual
  kubectl logs deploy/ratelimit | rlbench collect rls-log -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			if o.Out != "" {
				if err := checkOutputDir("--out", o.Out, false); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectRLSLog(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "evidence directory to write rls/decisions.jsonl and rls/log.json into")
	return cmd
}

func runCollectRLSLog(ctx context.Context, o *CollectRLSLogOptions) error {
	in, name, err := openInput(ctx, o.IO, o.File)
	if err != nil {
		return err
	}
	defer in.Close()
	src, raw, err := teeRawLog(in, o.Out)
	if err != nil {
		return err
	}
	if raw != nil {
		defer raw.Close()
	}
	l, err := rls.ParseLog(src, name)
	if err != nil {
		return err
	}
	if raw != nil {
		if err := raw.Close(); err != nil {
			return err
		}
	}
	if l.Lines > 0 && l.TextLines+l.JSONLines+l.SinkLines == 0 {
		return fmt.Errorf("%s: not an envoyproxy/ratelimit log: none of its %d lines is a logrus text or JSON line", name, l.Lines)
	}
	s := RLSLogSummary{Source: name, Lines: l.Lines, Decisions: len(l.Decisions), ByCode: l.CountCodes(), Errors: len(l.Errors),
		ConfigLoads: configLoads(l), UnknownDomains: len(l.UnknownDomains), NoMatch: len(l.NoMatch),
		PendingLookups: len(l.PendingLookups), Unparsed: len(l.Unparsed), Restarts: max(len(l.Starts)-1, 0), Warnings: l.Warnings}
	for _, w := range l.Warnings {
		fmt.Fprintf(o.IO.ErrOut, "rlbench: warning: %s: %s\n", name, w)
	}
	if o.Out != "" {
		d := evidence.Dir(o.Out)
		if err := d.MkdirFor(d.Decisions()); err != nil {
			return err
		}
		if err := evidence.WriteLines(d.Decisions(), l.EvidenceDecisions()); err != nil {
			return err
		}
		if err := evidence.WriteJSONFile(d.RLSParsedLog(), l); err != nil {
			return err
		}
	}
	return writeJSONOut(o.IO.Out, s)
}

// teeRawLog returns in copied, as it is read, to OUT/rls/rls.log (the log
// is read once and never held whole); with no out it returns in.
func teeRawLog(in io.Reader, out string) (io.Reader, *os.File, error) {
	if out == "" {
		return in, nil, nil
	}
	p := evidence.Dir(out).RLSLog()
	if err := evidence.Dir(out).MkdirFor(p); err != nil {
		return nil, nil, err
	}
	raw, err := safefile.Create(p, 0o666)
	if err != nil {
		return nil, nil, err
	}
	return io.TeeReader(in, raw), raw, nil
}

// CollectPrometheusOptions are the inputs of `rlbench collect prometheus`.
type CollectPrometheusOptions struct {
	IO      *IOStreams
	URL     string
	Label   string
	Out     string
	Timeout time.Duration
}

// NewCollectPrometheusCmd is `rlbench collect prometheus`. runF, when not
// nil, receives the parsed options instead of collecting (tests).
func NewCollectPrometheusCmd(io *IOStreams, runF func(*CollectPrometheusOptions) error) *cobra.Command {
	o := &CollectPrometheusOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "prometheus --url URL --label before|after --out DIR",
		Short: "Save and parse an envoyproxy/ratelimit /metrics page (USE_PROMETHEUS=true)",
		Long: `prometheus GETs the RLS's Prometheus page and writes DIR/rls/metrics.LABEL.prom (raw)
and DIR/rls/metrics.LABEL.json (per descriptor total_hits, within_limit,
over_limit, near_limit, shadow_mode; should_rate_limit errors; config loads).`,
		Example: `  rlbench collect prometheus --url http://127.0.0.1:9090/metrics --label after --out evidence/manual`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.URL == "" || o.Label == "" || o.Out == "" {
				return usageErrorf("--url, --label and --out are required")
			}
			if !safeName(o.Label) {
				return usageErrorf("--label must be a simple name (letters, digits, - and _), not %q", o.Label)
			}
			if err := checkOutputDir("--out", o.Out, false); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectPrometheus(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.URL, "url", "", "RLS Prometheus URL, e.g. http://127.0.0.1:9090/metrics")
	cmd.Flags().StringVar(&o.Label, "label", "", "snapshot label: before or after")
	cmd.Flags().StringVar(&o.Out, "out", "", "evidence directory")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 5*time.Second, "HTTP timeout")
	return cmd
}

func runCollectPrometheus(ctx context.Context, o *CollectPrometheusOptions) error {
	snap, err := snapshot.Take(ctx, snapshot.Options{URL: o.URL, Label: o.Label, Out: evidence.Dir(o.Out), Timeout: o.Timeout},
		snapshot.RLSPrometheus())
	if err != nil {
		return err
	}
	return writeJSONOut(o.IO.Out, snap)
}

// CollectStatsdOptions are the inputs of `rlbench collect statsd`.
type CollectStatsdOptions struct {
	IO     *IOStreams
	Listen string
	Out    string
	// Duration, when > 0, stops the capture after that long.
	Duration time.Duration
}

// NewCollectStatsdCmd is `rlbench collect statsd`. runF, when not nil,
// receives the parsed options instead of capturing (tests).
func NewCollectStatsdCmd(io *IOStreams, runF func(*CollectStatsdOptions) error) *cobra.Command {
	o := &CollectStatsdOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "statsd --listen 127.0.0.1:8125 --out FILE",
		Short: "Capture statsd lines (TCP and UDP) from envoyproxy/ratelimit and sum the counter deltas",
		Long: `statsd listens on one address for TCP and UDP statsd (gostats sends TCP by default:
point STATSD_HOST/STATSD_PORT at it), writes every line with its receive time to
FILE as JSON Lines, and on SIGINT (or after --duration) prints the totals:
counters summed (gostats flushes per-interval deltas and skips zeros), last
gauge values, timer counts.`,
		Example: `  rlbench collect statsd --listen 127.0.0.1:8125 --out evidence/manual/rls/statsd.jsonl --duration 30s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Out == "" {
				return usageErrorf("--out FILE is required")
			}
			if o.Duration < 0 {
				return usageErrorf("--duration must be >= 0, not %s", o.Duration)
			}
			if err := checkOutputNewFile("--out", o.Out); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectStatsd(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:8125", "address for statsd (tcp and udp)")
	cmd.Flags().StringVar(&o.Out, "out", "", "capture file (JSON Lines)")
	cmd.Flags().DurationVar(&o.Duration, "duration", 0, "stop after this long (default: until SIGINT)")
	return cmd
}

func runCollectStatsd(ctx context.Context, o *CollectStatsdOptions) error {
	out := o.Out
	if o.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	f, err := safefile.Create(out, 0o666)
	if err != nil {
		return err
	}
	addr, done, err := rls.ListenStatsd(ctx, o.Listen, f)
	if err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "statsd: listening on %s (tcp and udp), writing %s\n", addr, out)
	lerr := <-done
	if cerr := f.Close(); lerr == nil {
		lerr = cerr
	}
	if lerr != nil && lerr != context.Canceled && lerr != context.DeadlineExceeded {
		return lerr
	}
	// The capture is summed after the listener stopped: ctx is done by
	// then, so the read is not tied to it.
	rf, err := boundedio.OpenRegular(context.WithoutCancel(ctx), out, 0)
	if err != nil {
		return err
	}
	defer rf.Close()
	totals, err := rls.ParseStatsd(rf, out)
	if err != nil {
		return err
	}
	for _, r := range totals.RejectedLines {
		fmt.Fprintf(o.IO.ErrOut, "rlbench: warning: statsd line not summed: %s\n", r)
	}
	return writeJSONOut(o.IO.Out, totals)
}

// CollectAccessLogOptions are the inputs of `rlbench collect envoy-access-log`.
type CollectAccessLogOptions struct {
	IO *IOStreams
	// File is the access log, or "-" for standard input.
	File   string
	Format string // formatTable | formatJSON
}

// NewCollectAccessLogCmd is `rlbench collect envoy-access-log`. runF, when
// not nil, receives the parsed options instead of parsing the log (tests).
func NewCollectAccessLogCmd(io *IOStreams, runF func(*CollectAccessLogOptions) error) *cobra.Command {
	o := &CollectAccessLogOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "envoy-access-log FILE|-",
		Short: "Parse an Envoy access log (default text format or JSON) and say who produced each response",
		Long: `envoy-access-log reads Envoy's default access log format or JSON access logs (response
flags in short or long form) and classifies each response by its producer: local
limiter (RL, local_rate_limited), global limiter (RL), RLS error (RLSE), circuit
breaker (UO), upstream failure (UF, UC, URX, UH, UT, UR, LR) or backend (no flag:
a 429 with no flag came from the backend). Table of producers by default;
--format json prints every entry with its producer.`,
		Example: `  rlbench collect envoy-access-log /var/log/envoy/access.log
  rlbench collect envoy-access-log --format json - < access.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			if runF != nil {
				return runF(o)
			}
			return runCollectAccessLog(cmd.Context(), o)
		},
	}
	formatFlag(cmd, &o.Format)
	return cmd
}

func runCollectAccessLog(ctx context.Context, o *CollectAccessLogOptions) error {
	in, name, err := openInput(ctx, o.IO, o.File)
	if err != nil {
		return err
	}
	defer in.Close()
	entries, err := envoyrec.ParseAccessLog(in, name)
	if err != nil {
		return err
	}
	type row struct {
		envoyrec.AccessLogEntry
		Producer string `json:"producer"`
	}
	counts := map[string]int{}
	rows := make([]row, 0, len(entries))
	for _, e := range entries {
		p := envoyrec.Producer(e)
		counts[p]++
		rows = append(rows, row{e, p})
	}
	if o.Format == formatJSON {
		return writeJSONOut(o.IO.Out, map[string]any{"source": name, "producers": counts, "entries": rows})
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := tablewriter.NewTable(o.IO.Out)
	t.Header("Producer", "Responses")
	for _, k := range keys {
		if err := t.Append(k, counts[k]); err != nil {
			return err
		}
	}
	return t.Render()
}

// configLoads counts configuration loads: envoyproxy/ratelimit logs
// "Successfully loaded new configuration" for every load and, for the first,
// also "Successfully loaded the initial ratelimit configs"; failed loads log
// "Error loading new configuration".
func configLoads(l *rls.Log) int {
	n := 0
	for _, c := range l.ConfigLoads {
		if !c.OK || strings.HasPrefix(c.Message, "Successfully loaded new configuration") {
			n++
		}
	}
	return n
}
