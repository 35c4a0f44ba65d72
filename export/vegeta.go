// Package export converts rlbench evidence into other tools' formats.
package export

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// VegetaOptions configure Vegeta.
type VegetaOptions struct {
	// Problem, when set, receives each scenario whose requests.jsonl could
	// not be read in full (the export then holds the lines before the bad
	// one); by default such a scenario is an error. So is each evidence
	// document the export relies on that is present but does not decode
	// (cut short by a writer that was killed, or malformed), named with its
	// line: the run's manifest.json (evidence.Bundle.Problems) and a
	// scenario's attack.json (its results then have BytesOut 0).
	Problem func(msg string)
}

// Vegeta writes every request of the evidence directory dir (a scenario
// directory or a run directory, as evidence.Load) to w as vegeta results in
// vegeta's JSON encoding (vegeta lib NewJSONEncoder: one object per line),
// so that `vegeta report` and `vegeta plot` read rlbench evidence.
//
// Each request.jsonl line becomes one vegeta.Result: Attack is the scenario
// name (the directory's name without scenario.json), "/" and the target (with "/<phase>" when the scenario has phases:
// vegeta plot draws one line per attack name); Timestamp is the send time,
// Latency the latency, Code, BytesIn, Error, Method and URL as recorded,
// Headers the captured response headers; BytesOut is the attack's request
// body length (attack.json), and Body is omitted. Seq numbers the results
// 0..N-1 in send order over the whole export, as vegeta's attacker does
// (vegeta plot needs that order; the results themselves are written in
// scenario and file order). A request line repeating an ID already seen is
// skipped, as evidence.Load does. It returns the number of results written.
func Vegeta(ctx context.Context, dir string, w io.Writer, opts VegetaOptions) (int, error) {
	b, err := evidence.Load(ctx, dir)
	if err != nil {
		return 0, err
	}
	if len(b.Problems) > 0 && opts.Problem == nil {
		return 0, fmt.Errorf("export vegeta: %s", b.Problems[0].Msg)
	}
	for _, p := range b.Problems {
		opts.Problem(p.Msg)
	}
	// Seq: rank by send time over every scenario.
	type ref struct {
		sent     int64
		scenario int
		req      int
	}
	var refs []ref
	for s, ev := range b.Scenarios {
		for i, t := range ev.Requests.SentNs.All() {
			refs = append(refs, ref{t, s, i})
		}
	}
	sort.SliceStable(refs, func(i, j int) bool { return refs[i].sent < refs[j].sent })
	seq := make([][]uint64, len(b.Scenarios))
	for s, ev := range b.Scenarios {
		seq[s] = make([]uint64, ev.Requests.Len())
	}
	for k, r := range refs {
		seq[r.scenario][r.req] = uint64(k)
	}

	enc := vegeta.NewJSONEncoder(w)
	n := 0
	for s, ev := range b.Scenarios {
		if !ev.HasRequests {
			continue
		}
		name := ev.Scenario.Name
		if !ev.HasScenario {
			name = filepath.Base(ev.Path) // as analyze names it
		}
		bodyBytes := map[string]uint64{}
		if ev.Attack != nil {
			for _, ph := range ev.Attack.Phases {
				bodyBytes[ph.Config.Name] = uint64(max(ph.Config.BodyBytes, 0))
			}
		} else if _, err := os.Lstat(evidence.Dir(ev.Path).Attack()); err == nil {
			for _, p := range ev.Problems {
				if p.File != evidence.AttackFile { // present, but it does not decode
					continue
				}
				if opts.Problem == nil {
					return n, fmt.Errorf("export vegeta: %s", p.Msg)
				}
				opts.Problem(p.Msg)
			}
		}
		phased := len(ev.Requests.Phases) > 1
		done := make([]bool, ev.Requests.Len())
		path := evidence.Dir(ev.Path).Requests()
		err := evidence.ReadFile(path, func(line int, q *evidence.Request) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			i, ok := ev.Requests.IDs.Lookup(q.ID)
			if !ok || done[i] {
				return nil // a repeated ID (or one Load did not keep)
			}
			done[i] = true
			attack := name + "/" + q.Target
			if phased {
				attack += "/" + q.Phase
			}
			r := vegeta.Result{Attack: attack, Seq: seq[s][i], Code: uint16(min(max(q.Code, 0), 65535)),
				Timestamp: time.Unix(0, q.SentNs).UTC(), Latency: time.Duration(q.LatencyNs), BytesOut: bodyBytes[q.Phase],
				BytesIn: q.BytesIn, Error: q.Error, Method: q.Method, URL: q.URL, Headers: headers(q.Headers)}
			if err := enc(&r); err != nil {
				return err
			}
			n++
			return nil
		})
		if err != nil {
			if _, isLine := err.(*evidence.LineError); isLine && opts.Problem != nil {
				opts.Problem(err.Error())
				continue
			}
			return n, fmt.Errorf("export vegeta: %w", err)
		}
	}
	return n, ctx.Err()
}

// headers turns captured response headers (lower-case names, values joined
// with ", ") into an http.Header with canonical names.
func headers(h map[string]string) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(http.Header, len(h))
	for k, v := range h {
		out[http.CanonicalHeaderKey(k)] = []string{v}
	}
	return out
}
