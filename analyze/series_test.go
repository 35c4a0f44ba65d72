package analyze

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
)

// largeRun builds a scenario of n requests over d to two targets: a local
// bucket of 5 per proxy refilled every second, so admissions spread over
// the run; every admitted request has a receipt; one request in 1000 has no
// response; an RLS stop in the middle.
func largeRun(n int, d time.Duration) *evidence.Bundle {
	five := 5
	sc := evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "large", IntendedLimit: evidence.IntendedPerRun(five),
		Limits: []evidence.LimitSpec{{Kind: evidence.LimitTokenBucket, Buckets: 2, MaxTokens: 5, TokensPerFill: 5, FillInterval: int64(time.Second)}}}
	reqs := make([]evidence.Request, n)
	var recs []evidence.Receipt
	step := int64(d) / int64(n)
	tokens := map[string]int{}
	lastFill := map[string]int64{}
	for i := range reqs {
		target := []string{"proxy-a", "proxy-b"}[i%2]
		sent := t0 + int64(i)*step
		if sent-lastFill[target] >= int64(time.Second) {
			tokens[target], lastFill[target] = 5, sent
		}
		r := evidence.Request{ID: fmt.Sprintf("%08d", i), Target: target, SentNs: sent, LatencyNs: int64(300_000 + (i*7919)%2_000_000)}
		switch {
		case i%1000 == 999:
			r.LatencyNs = int64(time.Second)
		case tokens[target] > 0:
			tokens[target]--
			r.Code = 200
			id := r.ID
			recs = append(recs, evidence.Receipt{ID: &id, RecvNs: sent + 100_000})
		default:
			r.Code, r.Body = 429, "local_rate_limited"
		}
		reqs[i] = r
	}
	ev := memScenario(sc, reqs, recs)
	ev.Faults = []evidence.Fault{{Name: "stop rls", Action: evidence.ActionStop, Target: "rls", BeginNs: t0 + int64(d)/3, EndNs: t0 + int64(d)/3 + 1000, OK: true},
		{Name: "start rls", Action: evidence.ActionStart, Target: "rls", BeginNs: t0 + int64(d)/2, EndNs: t0 + int64(d)/2 + 5_000_000, OK: true}}
	return &evidence.Bundle{Dir: "mem/large", Scenarios: []*evidence.ScenarioEvidence{ev}}
}

// TestSeriesAddsUp: the bins add up to the report's counts, the cumulative
// line ends at the admitted total, the configured bound line grows to the
// bound over the whole run, and the latency lines are downsampled.
func TestSeriesAddsUp(t *testing.T) {
	b := largeRun(20000, 10*time.Second)
	rep := Judge(b, Options{Now: fixedNow, Series: true})
	s := rep.Scenarios[0]
	ser := s.Series
	if ser == nil {
		t.Fatal("no series")
	}
	if ser.Bins > report.MaxBins || ser.Bins < report.MaxBins/5 || ser.BinNs != int64(100*time.Millisecond) {
		t.Errorf("bins %d of %v", ser.Bins, time.Duration(ser.BinNs))
	}
	if ser.StartNs > s.StartNs || ser.StartNs+int64(ser.Bins)*ser.BinNs <= s.EndNs {
		t.Errorf("axis %d + %d × %d does not cover %d..%d", ser.StartNs, ser.Bins, ser.BinNs, s.StartNs, s.EndNs)
	}
	checkSeriesCounts(t, s)
	checkSeriesBound(t, s)
	checkSeriesLatency(t, ser)
	// Without Options.Series there is none.
	if Judge(b, Options{Now: fixedNow}).Scenarios[0].Series != nil {
		t.Error("series computed without Options.Series")
	}
}

func sumInts(xs []int) (n int) {
	for _, x := range xs {
		n += x
	}
	return n
}

// checkSeriesCounts: the bins add up to the report's counts per target,
// and the cumulative line ends at the admitted total.
func checkSeriesCounts(t *testing.T, s report.ScenarioReport) {
	t.Helper()
	ser, sum := s.Series, sumInts
	for k, ts := range ser.Targets {
		tr := s.Targets[k]
		if ts.Target != tr.Target || sum(ts.Admitted) != tr.Classes.N[evidence.ClassAdmitted] || sum(ts.Rejected) != tr.Classes.N[evidence.ClassLocal429] ||
			sum(ts.Errors) != tr.Classes.N[evidence.ClassNoResponse] || sum(ts.Receipts) != tr.Receipts || len(ts.Admitted) != ser.Bins {
			t.Errorf("target %s: series %d/%d/%d/%d, report %+v", ts.Target, sum(ts.Admitted), sum(ts.Rejected), sum(ts.Errors), sum(ts.Receipts), tr)
		}
	}
	if sum(ser.Receipts) != s.Receipts.Total || ser.AdmittedCumulative[ser.Bins-1] != s.Totals.N[evidence.ClassAdmitted] {
		t.Errorf("receipts %d vs %d, cumulative %d vs %d", sum(ser.Receipts), s.Receipts.Total, ser.AdmittedCumulative[ser.Bins-1], s.Totals.N[evidence.ClassAdmitted])
	}
}

// checkSeriesBound: the configured bound line never goes down, ends at the
// bound over the run, and the cumulative admitted line stays under it.
func checkSeriesBound(t *testing.T, s report.ScenarioReport) {
	t.Helper()
	ser := s.Series
	if len(ser.Bounds) != 1 || ser.Bounds[0].Name != report.BoundConfigured {
		t.Fatalf("bounds %+v", ser.Bounds)
	}
	line := ser.Bounds[0].Allowed
	for k := 1; k < len(line); k++ {
		if line[k] < line[k-1] {
			t.Fatalf("bound line goes down at bin %d: %v", k, line)
		}
	}
	if last := line[len(line)-1]; last < s.Bound.Allowed || last > s.Bound.Allowed+10 {
		t.Errorf("bound line ends at %d, the bound over the run is %d", last, s.Bound.Allowed)
	}
	for k := range line {
		if ser.AdmittedCumulative[k] > line[k] {
			t.Errorf("bin %d: %d admitted above the bound %d", k, ser.AdmittedCumulative[k], line[k])
			break
		}
	}
}

// checkSeriesLatency: the latency lines are downsampled and in send order,
// and the percentile curves never go down.
func checkSeriesLatency(t *testing.T, ser *report.Series) {
	t.Helper()
	for _, l := range ser.Latency {
		if len(l.OffsetNs) > report.MaxLatencyPoints || len(l.OffsetNs) != len(l.LatencyNs) || l.Count < len(l.OffsetNs) {
			t.Errorf("%s/%s: %d points for %d requests", l.Target, l.Class, len(l.OffsetNs), l.Count)
		}
		for k := 1; k < len(l.OffsetNs); k++ {
			if l.OffsetNs[k] < l.OffsetNs[k-1] {
				t.Fatalf("%s/%s: points out of send order", l.Target, l.Class)
			}
		}
	}
	// proxy-a: admitted, local_429; proxy-b (every odd request) also no_response.
	if len(ser.Distributions) != 5 || len(ser.Distributions[0].LatencyNs) != len(report.DistributionPercents) {
		t.Errorf("distributions %d", len(ser.Distributions))
	}
	for _, d := range ser.Distributions {
		for k := 1; k < len(d.LatencyNs); k++ {
			if d.LatencyNs[k] < d.LatencyNs[k-1] {
				t.Errorf("%s/%s: percentile curve goes down: %v", d.Target, d.Class, d.LatencyNs)
			}
		}
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestHTMLOfAMillionRequests: the HTML report of 1,000,000 requests stays
// under 5 MB (counts per bin, LTTB lines).
func TestHTMLOfAMillionRequests(t *testing.T) {
	b := largeRun(1_000_000, 100*time.Second)
	rep := Judge(b, Options{Now: fixedNow, Series: true})
	if rep.Scenarios[0].Totals.Sent != 1_000_000 {
		t.Fatalf("sent %d", rep.Scenarios[0].Totals.Sent)
	}
	var cw countingWriter
	if err := report.WriteHTML(&cw, rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("HTML report of 1,000,000 requests: %d bytes", cw.n)
	if cw.n >= 5<<20 {
		t.Fatalf("HTML report of 1,000,000 requests is %d bytes, want < 5 MiB", cw.n)
	}
}
