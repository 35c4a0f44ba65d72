package export

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"github.com/tsenart/vegeta/v12/lib/plot"

	"github.com/rlbench/rlbench/evidence"
)

const demo = "../analyze/testdata/v1-release/demo"

func decodeAll(t *testing.T, b []byte) []vegeta.Result {
	t.Helper()
	dec := vegeta.DecoderFor(bytes.NewReader(b))
	if dec == nil {
		t.Fatal("vegeta does not recognise the export's encoding")
	}
	var out []vegeta.Result
	for {
		var r vegeta.Result
		err := dec.Decode(&r)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("vegeta decoder: %v", err)
		}
		out = append(out, r)
	}
}

// TestVegetaExportOfDemo reads `rlbench demo`'s evidence back with vegeta's
// own decoder and computes vegeta report's Metrics: 20 requests with the
// demo's status codes (10 × 200, 10 × 429), the latencies and bytes as
// recorded; and vegeta plot accepts the results.
func TestVegetaExportOfDemo(t *testing.T) {
	var buf bytes.Buffer
	n, err := Vegeta(context.Background(), demo, &buf, VegetaOptions{})
	if err != nil || n != 20 {
		t.Fatalf("exported %d, %v", n, err)
	}
	if strings.Count(buf.String(), "\n") != 20 {
		t.Fatalf("want one JSON object per line:\n%s", buf.String())
	}
	results := decodeAll(t, buf.Bytes())
	var m vegeta.Metrics
	for i := range results {
		m.Add(&results[i])
	}
	m.Close()
	if m.Requests != 20 || len(m.StatusCodes) != 2 || m.StatusCodes["200"] != 10 || m.StatusCodes["429"] != 10 {
		t.Fatalf("vegeta metrics: %d requests, codes %v", m.Requests, m.StatusCodes)
	}
	if m.Success != 0.5 {
		t.Errorf("success %v, want 0.5", m.Success)
	}

	// Each result matches its requests.jsonl line.
	want := map[string]evidence.Request{}
	err = evidence.ReadFile(filepath.Join(demo, "01-two-local-buckets", "1", evidence.RequestsFile), func(_ int, q *evidence.Request) error {
		want[q.URL+"|"+q.Target+"|"+q.ID] = *q
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	var latency int64
	for _, r := range results {
		if !strings.HasPrefix(r.Attack, "two local buckets/proxy-") {
			t.Errorf("attack %q", r.Attack)
		}
		target := strings.TrimPrefix(r.Attack, "two local buckets/")
		var q *evidence.Request
		for _, w := range want {
			if w.URL == r.URL && w.Target == target && w.SentNs == r.Timestamp.UnixNano() {
				q = &w
				break
			}
		}
		if q == nil {
			t.Fatalf("result %+v matches no request", r)
		}
		if int(r.Code) != q.Code || int64(r.Latency) != q.LatencyNs || r.BytesIn != q.BytesIn || r.Method != q.Method || r.Error != q.Error {
			t.Errorf("result %+v for request %+v", r, q)
		}
		if q.Code == 429 && r.Headers.Get("Content-Type") != q.Headers["content-type"] {
			t.Errorf("headers %v, recorded %v", r.Headers, q.Headers)
		}
		if r.Body != nil {
			t.Errorf("body exported: %q", r.Body)
		}
		seqs = append(seqs, int(r.Seq))
		latency += q.LatencyNs
	}
	if int64(m.Latencies.Total) != latency {
		t.Errorf("total latency %v, recorded %v", m.Latencies.Total, latency)
	}
	// Seq is 0..19 in send order.
	sort.Ints(seqs)
	for i, s := range seqs {
		if s != i {
			t.Fatalf("seqs %v", seqs)
		}
	}
	bySeq := append([]vegeta.Result(nil), results...)
	sort.Slice(bySeq, func(i, j int) bool { return bySeq[i].Seq < bySeq[j].Seq })
	for i := 1; i < len(bySeq); i++ {
		if bySeq[i].Timestamp.Before(bySeq[i-1].Timestamp) {
			t.Fatalf("seq %d sent before seq %d", i, i-1)
		}
	}

	// vegeta plot takes them: one line per attack and label.
	p := plot.New(plot.Title("demo"))
	for i := range results {
		if err := p.Add(&results[i]); err != nil {
			t.Fatalf("vegeta plot: %v", err)
		}
	}
	p.Close()
	var page bytes.Buffer
	if _, err := p.WriteTo(&page); err != nil {
		t.Fatalf("vegeta plot: %v", err)
	}
	if !strings.Contains(page.String(), "two local buckets/proxy-a") {
		t.Errorf("plot has no line of proxy-a")
	}
}

// TestVegetaExportPhasesAndBadLine: phases become part of the attack name;
// a malformed line is an error, or a problem reported when asked, with the
// lines before it exported.
func TestVegetaExportPhasesAndBadLine(t *testing.T) {
	dir := t.TempDir()
	reqs := []evidence.Request{
		{ID: "a", Target: "p", Phase: "before", Method: "GET", URL: "http://x/", SentNs: 2, LatencyNs: 5, Code: 200},
		{ID: "b", Target: "p", Phase: "after", Method: "GET", URL: "http://x/", SentNs: 1, LatencyNs: 5, Code: 0, Error: "EOF"},
		{ID: "a", Target: "p", Phase: "after", Method: "GET", URL: "http://x/", SentNs: 3, LatencyNs: 5, Code: 200}, // repeated ID
	}
	if err := evidence.WriteLines(filepath.Join(dir, evidence.RequestsFile), reqs); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := Vegeta(context.Background(), dir, &buf, VegetaOptions{})
	if err != nil || n != 2 {
		t.Fatalf("exported %d, %v", n, err)
	}
	rs := decodeAll(t, buf.Bytes())
	if rs[0].Attack != filepath.Base(dir)+"/p/before" || rs[0].Seq != 1 || rs[1].Seq != 0 || rs[1].Error != "EOF" {
		t.Fatalf("results %+v", rs)
	}
	f, err := os.OpenFile(filepath.Join(dir, evidence.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json\n")
	f.Close()
	if _, err := Vegeta(context.Background(), dir, io.Discard, VegetaOptions{}); err == nil || !strings.Contains(err.Error(), "requests.jsonl:4") {
		t.Fatalf("bad line: %v", err)
	}
	var problems []string
	buf.Reset()
	n, err = Vegeta(context.Background(), dir, &buf, VegetaOptions{Problem: func(m string) { problems = append(problems, m) }})
	if err != nil || n != 2 || len(problems) != 1 {
		t.Fatalf("with Problem: %d %v %v", n, err, problems)
	}
}
