package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/runner"
	"github.com/rlbench/rlbench/model"
	"github.com/spf13/cobra"
)

// ConformanceOptions are the inputs of `rlbench conformance`.
type ConformanceOptions struct {
	IO *IOStreams
	// Limiter is the limiter under test as the flags give it (the model
	// parsed from --model, the sizes, the shapes, the headers).
	Limiter runner.ExternalLimiter
	Root    string
	// Format is table, markdown or json (the matrix: schemas/matrix.v1.schema.json).
	Format string
	Quiet  bool
	View   tableView // --wide
}

// conformanceFormats are the formats of `rlbench conformance`.
var conformanceFormats = []string{formatTable, formatMarkdown, formatJSON}

// NewConformanceCmd is `rlbench conformance`. runF, when not nil, receives
// the parsed options instead of running (tests).
func NewConformanceCmd(io *IOStreams, runF func(*ConformanceOptions) error) *cobra.Command {
	o := &ConformanceOptions{IO: io}
	var header http.Header
	var spec model.Spec
	cmd := &cobra.Command{
		Use:   "conformance --url URL --model KIND:FIELD=VALUE,...",
		Short: "Run the five standard traffic shapes against an HTTP limiter of your own and print its conformance matrix row",
		Long: `conformance puts an HTTP limiter that is already running under the five traffic
shapes of a conformance plan (runner.StandardShapes): a burst of 1.5 × capacity
at once, 2 × rate for 3 s, two bursts of capacity half a refill apart, three
keys with one noisy (2 × rate against two at rate / 2), and an idle gap of two
refills before a burst of 1.5 × capacity. It judges every shape by the model
the limiter claims (--model, a model.Spec: its kind, then its JSON fields,
e.g. token_bucket:capacity=10,rate_per_sec=5, fixed_window:limit=100,unit=minute,
sliding_counter:limit=10,window=1s,count=all, nginx_limit_req:rate=10r/s,burst=5,nodelay=true),
writes a run directory as rlbench run does, and prints the matrix row: each
shape's verdict, the admissions against the model's bounds, and why.

The shapes are sized by the model's capacity and rate (--capacity and --rate
override them; they are required for a model whose sizes rlbench cannot read).
Requests carry x-user (one value, or noisy/quiet-1/quiet-2); with --key-header
the limiter is modelled per value of that header and the shapes send it
instead. A response with --reject-status (default 429) is a rejection. The
limiter forwards what it admits to an rlbench backend (rlbench backend), whose
/_rlbench/receipts is --receipts-url: every admitted request must have its
receipt, no rejected one may, and the forwards' peaks are judged against the
model. Each shape starts after two full refills of idle (the limiter is not
started fresh per shape as the lab's parts are).
It exits as analyze does: 0 PASS, 3 FAIL, 4 NOT_RUN.`,
		Example: `  rlbench backend --listen 127.0.0.1:9000    # in another shell: the limiter forwards to it
  rlbench conformance --url http://127.0.0.1:8080 --receipts-url http://127.0.0.1:9000/_rlbench/receipts --model token_bucket:capacity=10,rate_per_sec=10
  rlbench conformance --url http://127.0.0.1:8080 --receipts-url http://127.0.0.1:9000/_rlbench/receipts --model fixed_window:limit=10,unit=second --key-header x-api-key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Limiter.URL == "" {
				return usageErrorf("--url is required")
			}
			if o.Limiter.ReceiptsURL == "" {
				return usageErrorf("--receipts-url is required: point the limiter at an rlbench backend (rlbench backend) and give its /_rlbench/receipts")
			}
			if spec.Kind == "" {
				return usageErrorf("--model is required (e.g. token_bucket:capacity=10,rate_per_sec=10)")
			}
			o.Limiter.Model = spec
			o.Limiter.Headers = nil
			for k, vs := range header {
				if len(vs) > 0 {
					if o.Limiter.Headers == nil {
						o.Limiter.Headers = map[string]string{}
					}
					o.Limiter.Headers[k] = vs[len(vs)-1]
				}
			}
			if o.Root != "" {
				if err := checkOutputDir("--root", o.Root, false); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(o)
			}
			return runConformance(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Limiter.URL, "url", "", "the limiter's base `URL` (http or https)")
	f.Var(&modelValue{p: &spec}, "model", "the model the limiter claims, `KIND:FIELD=VALUE,...` (model.Spec's JSON fields)")
	f.IntVar(&o.Limiter.Capacity, "capacity", 0, "`N` requests at once from idle, to size the shapes (default: the model's)")
	f.Float64Var(&o.Limiter.RatePerSec, "rate", 0, "`PER_SECOND` after that, to size the shapes (default: the model's)")
	f.StringVar(&o.Limiter.KeyHeader, "key-header", "", "the request header `NAME` the limiter keys by (default: one key for every request)")
	f.IntVar(&o.Limiter.RejectStatus, "reject-status", 429, "the status `CODE` of the limiter's rejections")
	f.StringVar(&o.Limiter.ReceiptsURL, "receipts-url", "", "the /_rlbench/receipts `URL` of the rlbench backend behind the limiter (required)")
	f.StringArrayVar(&o.Limiter.Shapes, "shape", nil, "run only this shape `NAME` (repeatable; default all five)")
	f.StringVar(&o.Limiter.Name, "name", "limiter", "the limiter's `NAME` in the matrix")
	headerFlag(f, &header, "header", "request header `\"Name: value\"` sent with every request (repeatable)")
	f.StringVar(&o.Root, "root", "", "`DIR` for the run directory (default: rlbench's runs directory)")
	enumFlag(cmd, &o.Format, "format", formatTable, conformanceFormats, "output format")
	cmd.Flags().BoolVar(&o.View.Wide, "wide", false, "table: every column at full width, boxed (default: fitted to the terminal's width)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr")
	return cmd
}

// runConformance builds the one-limiter conformance plan, runs it, judges
// the run and prints the matrix; the exit code is the matrix's verdict.
func runConformance(ctx context.Context, o *ConformanceOptions) error {
	plan, err := o.Limiter.Plan()
	if err != nil {
		return &UsageError{Err: err}
	}
	ro := runner.Options{Root: o.Root}
	if !o.Quiet {
		ro.Progress = o.IO.ErrOut
		ro.Live = func(label string, p *attack.Progress) func() { return liveProgress(o.IO.ErrOut, label, p) }
	}
	dir, err := runner.Run(ctx, plan, ro)
	if err != nil {
		return err
	}
	_, rep, err := judgeDir(context.WithoutCancel(ctx), dir, analyze.Options{}, false)
	if err != nil {
		return err
	}
	if err := writeStatus(evidence.Dir(dir).Status(), rep); err != nil {
		fmt.Fprintf(o.IO.ErrOut, "rlbench: warning: status.txt not written: %v\n", err)
	}
	if !o.Quiet {
		fmt.Fprintf(o.IO.ErrOut, "evidence: %s (rlbench report %s for every detail)\n", dir, dir)
	}
	m := rep.Matrix
	if m == nil {
		return errors.New("the run has no labelled scenario: no matrix")
	}
	switch o.Format {
	case formatJSON:
		err = report.WriteMatrixJSON(o.IO.Out, m)
	case formatMarkdown:
		err = report.WriteMatrixMarkdown(o.IO.Out, m)
	default:
		err = report.WriteMatrixTable(o.IO.Out, m, o.View.options(o.IO.Out))
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return &ExitCodeError{Code: ExitInterrupted, Msg: "interrupted; evidence kept in " + dir}
	}
	return verdictError(&report.Report{Status: m.Status})
}

// modelValue is --model: "KIND:FIELD=VALUE,..." parsed into a model.Spec
// (ParseModelFlag).
type modelValue struct{ p *model.Spec }

func (v *modelValue) String() string {
	if v.p == nil || v.p.Kind == "" {
		return ""
	}
	return v.p.Kind
}
func (v *modelValue) Type() string { return "model" }
func (v *modelValue) Set(s string) error {
	spec, err := ParseModelFlag(s)
	if err != nil {
		return err
	}
	*v.p = spec
	return nil
}

// ParseModelFlag parses "KIND:FIELD=VALUE,FIELD=VALUE,..." into a
// model.Spec: KIND is its kind (model.KindTokenBucket, ...), each FIELD one
// of its JSON fields (capacity, rate_per_sec, limit, unit, window, count,
// rate, burst, nodelay, ...); a VALUE that reads as a number is a number,
// true and false are booleans, anything else a string. The spec is decoded
// strictly (an unknown field is an error naming it) and validated
// (model.Spec.Validate). Errors quote the input.
func ParseModelFlag(s string) (model.Spec, error) {
	kind, rest, _ := strings.Cut(strings.TrimSpace(s), ":")
	if kind == "" {
		return model.Spec{}, fmt.Errorf("model %q: want KIND:FIELD=VALUE,... (e.g. token_bucket:capacity=10,rate_per_sec=10)", s)
	}
	obj := map[string]any{"kind": kind}
	if strings.TrimSpace(rest) != "" {
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || k == "kind" {
				return model.Spec{}, fmt.Errorf("model %q: %q: want FIELD=VALUE", s, kv)
			}
			if _, dup := obj[k]; dup {
				return model.Spec{}, fmt.Errorf("model %q: %s given twice", s, k)
			}
			switch n, err := strconv.ParseFloat(v, 64); {
			case v == "true" || v == "false":
				obj[k] = v == "true"
			case err == nil && !strings.ContainsAny(v, "xXpP_") && !strings.EqualFold(v, "inf") && !strings.EqualFold(v, "infinity") && !strings.EqualFold(v, "nan") &&
				!strings.EqualFold(v, "+inf") && !strings.EqualFold(v, "-inf"):
				obj[k] = json.Number(strconv.FormatFloat(n, 'g', -1, 64))
			default:
				obj[k] = v
			}
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return model.Spec{}, fmt.Errorf("model %q: %v", s, err)
	}
	var spec model.Spec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return model.Spec{}, fmt.Errorf("model %q: %v", s, strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := spec.Validate(); err != nil {
		return model.Spec{}, fmt.Errorf("model %q: %v", s, err)
	}
	return spec, nil
}
