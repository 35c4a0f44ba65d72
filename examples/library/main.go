// Command library uses rlbench as a library from a module of its own, as a
// CI harness or an operator's tool would: it starts an HTTP service whose
// backend records a receipt for every request it really receives, behind a
// stand-in rate limiter that lets 5 requests through; fires 20 request IDs
// at it with attack.Run; writes the evidence directory with package
// evidence (requests.jsonl, receipts.jsonl, scenario.json with the
// expectation, attack.json); and judges it with analyze.Analyze, adding a
// checker of its own (onceEach) to analyze's table.
//
//	go run . [-dir DIR]
//
// It prints the verdict and exits 0 on PASS, 1 otherwise. It imports only
// public packages: rlbench's lab backend is internal, so the backend here is
// the few lines a user adds to a service of their own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
)

const (
	ids   = 20
	limit = 5
)

func main() {
	dir := flag.String("dir", "", "evidence directory to write (default: a new temporary directory)")
	flag.Parse()
	status, err := run(context.Background(), *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(2)
	}
	if status != evidence.Pass {
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rlbench-library-"); err != nil {
			return "", err
		}
	}
	d := evidence.Dir(dir)
	// What the scenario must show: the limiter admits 5 of 20, every
	// admitted ID reaches the backend once and no rejected one does.
	five := limit
	scenario := evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "library example", IntendedLimit: evidence.IntendedPerRun(five),
		Expect: evidence.Expectation{
			Label:                 "5 admitted",
			Admitted:              evidence.AdmittedIn(evidence.Exact(limit)),
			Classes:               map[string]evidence.Range{evidence.ClassOther4xx.String(): evidence.Exact(ids - limit)},
			ReceiptsEqualAdmitted: true,
		}}
	if err := evidence.WriteJSONFile(d.Scenario(), &scenario); err != nil {
		return "", err
	}

	receipts, err := evidence.Create(d.Receipts())
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: limiter(limit, recorder(receipts)), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()

	requests, err := evidence.Create(d.Requests())
	if err != nil {
		return "", err
	}
	sum, err := attack.Run(ctx, attack.Options{
		IDs:     attack.IDs(ids, "lib"),
		Targets: []attack.Target{{Name: "service", URL: "http://" + ln.Addr().String()}},
		Path:    "/inventory",
	}, requests)
	if cerr := requests.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	// Stop the service, waiting for its handlers, then close the receipts.
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := errors.Join(srv.Shutdown(sctx), receipts.Close()); err != nil {
		return "", err
	}
	// attack.json last: a directory without it is an unfinished attack.
	if err := evidence.WriteJSONFile(d.Attack(), evidence.NewAttack(sum)); err != nil {
		return "", err
	}

	rep, err := analyze.Analyze(ctx, dir, analyze.Options{ExtraCheckers: []analyze.Checker{onceEach}})
	if err != nil {
		return "", err
	}
	for _, s := range rep.Scenarios {
		fmt.Printf("%s: %s (%s)\n", s.Name, s.Status, s.Expectation)
		fmt.Printf("  sent %d, admitted %d, other_4xx %d, receipts %d\n", s.Totals.Sent, s.Totals.N[evidence.ClassAdmitted], s.Totals.N[evidence.ClassOther4xx], s.Receipts.Total)
		for _, c := range s.Checks {
			fmt.Printf("  %-7s %s: want %s, got %s\n", c.Status, c.Name, c.Want, c.Got)
		}
		for _, r := range s.Reasons {
			fmt.Println("  reason:", r)
		}
	}
	fmt.Println("evidence:", dir)
	fmt.Println("verdict:", rep.Status)
	return rep.Status, nil
}

// limiter stands in for the rate limiter under test: it lets the first n
// requests through to next and answers the others 429 itself.
func limiter(n int64, next http.Handler) http.Handler {
	var seen atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > n {
			http.Error(w, "over limit", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recorder is the backend: it writes one evidence.Receipt (a line of
// receipts.jsonl) for every request it receives, then answers 200.
func recorder(out *evidence.Writer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		rc := evidence.Receipt{RecvNs: now.UnixNano(), RecvTime: now.UTC().Format(time.RFC3339Nano),
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Remote: r.RemoteAddr}
		if vs := r.Header.Values(evidence.IDHeader); len(vs) > 0 {
			rc.ID = &vs[0]
		}
		if err := out.Write(&rc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// onceEach is this program's own checker, judged beside analyze's table
// (Options.ExtraCheckers): every request the limiter let through (a 2xx)
// reached the backend, and none it rejected did. It reads the scenario's
// evidence and the receipts analyze joined to it through the public Input.
var onceEach = analyze.Checker{Name: "library: admitted = received", Check: func(in *analyze.Input) analyze.Result {
	reqs := &in.Evidence.Requests
	admitted, received, leaked := 0, 0, 0
	for i := 0; i < reqs.Len(); i++ {
		switch {
		case reqs.Class[i] == evidence.ClassAdmitted:
			admitted++
			if in.Received(i) {
				received++
			}
		case in.Received(i):
			leaked++
		}
	}
	status := report.CheckPass
	if received != admitted || leaked > 0 {
		status = report.CheckFail
	}
	return analyze.Result{Checks: []report.Check{{Name: "library: admitted requests received, rejected ones not", Status: status,
		Want: fmt.Sprintf("%d received, 0 leaked", admitted), Got: fmt.Sprintf("%d received, %d leaked", received, leaked)}}}
}}
