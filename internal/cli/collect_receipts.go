package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rlbench/rlbench/collect/receipts"
	"github.com/rlbench/rlbench/evidence"
	"github.com/spf13/cobra"
)

// CollectReceiptsOptions are the flags of `rlbench collect receipts`.
type CollectReceiptsOptions struct {
	IO *IOStreams
	// URLs are the backends' base URLs (or receipts URLs), in flag order.
	URLs     []string
	Out      string
	Timeout  time.Duration
	MaxBytes int64
}

// NewCollectReceiptsCmd is `rlbench collect receipts`. runF, when not nil,
// receives the parsed options instead of collecting (tests).
func NewCollectReceiptsCmd(io *IOStreams, runF func(*CollectReceiptsOptions) error) *cobra.Command {
	o := &CollectReceiptsOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "receipts --url URL... --out DIR",
		Short: "Pull the receipts of running rlbench backends (GET /_rlbench/receipts), one file per replica",
		Long: `collect receipts streams GET /_rlbench/receipts of every --url (an rlbench
backend's base URL, repeatable: one per replica) into DIR/receipts/<host_port>.jsonl,
sealed, line by line. The receipts are those the backend recorded so far; each
names its replica (rlbench backend --replica). rlbench merge joins them with
the shards' requests. A status other than 200, a line that is not a receipt
(the URL and line are named), a stream cut short or longer than --max-bytes
is an error (exit 1), and the file's seal records it, so analyze reports the
run NOT_RUN rather than lost receipts. DIR may hold other evidence, but a
DIR/receipts/ that already holds files (an earlier collection) is a usage
error (exit 2): these receipts would overwrite or mix with them.`,
		Example: `  rlbench collect receipts --url http://10.0.0.7:8080 --url http://10.0.0.8:8080 --out ev`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.URLs) == 0 || o.Out == "" {
				return usageErrorf("--url (at least one) and --out are required")
			}
			seen := map[string]string{}
			for i, u := range o.URLs {
				ru, err := receipts.ReceiptsURL(u)
				if err != nil {
					return &UsageError{Err: err}
				}
				if err := checkHTTPURL("--url", u); err != nil {
					return err
				}
				src := receipts.SourceName(ru)
				if prev, dup := seen[src]; dup {
					return usageErrorf("--url %s and %s: the same backend (receipts/%s.jsonl) twice", evidence.RedactURL(prev), evidence.RedactURL(u), src)
				}
				seen[src] = u
				o.URLs[i] = ru
			}
			if o.MaxBytes < 0 {
				return usageErrorf("--max-bytes must not be negative")
			}
			if err := checkReceiptsOut("--out", o.Out); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runCollectReceipts(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.URLs, "url", nil, "backend base URL, e.g. http://10.0.0.7:8080 (repeatable)")
	f.StringVar(&o.Out, "out", "", "evidence directory")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "bound on each backend's whole stream")
	f.Int64Var(&o.MaxBytes, "max-bytes", receipts.DefaultMaxBytes, "bound on each backend's stream, bytes")
	return cmd
}

func runCollectReceipts(ctx context.Context, o *CollectReceiptsOptions) error {
	d := evidence.Dir(o.Out)
	var errs []error
	for _, u := range o.URLs {
		path := d.CollectedReceipts(receipts.SourceName(u))
		// receipts/ below --out: a link there is refused, not followed.
		if err := d.MkdirFor(path); err != nil {
			return err
		}
		w, err := evidence.Create(path)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		res, err := receipts.Fetch(cctx, u, w, receipts.Options{Client: &http.Client{}, MaxBytes: o.MaxBytes})
		cancel()
		if err != nil {
			w.Fail(err)
		}
		if cerr := w.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			errs = append(errs, err)
			fmt.Fprintf(o.IO.ErrOut, "receipts: %s: %d receipts before the error, in %s (sealed with the error)\n", res.URL, res.Receipts, path)
			continue
		}
		reps := strings.Join(res.Replicas, ", ")
		if reps == "" {
			reps = "none named"
		}
		fmt.Fprintf(o.IO.ErrOut, "receipts: %d from %s (replica %s) in %s\n", res.Receipts, res.URL, reps, path)
	}
	return errors.Join(errs...)
}
