package backend

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an Options.After that records each requested delay and
// fires at once (or when released, with hold).
type recorder struct {
	mu     sync.Mutex
	delays []time.Duration
	hold   chan time.Time // nil: fire at once
}

func (r *recorder) after(d time.Duration) <-chan time.Time {
	r.mu.Lock()
	r.delays = append(r.delays, d)
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		return hold
	}
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

func (r *recorder) got() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.delays...)
}

func start(t *testing.T, o Options) (*Backend, *syncBuf) {
	t.Helper()
	var sink syncBuf
	o.Receipts = &sink
	b, err := Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, &sink
}

func get(t *testing.T, url, id string) (int, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Rlbench-Id", id)
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func receiptsOf(t *testing.T, b *Backend) []receiptView {
	t.Helper()
	var out []receiptView
	for _, r := range readReceipts(t, "receipts", b.Receipts()) {
		v := receiptView{Endpoint: r.Endpoint, Status: r.Status, Fault: r.Fault, DelayNs: r.DelayNs}
		if r.ID != nil {
			v.ID = *r.ID
		}
		out = append(out, v)
	}
	return out
}

type receiptView struct {
	ID, Endpoint, Fault string
	Status              int
	DelayNs             int64
}

// Seeded latency: every request waits a drawn delay inside the
// distribution, recorded in its receipt; the same seed draws the same
// delays.
func TestLatencySeeded(t *testing.T) {
	run := func() []time.Duration {
		rec := &recorder{}
		l, err := ParseLatency("uniform:10ms..20ms")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := start(t, Options{Seed: 7, After: rec.after, Faults: Faults{Latency: l}})
		for i := range 20 {
			if code, err := get(t, b.URL()+"/x", fmt.Sprint(i)); err != nil || code != 200 {
				t.Fatalf("request %d: %d %v", i, code, err)
			}
		}
		rs := receiptsOf(t, b)
		d := rec.got()
		if len(rs) != 20 || len(d) != 20 {
			t.Fatalf("%d receipts, %d waits", len(rs), len(d))
		}
		for i, r := range rs {
			if time.Duration(r.DelayNs) != d[i] || d[i] < 10*time.Millisecond || d[i] >= 20*time.Millisecond || r.Status != 200 || r.Fault != "" {
				t.Fatalf("receipt %d %+v, wait %v", i, r, d[i])
			}
		}
		return d
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 drew %v then %v", a, b)
		}
	}
}

// An error status with a probability: the receipts say which requests got
// it; probability 1 (or nil) answers every request with it.
func TestErrorStatus(t *testing.T) {
	half := 0.5
	b, _ := start(t, Options{Seed: 3, Faults: Faults{ErrorStatus: 503, ErrorProbability: &half}})
	codes := map[int]int{}
	for i := range 200 {
		code, err := get(t, b.URL()+"/x", fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		codes[code]++
	}
	rs := receiptsOf(t, b)
	faulted := 0
	for _, r := range rs {
		if r.Fault == "error" {
			faulted++
			if r.Status != 503 {
				t.Fatalf("error receipt %+v", r)
			}
		} else if r.Status != 200 {
			t.Fatalf("plain receipt %+v", r)
		}
	}
	if codes[503] != faulted || codes[503]+codes[200] != 200 || faulted < 70 || faulted > 130 {
		t.Fatalf("codes %v, %d error receipts", codes, faulted)
	}
	if _, err := b.SetFaults(nil, Faults{ErrorStatus: 500}); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, b.URL()+"/x", "all"); code != 500 {
		t.Fatalf("probability nil: %d", code)
	}
}

// Reset after reading the request: no answer, a receipt with status 0.
func TestResetAfterRequest(t *testing.T) {
	b, _ := start(t, Options{Faults: Faults{ResetProbability: 1}})
	if _, err := get(t, b.URL()+"/x", "r1"); err == nil {
		t.Fatal("a reset connection answered")
	}
	rs := receiptsOf(t, b)
	if len(rs) != 1 || rs[0].ID != "r1" || rs[0].Status != 0 || rs[0].Fault != "reset" {
		t.Fatalf("receipts %+v", rs)
	}
}

// The concurrency cap: while one request is being answered (its latency
// held), the next is over capacity: 503 "overload", or with "refuse" its
// connection is reset; a new connection is then reset before any request.
func TestConcurrencyCap(t *testing.T) {
	for _, mode := range []string{OverCapacity503, OverCapacityRefuse} {
		rec := &recorder{hold: make(chan time.Time)}
		b, _ := start(t, Options{After: rec.after, Faults: Faults{MaxConcurrent: 1, OverCapacity: mode, Latency: &Latency{Dist: LatencyFixed, A: time.Second}}})
		// A keep-alive connection opened before the cap is reached.
		pre, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan int, 1)
		go func() { code, _ := get(t, b.URL()+"/x", "held"); first <- code }()
		for len(rec.got()) == 0 {
			time.Sleep(time.Millisecond) // until the first request waits in its latency
		}
		fmt.Fprintf(pre, "GET /x HTTP/1.1\r\nHost: b\r\nX-Rlbench-Id: over\r\n\r\n")
		buf := make([]byte, 64)
		n, rerr := pre.Read(buf)
		pre.Close()
		close(rec.hold)
		if code := <-first; code != 200 {
			t.Fatalf("%s: held request %d", mode, code)
		}
		rs := receiptsOf(t, b)
		var over receiptView
		for _, r := range rs {
			if r.ID == "over" {
				over = r
			}
		}
		if mode == OverCapacity503 {
			if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 503") || over.Status != 503 || over.Fault != "overload" {
				t.Fatalf("503 mode: %q %v receipt %+v", buf[:n], rerr, over)
			}
			continue
		}
		if n != 0 || rerr == nil || over.Status != 0 || over.Fault != "refused" {
			t.Fatalf("refuse mode: %q %v receipt %+v", buf[:n], rerr, over)
		}
	}
	// New connections while at the cap are reset before any request.
	rec := &recorder{hold: make(chan time.Time)}
	b, _ := start(t, Options{After: rec.after, Faults: Faults{MaxConcurrent: 1, OverCapacity: OverCapacityRefuse, Latency: &Latency{Dist: LatencyFixed, A: time.Second}}})
	done := make(chan struct{})
	go func() { defer close(done); _, _ = get(t, b.URL()+"/x", "held") }()
	for len(rec.got()) == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := get(t, b.URL()+"/x", "new"); err == nil {
		t.Fatal("a new connection at the cap was served")
	}
	close(rec.hold)
	<-done
	for _, r := range receiptsOf(t, b) {
		if r.ID == "new" {
			t.Fatalf("refused connection has a receipt: %+v", r)
		}
	}
}

// Several endpoints: each its own listener and name in the receipts;
// faults set on one endpoint leave the others alone, and come back.
func TestEndpointsAndFaultsPerEndpoint(t *testing.T) {
	b, _ := start(t, Options{Endpoints: 3})
	eps := b.Endpoints()
	if len(eps) != 3 || eps[0].URL != b.URL() || eps[1].URL == eps[2].URL || eps[2].Name != "backend-2" {
		t.Fatalf("endpoints %+v", eps)
	}
	prev, err := b.SetFaults([]int{1}, Faults{ErrorStatus: 502})
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range eps {
		code, err := get(t, ep.URL+"/x", fmt.Sprintf("e%d", i))
		if err != nil || (i == 1) != (code == 502) {
			t.Fatalf("endpoint %d: %d %v", i, code, err)
		}
	}
	b.RestoreFaults([]int{1}, prev)
	if code, _ := get(t, eps[1].URL+"/x", "back"); code != 200 {
		t.Fatalf("restored endpoint answered %d", code)
	}
	rs := receiptsOf(t, b)
	want := []string{"backend-0", "backend-1", "backend-2", "backend-1"}
	for i, r := range rs {
		if r.Endpoint != want[i] {
			t.Fatalf("receipt %d endpoint %q, want %q", i, r.Endpoint, want[i])
		}
	}
	if _, err := b.SetFaults([]int{5}, Faults{}); err == nil {
		t.Fatal("unknown endpoint accepted")
	}
}

// PUT /_rlbench/faults changes them while the backend runs; GET shows them.
func TestFaultsControlEndpoint(t *testing.T) {
	b, _ := start(t, Options{Endpoints: 2})
	body := `{"endpoints":[0],"faults":{"latency":"exp:5ms","error_status":503,"error_probability":0.25,"max_concurrent":4,"over_capacity":"refuse"}}`
	req, _ := http.NewRequest("PUT", b.URL()+FaultsPath, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st FaultsState
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || len(st.Endpoints) != 2 {
		t.Fatalf("PUT: %d %v %+v", resp.StatusCode, err, st)
	}
	f := st.Endpoints[0].Faults
	if f.Latency.String() != "exp:5ms" || f.ErrorStatus != 503 || *f.ErrorProbability != 0.25 || f.MaxConcurrent != 4 || !st.Endpoints[1].Faults.IsZero() {
		t.Fatalf("state %+v", st)
	}
	for _, bad := range []string{`{"faults":{"error_status":42}}`, `{"faults":{"bogus":1}}`, `{"endpoints":[9],"faults":{}}`, `not json`} {
		req, _ := http.NewRequest("PUT", b.URL()+FaultsPath, strings.NewReader(bad))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d", bad, resp.StatusCode)
		}
	}
	if n := b.Count(); n != 0 {
		t.Fatalf("control requests made %d receipts", n)
	}
}

func TestParseLatency(t *testing.T) {
	for in, want := range map[string]string{"50ms": "50ms", "uniform:10ms..50ms": "uniform:10ms..50ms", " exp:20ms": "exp:20ms",
		"normal:50ms, 10ms": "normal:50ms,10ms"} {
		l, err := ParseLatency(in)
		if err != nil || l.String() != want {
			t.Errorf("%q: %v %v", in, l, err)
		}
	}
	for _, bad := range []string{"", "soon", "uniform:50ms..10ms", "uniform:10ms", "gamma:1ms", "-5ms", "normal:1ms"} {
		if _, err := ParseLatency(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, f := range []Faults{{ErrorStatus: 200}, {ErrorProbability: ptrF(0.5)}, {ErrorStatus: 503, ErrorProbability: ptrF(2)},
		{ResetProbability: -1}, {OverCapacity: "refuse"}, {MaxConcurrent: 1, OverCapacity: "drop"}} {
		if err := f.Validate(); err == nil {
			t.Errorf("%+v accepted", f)
		}
	}
}

func ptrF(v float64) *float64 { return &v }

// A normal latency never draws below zero.
func TestLatencyDraws(t *testing.T) {
	b, _ := start(t, Options{Seed: 1})
	r := b.rnd
	n := &Latency{Dist: LatencyNormal, A: time.Millisecond, B: 10 * time.Millisecond}
	e := &Latency{Dist: LatencyExponential, A: 10 * time.Millisecond}
	var sum time.Duration
	for range 2000 {
		if d := r.latency(n); d < 0 {
			t.Fatalf("normal drew %v", d)
		}
		sum += r.latency(e)
	}
	if mean := sum / 2000; mean < 8*time.Millisecond || mean > 12*time.Millisecond {
		t.Fatalf("exp mean %v, want about 10ms", mean)
	}
}
