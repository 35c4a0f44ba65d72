// Package labshape writes synthetic evidence shaped like what `rlbench demo`
// records on the embedded lab (two Envoy-like proxies in front of the
// backend): the request lines attack writes, the receipt lines the backend
// writes, attack.json and scenario.json. The benchmarks of analyze and
// bench/analyze.sh use it to time Load + Judge on millions of requests.
package labshape

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// T0 is the send time of the first request, unix ns.
const T0 = int64(1796116558654998098)

// Options shape the evidence.
type Options struct {
	// N is the number of requests; every one is admitted (200) and has one
	// receipt, so the scenario PASSes.
	N int
	// Each, if set, is called with every request line written (e.g. to
	// convert it to another tool's format).
	Each func(*evidence.Request)
	// Limiters, if set, are declared in scenario.json (the model checker
	// replays every request through them).
	Limiters []evidence.Limiter
}

// Write writes requests.jsonl, receipts.jsonl, attack.json and scenario.json
// of one scenario into dir (created if needed).
func Write(dir string, o Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rw, err := evidence.Create(filepath.Join(dir, evidence.RequestsFile))
	if err != nil {
		return err
	}
	cw, err := evidence.Create(filepath.Join(dir, evidence.ReceiptsFile))
	if err != nil {
		_ = rw.Close()
		return err
	}
	width := len(strconv.Itoa(o.N))
	var last int64
	for i := 0; i < o.N; i++ {
		r, rc := pair(i, width, "")
		last = max(last, r.EndNs())
		if o.Each != nil {
			o.Each(&r)
		}
		if err := rw.Write(&r); err != nil {
			return err
		}
		if err := cw.Write(&rc); err != nil {
			return err
		}
	}
	if err := rw.Close(); err != nil {
		return err
	}
	if err := cw.Close(); err != nil {
		return err
	}
	attack := map[string]any{"schema": "rlbench.attack/v1", "complete": true, "interrupted": false, "sent": o.N, "recorded": o.N,
		"start_ns": T0, "end_ns": last}
	scen := evidence.Scenario{Schema: "rlbench.scenario/v1", Name: "lab-shaped",
		Expect: evidence.Expectation{Label: fmt.Sprintf("%d admitted", o.N), Admitted: evidence.AdmittedIn(evidence.Range{Min: o.N, Max: o.N}),
			ReceiptsEqualAdmitted: true}, Limiters: o.Limiters}
	if err := writeJSON(filepath.Join(dir, evidence.AttackFile), attack); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, evidence.ScenarioFile), scen)
}

// pair is the request at position i of the unsharded attack (IDs of width
// digits) and the backend's receipt of it, from replica (omitted if "").
func pair(i, width int, replica string) (evidence.Request, evidence.Receipt) {
	targets := []string{"proxy-a", "proxy-b"}
	urls := []string{"http://127.0.0.1:37795/inventory", "http://127.0.0.1:41067/inventory"}
	id := fmt.Sprintf("s1r1-attack-%0*d", width, i+1)
	sent := T0 + int64(i)*1000
	r := evidence.Request{ID: id, Target: targets[i%2], URL: urls[i%2], Method: "GET", SentNs: sent,
		LatencyNs: 4_504_326, Code: 200, BytesIn: uint64(len(id) + 9),
		Headers: map[string]string{"server": "envoy", "x-envoy-upstream-service-time": "1"},
		Body:    `{"id":"` + id + `"}`, Phase: "attack"}
	if len(r.Body) > 64 {
		r.Body = r.Body[:64]
	}
	recv := sent + 2_000_000
	rc := evidence.Receipt{ID: &id, RecvNs: recv, RecvTime: "2026-12-01T09:15:58.696889177Z", Method: "GET", Path: "/inventory",
		Remote: "127.0.0.1:58046", Headers: map[string]string{"x-forwarded-for": "127.0.0.1",
			"x-request-id": fmt.Sprintf("92127afb-e4d2-4f94-98b7-%012d", i)}, Replica: replica}
	return r, rc
}

// ShardOptions shape the evidence of a sharded attack (WriteShards).
type ShardOptions struct {
	// Shards is N, the number of shard directories; IDs is how many
	// requests each shard sent (M): the unsharded attack has N×M IDs, shard
	// K those at positions K, K+N, K+2N, ... (attack.Shard's slicing).
	Shards, IDs int
	// ReceiptsPerShard writes each shard's receipts into its own directory
	// (receipts/backend-0.jsonl, as `rlbench collect receipts` pulls them);
	// otherwise one directory "backend" holds every receipt, shard by
	// shard. Every receipt names replica "backend-0".
	ReceiptsPerShard bool
}

// WriteShards writes the directories of a sharded attack under root, as
// `rlbench attack --shard K/N` leaves them: shard-K/ (attack.json with its
// AttackShard, requests.jsonl) for K in 0..N-1, the backend's receipts
// (ShardOptions.ReceiptsPerShard) and scenario.json (in backend/, which
// `rlbench merge root` takes once). Every request is admitted (200) and has
// one receipt, so the merged scenario PASSes.
func WriteShards(root string, o ShardOptions) error {
	if o.Shards < 1 || o.IDs < 1 {
		return fmt.Errorf("labshape: %d shards of %d IDs: want at least 1 of each", o.Shards, o.IDs)
	}
	total := o.Shards * o.IDs
	width := len(strconv.Itoa(total))
	backend := filepath.Join(root, "backend")
	var shared *evidence.Writer
	if !o.ReceiptsPerShard {
		var err error
		if shared, err = evidence.Create(evidence.Dir(backend).CollectedReceipts("backend-0")); err != nil {
			return err
		}
	}
	const digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	for k := 0; k < o.Shards; k++ {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", k))
		rw, err := evidence.Create(evidence.Dir(dir).Requests())
		if err != nil {
			return err
		}
		cw := shared
		if cw == nil {
			if cw, err = evidence.Create(evidence.Dir(dir).CollectedReceipts("backend-0")); err != nil {
				return err
			}
		}
		sum := &evidence.AttackSummary{Schema: evidence.AttackSummarySchema, Complete: true, Sent: o.IDs, Recorded: o.IDs,
			Host: fmt.Sprintf("pod-%d", k), Node: "node-a",
			Shard: &evidence.AttackShard{Index: k, Count: o.Shards, IDs: o.IDs, TotalIDs: total, Digest: digest, IDSetDigest: digest,
				Flows: []evidence.AttackShardFlow{{IDs: o.IDs, TotalIDs: total, IDSetDigest: digest, ConfigDigest: digest}}}}
		for j := 0; j < o.IDs; j++ {
			r, rc := pair(k+j*o.Shards, width, "backend-0")
			if j == 0 {
				sum.StartNs, sum.FirstSendNs = r.SentNs, r.SentNs
			}
			sum.LastSendNs, sum.EndNs = r.SentNs, max(sum.EndNs, r.EndNs())
			if err := rw.Write(&r); err != nil {
				return err
			}
			if err := cw.Write(&rc); err != nil {
				return err
			}
		}
		if err := rw.Close(); err != nil {
			return err
		}
		if cw != shared {
			if err := cw.Close(); err != nil {
				return err
			}
		}
		if err := evidence.WriteJSONFile(evidence.Dir(dir).Attack(), evidence.NewAttack(sum)); err != nil {
			return err
		}
	}
	if shared != nil {
		if err := shared.Close(); err != nil {
			return err
		}
	}
	scen := evidence.Scenario{Schema: "rlbench.scenario/v1", Name: "lab-shaped-shards",
		Expect: evidence.Expectation{Label: fmt.Sprintf("%d admitted", total), Admitted: evidence.AdmittedIn(evidence.Range{Min: total, Max: total}),
			ReceiptsEqualAdmitted: true}}
	if err := os.MkdirAll(backend, 0o755); err != nil {
		return err
	}
	return writeJSON(filepath.Join(backend, evidence.ScenarioFile), scen)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteFile(path, append(b, '\n'), 0o644)
}
