package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/internal/runner"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// laidOut is one send as the reference lays it out.
type laidOut struct {
	id, target, conn, flow, url string
	sentNs                      int64
}

// layOut is the reference for sends: every flow's IDs (attack.IDs), their
// targets (attack.Assign), send times and connections, all in memory,
// sorted stably by send time, flow and ID, then sent at least 1 ns apart.
func layOut(t *testing.T, st runner.Step, j, index, repeat int, ts []attack.Target, start int64, arrivals string, seed int64, conns *int) []laidOut {
	t.Helper()
	type keyed struct {
		s     laidOut
		order int
	}
	var out []keyed
	prefix := fmt.Sprintf("sim-s%dr%d-%s", index+1, repeat, runner.Slug(st.Name))
	for k := range st.Attack.Flows {
		f := &st.Attack.Flows[k]
		split := attack.Split{Mode: attack.SplitEven}
		if f.Split != "" {
			var err error
			if split, err = attack.ParseSplit(f.Split); err != nil {
				t.Fatal(err)
			}
		}
		as, err := attack.Assign(attack.IDs(f.Count(), prefix+"-"+runner.Slug(f.Name)), ts, split, f.Seed)
		if err != nil {
			t.Fatal(err)
		}
		rate := vegeta.Rate(f.Rate)
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(j)<<32|uint64(k)))
		conn := map[int]string{}
		tt := float64(start)
		for i, a := range as {
			at := start
			if rate.Freq > 0 && rate.Per > 0 {
				gap := float64(rate.Per) / float64(rate.Freq)
				if arrivals == runner.ArrivalsPoisson {
					if i > 0 {
						tt += rng.ExpFloat64() * gap
					}
					at = int64(tt)
				} else {
					at = start + int64(math.Round(float64(i)*gap))
				}
			}
			c, ok := conn[a.Target]
			if !ok || st.Attack.NoKeepAlive || f.NoKeepAlive {
				*conns++
				c = fmt.Sprintf("127.0.0.1:%d/%d", 10000+*conns%50000, *conns)
				conn[a.Target] = c
			}
			out = append(out, keyed{laidOut{id: a.ID, target: ts[a.Target].Name, conn: c, flow: f.Name, url: "http://" + ts[a.Target].Name + f.Path,
				sentNs: at}, k<<32 | i})
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].s.sentNs != out[b].s.sentNs {
			return out[a].s.sentNs < out[b].s.sentNs
		}
		return out[a].order < out[b].order
	})
	ref := make([]laidOut, len(out))
	for k := range out {
		ref[k] = out[k].s
		if k > 0 {
			ref[k].sentNs = max(ref[k].sentNs, ref[k-1].sentNs+1)
		}
	}
	return ref
}

// TestSendsStream: the stream of a step gives, one at a time, the sends
// the reference lays out all at once (IDs, targets, connections, URLs,
// send times and their order), for uniform and Poisson arrivals, flows
// with and without a rate, keep-alive or not, every split, ties between
// flows; and it numbers the connections after the earlier steps'.
func TestSendsStream(t *testing.T) {
	p, err := runner.ParsePlan("stream.yaml", []byte(`
scenarios:
  - name: mix
    lab: {proxies: 3, local: {max_tokens: 10, tokens_per_fill: 5, fill_interval: 50ms}}
    attack:
      flows:
        - {name: A, rate: 300/1s, duration: 2s, split: "weights=5,3,2", seed: 4, path: /a}
        - {name: B, rate: 20/1s, duration: 2s, no_keepalive: true}
        - {name: C, ids: 50, split: "counts=10,20,20"}
        - {name: D, ids: 30, split: sticky, rate: 300/1s}
        - {name: E, rate: 100/1s, duration: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	sc := &p.Scenarios[0]
	ts := []attack.Target{{Name: "proxy-a"}, {Name: "proxy-b"}, {Name: "proxy-c"}}
	start := DefaultStart.UnixNano()
	for _, arrivals := range []string{runner.ArrivalsUniform, runner.ArrivalsPoisson} {
		for _, seed := range []int64{1, 9} {
			refConns, conns := 7, 7 // connections of earlier steps
			want := layOut(t, sc.Steps[0], 0, 2, 3, ts, start, arrivals, seed, &refConns)
			s, err := sends(sc.Steps[0], 0, sc, 2, 3, ts, start, arrivals, seed, &conns)
			if err != nil {
				t.Fatal(err)
			}
			if s.total != len(want) || conns != refConns {
				t.Fatalf("%s seed %d: %d sends and %d connections, want %d and %d", arrivals, seed, s.total, conns, len(want), refConns)
			}
			var got send
			for k, w := range want {
				if !s.next(&got) {
					t.Fatalf("%s seed %d: the stream ends after %d sends, want %d", arrivals, seed, k, len(want))
				}
				g := laidOut{id: got.id, target: got.target, conn: got.conn, flow: got.f.flow, url: got.url, sentNs: got.sentNs}
				if g != w {
					t.Fatalf("%s seed %d: send %d is %+v, want %+v", arrivals, seed, k, g, w)
				}
			}
			if s.next(&got) {
				t.Fatalf("%s seed %d: a send after the %d laid out: %+v", arrivals, seed, len(want), got)
			}
		}
	}
}
