// Command evgen writes lab-shaped evidence (internal/labshape) for
// bench/analyze.sh, and optionally the same requests as vegeta JSON results,
// so that `vegeta report` and `rlbench analyze` can be timed on the same
// number of results.
//
//	go run ./bench/evgen -n 1000000 -out DIR [-vegeta FILE] [-model]
//	go run ./bench/evgen -shards 16 -n 1000000 -out DIR [-receipts-per-shard]
//
// With -shards N, DIR receives the directories of a sharded attack
// (labshape.WriteShards): shard-0 .. shard-(N-1), each with the attack.json
// of `rlbench attack --shard K/N` and its -n requests, and the backend's
// receipts (in backend/, or with -receipts-per-shard in each shard's
// directory), for `rlbench merge DIR`.
//
// With -model, scenario.json declares a token bucket per proxy that admits
// every request, so that analyze replays each through the limiter model.
// With -tight as well, the bucket holds 100 tokens refilled at 400,000 a
// second, 80 % of what each proxy is offered (500,000 a second): about a
// fifth of the admissions are over-admissions (the limiter check FAILs),
// and every pass of the model check does its whole work.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/internal/labshape"
	"github.com/rlbench/rlbench/model/decl"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func main() {
	n := flag.Int("n", 1_000_000, "requests (each admitted, with one receipt)")
	out := flag.String("out", "", "scenario directory to write")
	vg := flag.String("vegeta", "", "also write the requests as vegeta JSON results to this file")
	withModel := flag.Bool("model", false, "declare a limiter (a roomy token bucket per proxy) that the model checker replays")
	tight := flag.Bool("tight", false, "with -model: the bucket admits 80% of what each proxy is offered (a fifth over-admitted)")
	shards := flag.Int("shards", 0, "write N shard directories of -n requests each (a sharded attack for `rlbench merge`)")
	perShard := flag.Bool("receipts-per-shard", false, "with -shards: each shard directory holds its own receipts (else one backend/ directory)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "evgen: -out DIR is required")
		os.Exit(2)
	}
	if *tight && !*withModel {
		fmt.Fprintln(os.Stderr, "evgen: -tight needs -model")
		os.Exit(2)
	}
	if *shards > 0 {
		if *vg != "" || *withModel || *tight {
			fmt.Fprintln(os.Stderr, "evgen: -shards does not combine with -vegeta, -model or -tight")
			os.Exit(2)
		}
		if err := labshape.WriteShards(*out, labshape.ShardOptions{Shards: *shards, IDs: *n, ReceiptsPerShard: *perShard}); err != nil {
			fmt.Fprintln(os.Stderr, "evgen:", err)
			os.Exit(1)
		}
		return
	}
	var enc vegeta.Encoder
	var bw *bufio.Writer
	var encErr error
	if *vg != "" {
		f, err := safefile.Create(*vg, 0o666)
		if err != nil {
			fmt.Fprintln(os.Stderr, "evgen:", err)
			os.Exit(1)
		}
		defer f.Close()
		bw = bufio.NewWriterSize(f, 1<<20)
		enc = vegeta.NewJSONEncoder(bw)
	}
	seq := uint64(0)
	each := func(r *evidence.Request) {
		if enc == nil || encErr != nil {
			return
		}
		h := http.Header{}
		for k, v := range r.Headers {
			h.Set(k, v)
		}
		res := vegeta.Result{Attack: r.Phase, Seq: seq, Code: uint16(r.Code), Timestamp: time.Unix(0, r.SentNs),
			Latency: time.Duration(r.LatencyNs), BytesIn: r.BytesIn, Error: r.Error, Body: []byte(r.Body),
			Method: r.Method, URL: r.URL, Headers: h}
		seq++
		encErr = enc.Encode(&res)
	}
	var lims []evidence.Limiter
	if *withModel {
		tb := decl.TokenBucketRate{Capacity: 1e7, RatePerSec: 1e7}
		if *tight {
			tb = decl.TokenBucketRate{Capacity: 100, RatePerSec: 400_000}
		}
		spec, err := tb.Spec()
		if err != nil {
			fmt.Fprintln(os.Stderr, "evgen:", err)
			os.Exit(1)
		}
		lims = []evidence.Limiter{{Name: "bucket", Stage: evidence.StageLocal, Key: evidence.KeyTarget, Model: &spec}}
	}
	if err := labshape.Write(*out, labshape.Options{N: *n, Each: each, Limiters: lims}); err != nil {
		fmt.Fprintln(os.Stderr, "evgen:", err)
		os.Exit(1)
	}
	if bw != nil {
		if err := bw.Flush(); err != nil && encErr == nil {
			encErr = err
		}
	}
	if encErr != nil {
		fmt.Fprintln(os.Stderr, "evgen: vegeta results:", encErr)
		os.Exit(1)
	}
}
