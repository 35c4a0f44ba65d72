package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	collectnginx "github.com/rlbench/rlbench/collect/nginx"
	"github.com/rlbench/rlbench/collect/snapshot"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/spf13/cobra"
)

// defaultNginxProxy is the proxy name of nginx evidence when --proxy is not given.
const defaultNginxProxy = "nginx"

// CollectNginxAccessLogOptions are the flags of `rlbench collect nginx-access-log`.
type CollectNginxAccessLogOptions struct {
	IO       *IOStreams
	File     string
	ErrorLog string
	Out      string
	Proxy    string
	Format   string
}

// NginxAccessLogSummary is what `rlbench collect nginx-access-log --format json` prints.
type NginxAccessLogSummary struct {
	Source string `json:"source"`
	nginxrec.AccessSummary
	// ErrorLog, LimitReqLines and UpstreamHits are set with --error-log: the limit_req lines by action, and the
	// upstream tries per server that reached it (server tries minus connect() failures).
	ErrorLog      string         `json:"error_log,omitempty"`
	LimitReqLines map[string]int `json:"limit_req_lines,omitempty"`
	UpstreamHits  map[string]int `json:"upstream_hits,omitempty"`
}

// NewCollectNginxAccessLogCmd is `rlbench collect nginx-access-log`. runF, when not nil, receives the parsed
// options instead of parsing the log (tests).
func NewCollectNginxAccessLogCmd(io *IOStreams, runF func(*CollectNginxAccessLogOptions) error) *cobra.Command {
	o := &CollectNginxAccessLogOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "nginx-access-log FILE|-",
		Short: "Parse an nginx JSON access log ($limit_req_status, $upstream_* tries) and optionally its error log",
		Long: `nginx-access-log reads an nginx access log written with a JSON log_format (escape=json),
as rlbench's private nginx writes it: X-Rlbench-Id, $status, $limit_req_status
(PASSED, DELAYED, REJECTED and the *_DRY_RUN values), $upstream_addr,
$upstream_status and $upstream_response_time (one entry per upstream try: retries
by proxy_next_upstream), $request_time and $msec. "-" and "" values are absent.
With --error-log it also reads the error log's limit_req lines ("limiting
requests", "delaying request", with excess and zone) and connect() failures.

It prints requests by $limit_req_status and status, and the upstream tries
(--format json: the full summary). With --out DIR it writes the evidence under
DIR/nginx/PROXY/: access.log (raw), access.jsonl (one parsed record per request)
and, with --error-log, error.log (raw) and limit_req.jsonl (the limit_req lines).`,
		Example: `  rlbench collect nginx-access-log /tmp/nginx/logs/access.log --error-log /tmp/nginx/logs/error.log
  rlbench collect nginx-access-log --out evidence/manual --proxy edge - < access.log`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			if !safeName(o.Proxy) {
				return usageErrorf("--proxy must be a simple name (letters, digits, - and _), not %q", o.Proxy)
			}
			if o.Out != "" {
				if err := checkOutputDir("--out", o.Out, false); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectNginxAccessLog(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.ErrorLog, "error-log", "", "nginx error log to read the limit_req lines from")
	f.StringVar(&o.Out, "out", "", "evidence directory to write nginx/PROXY/access.jsonl (and the raw logs) into")
	f.StringVar(&o.Proxy, "proxy", defaultNginxProxy, "proxy name (the attack target name of this nginx)")
	formatFlag(cmd, &o.Format)
	return cmd
}

func runCollectNginxAccessLog(ctx context.Context, o *CollectNginxAccessLogOptions) error {
	in, name, err := openInput(ctx, o.IO, o.File)
	if err != nil {
		return err
	}
	defer in.Close()
	d := evidence.Dir(o.Out)
	var recs []nginxrec.AccessRecord
	if o.Out != "" {
		recs, err = evidence.WriteNginxAccessLog(d, o.Proxy, name, in)
	} else {
		recs, err = nginxrec.ParseAccessLog(in, name)
	}
	if err != nil {
		return err
	}
	s := NginxAccessLogSummary{Source: name, AccessSummary: nginxrec.Summarize(recs)}
	if o.ErrorLog != "" {
		f, err := os.Open(o.ErrorLog)
		if err != nil {
			return err
		}
		defer f.Close()
		var errLog *nginxrec.ErrorLog
		if o.Out != "" {
			errLog, err = evidence.WriteNginxErrorLog(d, o.Proxy, o.ErrorLog, f)
		} else {
			errLog, err = nginxrec.ParseErrorLog(f, o.ErrorLog)
		}
		if err != nil {
			return err
		}
		s.ErrorLog, s.LimitReqLines = o.ErrorLog, errLog.LimitCounts()
		s.UpstreamHits = nginxrec.UpstreamHits(recs, errLog)
	}
	if o.Out != "" {
		fmt.Fprintf(o.IO.ErrOut, "collect: %s: %d requests -> %s\n", name, len(recs), d.Path(evidence.NginxPath(o.Proxy, evidence.NginxAccessFile)))
	}
	if o.Format == formatJSON {
		return writeJSONOut(o.IO.Out, s)
	}
	return renderNginxAccessTable(o.IO.Out, recs, s)
}

func renderNginxAccessTable(out io.Writer, recs []nginxrec.AccessRecord, s NginxAccessLogSummary) error {
	type key struct {
		lrs    string
		status int
	}
	counts := map[key]int{}
	for _, a := range recs {
		k := key{a.LimitReqStatus, a.Status}
		if k.lrs == nginxrec.LimitReqNone {
			k.lrs = nginxrec.LimitReqNoneKey
		}
		counts[k]++
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].lrs != keys[j].lrs {
			return keys[i].lrs < keys[j].lrs
		}
		return keys[i].status < keys[j].status
	})
	t := tablewriter.NewTable(out)
	t.Header("Limit req status", "Status", "Requests")
	for _, k := range keys {
		if err := t.Append(k.lrs, strconv.Itoa(k.status), counts[k]); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d requests, %d proxied, %d retried by nginx; %d upstream tries, %d to servers\n",
		s.Requests, s.Proxied, s.Retried, s.Tries, s.ServerTries)
	if len(s.DuplicateIDs) > 0 {
		fmt.Fprintf(out, "IDs logged more than once: %s\n", strings.Join(s.DuplicateIDs, ", "))
	}
	if s.LimitReqLines != nil {
		fmt.Fprintf(out, "error log limit_req lines: %s\n", formatCounts(s.LimitReqLines))
	}
	if len(s.UpstreamHits) > 0 {
		fmt.Fprintf(out, "upstream hits: %s\n", formatCounts(s.UpstreamHits))
	}
	return nil
}

// formatCounts renders a map as "k1 n1, k2 n2" in key order.
func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// NginxStatusOutput is what `rlbench collect nginx-status` prints: the parsed page and, when a "before" snapshot
// of the same proxy is in the evidence directory and this one is not it, the delta since then.
type NginxStatusOutput struct {
	URL    string                        `json:"url"`
	Label  string                        `json:"label"`
	Status nginxrec.StubStatus           `json:"status"`
	Delta  *collectnginx.StubStatusDelta `json:"delta_since_before,omitempty"`
}

// CollectNginxStatusOptions are the inputs of `rlbench collect nginx-status`.
type CollectNginxStatusOptions struct {
	IO      *IOStreams
	URL     string
	Label   string
	Out     string
	Proxy   string
	Timeout time.Duration
}

// NewCollectNginxStatusCmd is `rlbench collect nginx-status`. runF, when not nil, receives the parsed options
// instead of collecting (tests).
func NewCollectNginxStatusCmd(io *IOStreams, runF func(*CollectNginxStatusOptions) error) *cobra.Command {
	o := &CollectNginxStatusOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "nginx-status --url URL --label before|after --out DIR",
		Short: "Save and parse an nginx stub_status page",
		Long: `nginx-status GETs an nginx stub_status page and writes DIR/nginx/PROXY/stub_status.LABEL.txt
(raw) and stub_status.LABEL.json (active, accepts, handled, requests, reading,
writing, waiting). accepts/handled/requests count since the nginx started, for all
its servers, and include the status requests themselves. With a "before" snapshot
in the same place, the output also gives the delta.`,
		Example: `  rlbench collect nginx-status --url http://127.0.0.1:8081/stub_status --label after --out evidence/manual`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.URL == "" || o.Label == "" || o.Out == "" {
				return usageErrorf("--url, --label and --out are required")
			}
			if !safeName(o.Proxy) || !safeName(o.Label) {
				return usageErrorf("--proxy and --label must be simple names (letters, digits, - and _), not %q / %q", o.Proxy, o.Label)
			}
			if err := checkOutputDir("--out", o.Out, false); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectNginxStatus(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "url", "", "stub_status URL, e.g. http://127.0.0.1:8081/stub_status")
	f.StringVar(&o.Label, "label", "", "snapshot label: before or after")
	f.StringVar(&o.Out, "out", "", "evidence directory")
	f.StringVar(&o.Proxy, "proxy", defaultNginxProxy, "proxy name (the attack target name of this nginx)")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Second, "HTTP timeout")
	return cmd
}

func runCollectNginxStatus(ctx context.Context, o *CollectNginxStatusOptions) error {
	d := evidence.Dir(o.Out)
	st, err := snapshot.Take(ctx, snapshot.Options{URL: o.URL, Name: o.Proxy, Label: o.Label, Out: d, Timeout: o.Timeout},
		snapshot.NginxStubStatus())
	if err != nil {
		return err
	}
	res := NginxStatusOutput{URL: evidence.RedactURL(o.URL), Label: o.Label, Status: st}
	beforePath := filepath.Join(d.Path(evidence.NginxPath(o.Proxy, "")), evidence.NginxStubStatusRaw("before"))
	if b, err := os.ReadFile(beforePath); err == nil && o.Label != "before" {
		before, err := collectnginx.ParseStubStatus(bytes.NewReader(b), beforePath)
		if err != nil {
			return err
		}
		d, err := collectnginx.Delta(before, st)
		if err != nil {
			return err
		}
		res.Delta = &d
	}
	return writeJSONOut(o.IO.Out, res)
}
