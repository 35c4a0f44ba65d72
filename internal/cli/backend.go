package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/spf13/cobra"
)

// BackendOptions are the flags of `rlbench backend`.
type BackendOptions struct {
	IO        *IOStreams
	Listen    string
	Receipts  string
	Headers   []string
	Endpoints int
	Faults    backend.Faults
	Seed      uint64
	// Replica is recorded in every receipt; "" means DefaultReplica().
	Replica string
}

// DefaultReplica is the backend's replica identity when --replica is not
// given: "<host name>-<pid>" (in a Kubernetes pod the host name is the
// pod's name), "backend-<pid>" when the host name is unknown.
func DefaultReplica() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "backend"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}

// NewBackendCmd is `rlbench backend`. runF, when not nil, receives the
// parsed options instead of running the backend (tests).
func NewBackendCmd(io *IOStreams, runF func(*BackendOptions) error) *cobra.Command {
	o := &BackendOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "backend --receipts FILE",
		Short: "Run the upstream that records a receipt for every request it really receives",
		Long: `backend listens on 127.0.0.1 (port 0 picks a free port; with --endpoints N,
N listeners backend-0 .. backend-N-1, the first on --listen and the others
on the next ports, or on free ports with port 0), prints its
addresses as one JSON line on stdout, and writes one receipt line per
request to --receipts (whose directory must exist; a FIFO or a device is
refused), each on the file before its request is answered
(with its seal, --receipts.state.json, closed on SIGTERM/SIGINT). A receipt
that cannot be written (a full disk) answers that request 500 and stops the
backend with exit 1. The file is truncated when the backend starts: restart
it before each attack that reuses its directory.
A request refused before it is read whole gets no receipt, as it was never
served: a malformed request (400), a head over 1 MB (431), an Expect other
than 100-continue (417), an unknown transfer coding (501) or an HTTP
version other than 1.x (505).
A request without X-Rlbench-Id is recorded with "id": null. Every receipt
names its endpoint and the status answered, also when a fault shaped the
answer: --latency, --error-status (with --error-probability), a
--max-concurrent cap (answering 503 or, --over-capacity refuse, resetting
the connection) and --reset-probability (connection reset after reading
the request), drawn from --seed. PUT /_rlbench/faults with
{"endpoints":[1],"faults":{"error_status":503,"latency":"20ms"}} changes
them while it runs; GET /_rlbench/faults shows them. GET
/_rlbench/receipts serves the receipts so far from the file (none are kept
in memory); GET /healthz answers ok. Every receipt carries --replica (default
<host name>-<pid>), so that the receipts of several replicas merge apart.`,
		Example: `  rlbench backend --listen 127.0.0.1:8080 --receipts evidence/manual/receipts.jsonl
  rlbench backend --endpoints 3 --latency uniform:5ms..50ms --error-status 503 --error-probability 0.1 --seed 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Faults.Validate(); err != nil {
				return &UsageError{Err: err}
			}
			if o.Endpoints < 1 || o.Endpoints > backend.MaxEndpoints {
				return usageErrorf("--endpoints must be 1..%d, not %d", backend.MaxEndpoints, o.Endpoints)
			}
			if err := checkListen(o.Listen, o.Endpoints); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runBackend(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address of the first endpoint")
	f.StringVar(&o.Receipts, "receipts", evidence.ReceiptsFile, "receipts file (JSON Lines, truncated at start)")
	f.StringArrayVar(&o.Headers, "header", nil, "request header to record in receipts (repeatable; default x-envoy-attempt-count, x-forwarded-for, x-request-id)")
	f.IntVar(&o.Endpoints, "endpoints", 1, fmt.Sprintf("number of endpoints (1..%d), each its own listener", backend.MaxEndpoints))
	backendFaultFlags(f, &o.Faults, "")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of the fault draws (0: random)")
	f.StringVar(&o.Replica, "replica", "", "replica identity recorded in every receipt (default <host name>-<pid>)")
	return cmd
}

func runBackend(ctx context.Context, o *BackendOptions) error {
	if err := checkOutputFile("--receipts", o.Receipts); err != nil {
		return err
	}
	replica := o.Replica
	if replica == "" {
		replica = DefaultReplica()
	}
	be, err := backend.Start(ctx, backend.Options{Listen: o.Listen, ReceiptsFile: o.Receipts, Headers: o.Headers, Endpoints: o.Endpoints,
		Faults: o.Faults, Seed: o.Seed, Replica: replica})
	if err != nil {
		return err
	}
	line, _ := json.Marshal(struct {
		Backend   string             `json:"backend"`
		Addr      string             `json:"addr"`
		Receipts  string             `json:"receipts"`
		Replica   string             `json:"replica"`
		Endpoints []backend.Endpoint `json:"endpoints"`
	}{be.URL(), be.Addr(), o.Receipts, replica, be.Endpoints()})
	fmt.Fprintln(o.IO.Out, string(line))
	// A receipt that cannot be written stops the backend at once (that
	// request was answered 500): it must not keep answering unrecorded.
	select {
	case <-ctx.Done():
	case <-be.Failed():
	}
	err = be.Close()
	if err != nil {
		return fmt.Errorf("%w (stopped after %d receipts)", err, be.Count())
	}
	fmt.Fprintf(o.IO.ErrOut, "backend: %d receipts written to %s\n", be.Count(), o.Receipts)
	return nil
}

// checkListen refuses a --listen that is not HOST:PORT with a port number
// 0..65535 leaving room for n endpoints on the next ports (usage error).
func checkListen(listen string, n int) error {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return usageErrorf("--listen %q: want HOST:PORT (%v)", listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return usageErrorf("--listen %q: port %q is not a port number 0..65535", listen, port)
	}
	if p != 0 && p+n-1 > 65535 {
		return usageErrorf("--listen %q: %d endpoints from port %d go past 65535", listen, n, p)
	}
	return nil
}
