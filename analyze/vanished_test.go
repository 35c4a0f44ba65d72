package analyze

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// TestCounterMissingFromAfter (issue 27): a counter in the before snapshot
// at 0 and absent from the after one was read as 0 after, and
// cluster.backend.upstream_rq_2xx = admitted FAILed ("want 5, got 0"),
// though Envoy never removes a counter while it runs: the after snapshot
// is not that process's, or lost it. It is now a reset (the comparison is
// unknown, NOT_RUN naming the counter); with the counter present the same
// evidence passes.
func TestCounterMissingFromAfter(t *testing.T) {
	for _, present := range []bool{true, false} {
		dir, _ := statsEv(t)
		snap{100, 40, 3600, t0 - sec}.write(t, dir, "proxy-b", evidence.LabelBefore)
		snap{105, 45, 3602, t0 + 2*sec}.write(t, dir, "proxy-b", evidence.LabelAfter)
		setUpstream(t, dir, "proxy-b", evidence.LabelBefore, map[string]uint64{"2xx": 0})
		if present {
			setUpstream(t, dir, "proxy-b", evidence.LabelAfter, map[string]uint64{"2xx": 5})
		}
		s := run(t, dir).Scenarios[0]
		if present {
			wantVerdict(t, s, evidence.Pass)
			continue
		}
		wantVerdict(t, s, evidence.NotRun, "cluster.backend.upstream_rq_2xx (0 before) is missing from the after snapshot")
		if ps := s.Stats[1]; ps.Status != report.StatsReset {
			t.Errorf("proxy-b stats %+v", ps)
		}
		for _, ch := range s.Checks {
			if ch.Status == report.CheckFail {
				t.Errorf("FAIL from a counter missing from the after snapshot: %+v", ch)
			}
		}
	}
}

// setUpstream sets a written snapshot's cluster "backend" upstream codes.
func setUpstream(t *testing.T, dir, proxy, label string, codes map[string]uint64) {
	t.Helper()
	p := filepath.Join(dir, evidence.StatsDir, proxy+"."+label+".json")
	b, err := os.ReadFile(p)
	must(t, err)
	var s envoyrec.Snapshot
	must(t, json.Unmarshal(b, &s))
	s.Upstream = []envoyrec.ClusterCodes{{Cluster: "backend", Codes: codes}}
	b, err = json.Marshal(s)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o644))
}
