package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/cobra"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/export/remotewrite"
	"github.com/rlbench/rlbench/internal/runner"
)

// RemoteWriteOptions are --remote-write and --remote-write-interval of
// `run` and `attack`: push live metrics (internal/metricnames) to a
// Prometheus remote write receiver while they run (export/remotewrite).
type RemoteWriteOptions struct {
	// URL is the receiver's endpoint; "" pushes nothing (for `run`: the
	// plan's remote_write: then, if any).
	URL string
	// Interval is the time between two pushes; 0: the plan's, else 1s.
	Interval time.Duration
}

// remoteWriteCloseTimeout bounds the last push (live series and the
// end-of-run families) after the run.
const remoteWriteCloseTimeout = 10 * time.Second

// remoteWriteFlags adds the remote write flags to cmd.
func remoteWriteFlags(cmd *cobra.Command, o *RemoteWriteOptions) {
	cmd.Flags().StringVar(&o.URL, "remote-write", "", "push live metrics to a Prometheus remote write `URL` (http://HOST:9090/api/v1/write) while running; a failed push is reported, never fatal")
	cmd.Flags().DurationVar(&o.Interval, "remote-write-interval", 0, "time between two remote write pushes (default 1s, or the plan's remote_write.interval)")
}

// newPusher returns the Pusher the flags (else the plan's remote_write:,
// plan may be nil) ask for, or nil when neither gives a URL. An invalid URL
// or interval is a usage error quoting the URL redacted.
func (o RemoteWriteOptions) newPusher(plan *runner.RemoteWritePlan, runID string) (*remotewrite.Pusher, error) {
	u, iv := o.URL, o.Interval
	if u == "" && plan != nil {
		u = plan.URL
	}
	if iv == 0 && plan != nil {
		iv = time.Duration(plan.Interval)
	}
	if u == "" {
		if o.Interval != 0 {
			return nil, &UsageError{Err: fmt.Errorf("--remote-write-interval without --remote-write")}
		}
		return nil, nil
	}
	if iv < 0 || (iv > 0 && iv < time.Millisecond) {
		return nil, &UsageError{Err: fmt.Errorf("--remote-write-interval %s: want 1ms or more", iv)}
	}
	c, err := remotewrite.NewClient(remotewrite.ClientOptions{URL: u})
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--remote-write: %w", err)}
	}
	return remotewrite.NewPusher(remotewrite.PusherOptions{Client: c, Interval: iv, RunID: runID}), nil
}

// closePusher makes p's last push (the end-of-run families fams, nil for
// none) and reports the pushes on errOut: a line when any failed or was
// dropped (even with --quiet: metrics are missing from the receiver), else
// one when verbose. A failed remote write never changes the exit code.
func closePusher(ctx context.Context, p *remotewrite.Pusher, url string, fams []*dto.MetricFamily, errOut io.Writer, verbose bool) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteWriteCloseTimeout)
	defer cancel()
	st := p.Close(ctx, fams)
	u := evidence.RedactURL(url)
	switch {
	case st.Failed > 0 || st.Dropped > 0:
		fmt.Fprintf(errOut, "remote write: warning: %d pushes to %s accepted, %d failed, %d dropped; last error: %s\n", st.Pushed, u, st.Failed, st.Dropped, st.LastError)
	case verbose:
		fmt.Fprintf(errOut, "remote write: %d pushes (%d samples) to %s\n", st.Pushed, st.Samples, u)
	}
}

// url is the receiver's URL the flags or plan give ("" for none).
func (o RemoteWriteOptions) url(plan *runner.RemoteWritePlan) string {
	if o.URL == "" && plan != nil {
		return plan.URL
	}
	return o.URL
}

// attackScenario is the scenario label of `rlbench attack`'s series.
const attackScenario = "attack"

// attackRunID is the run_id of `rlbench attack --out out`: the directory's
// name.
func attackRunID(out string) string {
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	return filepath.Base(out)
}
