package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/spf13/cobra"
)

// WaitOptions are the inputs of `rlbench wait`.
type WaitOptions struct {
	IO *IOStreams
	// URLs are the readiness URLs (http or https), each polled until it
	// answers 2xx.
	URLs []string
	// Timeout bounds the whole wait.
	Timeout time.Duration
	// Interval is the time between two polls of a URL that is not ready.
	Interval time.Duration
}

// NewWaitCmd is `rlbench wait`. runF, when not nil, receives the parsed
// options instead (tests).
func NewWaitCmd(io *IOStreams, runF func(*WaitOptions) error) *cobra.Command {
	o := &WaitOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "wait URL...",
		Short: "Wait until parts started in the background answer their readiness URLs",
		Long: `wait polls each URL with GET until it answers 2xx (every --interval, each
try bounded by 1 s), and exits 0 once all have; after --timeout it exits 1
naming those that did not, with their last error. Use it after starting a
part in the background, so that the next command finds it listening:
Envoy's admin /ready (also the lab proxies' admin), the lab backend's and
rlbench backend's /healthz.`,
		Example: `  rlbench lab --listen-base 10000 --proxies 2 &
  rlbench wait http://127.0.0.1:10100/ready http://127.0.0.1:10101/ready
  rlbench backend --listen 127.0.0.1:10200 &
  rlbench wait --timeout 30s http://127.0.0.1:10200/healthz`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if err := checkHTTPURL("wait", a); err != nil {
					return err
				}
			}
			if o.Timeout <= 0 || o.Interval <= 0 {
				return usageErrorf("wait: --timeout and --interval must be > 0")
			}
			o.URLs = args
			if runF != nil {
				return runF(o)
			}
			return runWait(cmd.Context(), o)
		},
	}
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Second, "give up after this long")
	cmd.Flags().DurationVar(&o.Interval, "interval", 50*time.Millisecond, "time between two tries of a URL")
	return cmd
}

func runWait(ctx context.Context, o *WaitOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	pending := map[string]error{}
	for _, u := range o.URLs {
		pending[u] = errNotTried
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		for _, u := range o.URLs {
			if _, ok := pending[u]; !ok {
				continue
			}
			if err := ready(ctx, client, u); err != nil {
				if ctx.Err() == nil || errors.Is(pending[u], errNotTried) {
					pending[u] = err // a try cut short by the timeout keeps the one before
				}
			} else {
				delete(pending, u)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &ExitCodeError{Code: ExitInterrupted, Msg: "wait: interrupted"}
			}
			var lines []string
			for _, u := range o.URLs {
				if err, ok := pending[u]; ok {
					lines = append(lines, fmt.Sprintf("%s: %v", evidence.RedactURL(u), err))
				}
			}
			return fmt.Errorf("wait: not ready after %s:\n  %s", o.Timeout, strings.Join(lines, "\n  "))
		case <-tick.C:
		}
	}
}

var errNotTried = errors.New("not tried")

// ready GETs u once: nil when it answers 2xx. Its errors quote u
// redacted (evidence.RedactError).
func ready(ctx context.Context, client *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return evidence.RedactError(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return evidence.RedactError(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}
