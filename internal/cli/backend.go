package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/spf13/cobra"
)

// BackendOptions are the flags of `rlbench backend`.
type BackendOptions struct {
	IO       *IOStreams
	Listen   string
	Receipts string
	Headers  []string
}

// NewBackendCmd is `rlbench backend`. runF, when not nil, receives the
// parsed options instead of running the backend (tests).
func NewBackendCmd(io *IOStreams, runF func(*BackendOptions) error) *cobra.Command {
	o := &BackendOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "backend --receipts FILE",
		Short: "Run the upstream that records a receipt for every request it really receives",
		Long: `backend listens on 127.0.0.1 (port 0 picks a free port), prints its address as one
JSON line on stdout, and appends one receipt line per request to --receipts
(flushed at least every 100 ms and on SIGTERM/SIGINT). A request without
X-Rlbench-Id is recorded with "id": null. GET /_rlbench/receipts returns the
receipts so far; GET /healthz answers ok.`,
		Example: `  rlbench backend --listen 127.0.0.1:8080 --receipts evidence/manual/receipts.jsonl`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return runBackend(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to listen on")
	cmd.Flags().StringVar(&o.Receipts, "receipts", evidence.ReceiptsFile, "receipts file (JSON Lines, truncated at start)")
	cmd.Flags().StringArrayVar(&o.Headers, "header", nil, "request header to record in receipts (repeatable; default x-envoy-attempt-count, x-forwarded-for, x-request-id)")
	return cmd
}

func runBackend(ctx context.Context, o *BackendOptions) error {
	w, err := evidence.Create(o.Receipts)
	if err != nil {
		return err
	}
	be, err := backend.Start(ctx, backend.Options{Listen: o.Listen, ReceiptWriter: w, Headers: o.Headers})
	if err != nil {
		_ = w.Close()
		return err
	}
	line, _ := json.Marshal(map[string]string{"backend": be.URL(), "addr": be.Addr(), "receipts": o.Receipts})
	fmt.Fprintln(o.IO.Out, string(line))
	<-ctx.Done()
	err = be.Close()
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		fmt.Fprintf(o.IO.ErrOut, "backend: %d receipts flushed to %s\n", be.Count(), o.Receipts)
	}
	return err
}
