package remotewrite

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"
	"google.golang.org/protobuf/proto"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/metricnames"
)

// receiver is a remote write endpoint that checks each request's headers,
// decodes its body with the same packages (Decode) and hands it over.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	reqs   chan *prompb.WriteRequest
	status atomic.Int32 // answer; 0: 204
	tries  atomic.Int32
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, reqs: make(chan *prompb.WriteRequest, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.tries.Add(1)
		for h, want := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
			"X-Prometheus-Remote-Write-Version": "0.1.0"} {
			if got := req.Header.Get(h); got != want {
				t.Errorf("header %s = %q, want %q", h, got, want)
			}
		}
		if ua := req.Header.Get("User-Agent"); !strings.HasPrefix(ua, "rlbench/") {
			t.Errorf("User-Agent %q", ua)
		}
		if req.Method != http.MethodPost || req.URL.Path != "/api/v1/write" {
			t.Errorf("%s %s", req.Method, req.URL.Path)
		}
		if st := int(r.status.Load()); st != 0 {
			http.Error(w, "refused", st)
			return
		}
		body, _ := io.ReadAll(req.Body)
		wr, err := Decode(body)
		if err != nil {
			t.Errorf("decoding the body: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.reqs <- wr
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) url() string { return r.srv.URL + "/api/v1/write" }

func noSleep(context.Context, time.Duration) error { return nil }

func labelsOf(ts prompb.TimeSeries) map[string]string {
	m := map[string]string{}
	for _, l := range ts.Labels {
		m[l.Name] = l.Value
	}
	return m
}

// TestClientWrite: one request with the spec's headers whose body decodes
// to the series written, labels sorted.
func TestClientWrite(t *testing.T) {
	rc := newReceiver(t)
	c, err := NewClient(ClientOptions{URL: rc.url()})
	if err != nil {
		t.Fatal(err)
	}
	in := []prompb.TimeSeries{Series("rlbench_x", map[string]string{"b": "2", "a": "1"}, 7, 1000)}
	if err := c.Write(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	got := <-rc.reqs
	if len(got.Timeseries) != 1 {
		t.Fatalf("%d series", len(got.Timeseries))
	}
	ts := got.Timeseries[0]
	names := []string{}
	for _, l := range ts.Labels {
		names = append(names, l.Name)
	}
	if !slices.Equal(names, []string{"__name__", "a", "b"}) || ts.Labels[0].Value != "rlbench_x" ||
		len(ts.Samples) != 1 || ts.Samples[0].Value != 7 || ts.Samples[0].Timestamp != 1000 {
		t.Errorf("series %+v", ts)
	}
}

// TestClientRetries: 5xx and 429 are retried up to Retries times, a 4xx
// never; the error names the status and the tries, and the URL redacted.
func TestClientRetries(t *testing.T) {
	for _, tc := range []struct {
		status, retries, wantTries int
	}{
		{500, 2, 3},
		{429, 1, 2},
		{400, 2, 1},
		{503, -1, 1},
	} {
		rc := newReceiver(t)
		rc.status.Store(int32(tc.status))
		u := strings.Replace(rc.url(), "http://", "http://user:secret@", 1)
		c, err := NewClient(ClientOptions{URL: u, Retries: tc.retries, sleep: noSleep})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Write(context.Background(), []prompb.TimeSeries{Series("rlbench_x", nil, 1, 1)})
		we, ok := err.(*WriteError)
		if !ok || we.Status != tc.status || we.Tries != tc.wantTries || int(rc.tries.Load()) != tc.wantTries {
			t.Errorf("status %d retries %d: error %v, %d tries at the receiver", tc.status, tc.retries, err, rc.tries.Load())
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error quotes the password: %v", err)
		}
	}
	// A receiver that fails twice, then accepts: nil.
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	c, _ := NewClient(ClientOptions{URL: srv.URL, sleep: noSleep})
	if err := c.Write(context.Background(), []prompb.TimeSeries{Series("rlbench_x", nil, 1, 1)}); err != nil || n.Load() != 3 {
		t.Errorf("after two 502s: %v, %d tries", err, n.Load())
	}
}

// TestNewClientRejects: a URL that is not absolute http(s) is an error,
// quoted redacted.
func TestNewClientRejects(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9090/api/v1/write", "ftp://h/x", "http:///x", "unix://user:secret@/x"} {
		_, err := NewClient(ClientOptions{URL: u})
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// TestFromFamilies: gauges keep their labels and get run_id; a summary
// becomes its quantile series plus _sum and _count.
func TestFromFamilies(t *testing.T) {
	lp := func(k, v string) *dto.LabelPair { return &dto.LabelPair{Name: proto.String(k), Value: proto.String(v)} }
	fams := []*dto.MetricFamily{
		{Name: proto.String("rlbench_g"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{lp("scenario", "s")}, Gauge: &dto.Gauge{Value: proto.Float64(3)}}}},
		{Name: proto.String("rlbench_l"), Type: dto.MetricType_SUMMARY.Enum(), Metric: []*dto.Metric{
			{Summary: &dto.Summary{SampleCount: proto.Uint64(4), SampleSum: proto.Float64(2),
				Quantile: []*dto.Quantile{{Quantile: proto.Float64(0.5), Value: proto.Float64(0.25)}, {Quantile: proto.Float64(1), Value: proto.Float64(1)}}}}}},
	}
	got := map[string]float64{}
	for _, ts := range FromFamilies(fams, map[string]string{"run_id": "r1"}, 5) {
		l := labelsOf(ts)
		if l["run_id"] != "r1" || ts.Samples[0].Timestamp != 5 {
			t.Errorf("series %v", l)
		}
		got[l["__name__"]+"{"+l["scenario"]+l["quantile"]+"}"] = ts.Samples[0].Value
	}
	want := map[string]float64{"rlbench_g{s}": 3, "rlbench_l{0.5}": 0.25, "rlbench_l{1}": 1, "rlbench_l_sum{}": 2, "rlbench_l_count{}": 4}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// TestPusher runs a real attack with the pusher registered: each push
// carries run_id on every series, the request counters only grow and end
// at the attack's counts, the fault window shows, and Close pushes the
// end-of-run verdict series.
func TestPusher(t *testing.T) {
	rc := newReceiver(t)
	c, _ := NewClient(ClientOptions{URL: rc.url(), sleep: noSleep})
	tick := make(chan time.Time)
	p := NewPusher(PusherOptions{Client: c, tick: tick})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	p.Fault("s0", 1, evidence.Fault{Name: "early", Action: evidence.ActionExec, Target: "backend"})
	if b := p.collect(time.Now()); b != nil {
		t.Fatalf("a push before the run ID is known: %v", b)
	}
	p.Start(context.Background())
	p.SetRunID("20261206T000000Z-1")
	prog := new(attack.Progress)
	stop := p.Attack("s1", 1, prog)
	p.Fault("s1", 1, evidence.Fault{Name: "rls-down", Action: evidence.ActionStop, Target: "rls"})
	var buf strings.Builder
	if _, err := attack.Run(context.Background(), attack.Options{IDs: attack.IDs(8, "p"), Targets: []attack.Target{{Name: "a", URL: target.URL}}, Progress: prog}, evidence.NewWriter(&buf)); err != nil {
		t.Fatal(err)
	}
	tick <- time.Now()
	first := <-rc.reqs
	stop()
	p.Fault("s1", 1, evidence.Fault{Name: "rls-up", Action: evidence.ActionStart, Target: "rls"})
	tick <- time.Now() // the window closed since: still 1 (open during the interval)
	second := <-rc.reqs
	rep := &report.Report{Status: evidence.Fail, Scenarios: []report.ScenarioReport{{Name: "s1", Repeat: 1, Status: evidence.Fail}}}
	st := p.Close(context.Background(), report.PrometheusFamilies(rep))
	last := <-rc.reqs
	if st.Pushed != 3 || st.Failed != 0 || st.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}

	value := func(wr *prompb.WriteRequest, name string, kv ...string) (float64, bool) {
	next:
		for _, ts := range wr.Timeseries {
			l := labelsOf(ts)
			if l["__name__"] != name {
				continue
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if l[kv[i]] != kv[i+1] {
					continue next
				}
			}
			return ts.Samples[0].Value, true
		}
		return 0, false
	}
	var prevTs int64
	for i, wr := range []*prompb.WriteRequest{first, second, last} {
		for _, ts := range wr.Timeseries {
			if l := labelsOf(ts); l[metricnames.LabelRunID] != "20261206T000000Z-1" {
				t.Errorf("push %d: series without run_id: %v", i, l)
			}
			if i > 0 && ts.Samples[0].Timestamp <= prevTs {
				t.Errorf("push %d: sample at %d before the previous push's %d", i, ts.Samples[0].Timestamp, prevTs)
			}
		}
		prevTs = wr.Timeseries[0].Samples[0].Timestamp
		if n, ok := value(wr, metricnames.RequestsTotal, "scenario", "s1", "repeat", "1", "target", "a", "class", "admitted"); !ok || n != 8 {
			t.Errorf("push %d: admitted %v %v, want 8", i, n, ok)
		}
		if n, ok := value(wr, metricnames.RequestsInFlight, "target", "a"); !ok || n != 0 {
			t.Errorf("push %d: in flight %v %v after the attack", i, n, ok)
		}
	}
	if v, ok := value(first, metricnames.FaultActive, "fault", "rls-down"); !ok || v != 1 {
		t.Errorf("first push: fault_active %v %v, want 1", v, ok)
	}
	if v, ok := value(second, metricnames.FaultActive, "fault", "rls-down"); !ok || v != 1 {
		t.Errorf("second push: fault_active %v %v, want 1 (open during the interval)", v, ok)
	}

	if v, ok := value(last, metricnames.FaultActive, "fault", "rls-down"); !ok || v != 0 {
		t.Errorf("last push: fault_active %v %v, want 0", v, ok)
	}
	if v, ok := value(last, report.MetricScenarioStatus, "scenario", "s1", "status", evidence.Fail); !ok || v != 1 {
		t.Errorf("verdict series %v %v", v, ok)
	}
	if v, ok := value(last, report.MetricStatus, "status", evidence.Fail); !ok || v != 1 {
		t.Errorf("run verdict series %v %v", v, ok)
	}
}

// TestPusherCountsAcrossSteps: a scenario's counter goes on from its
// earlier attack steps (a counter, not a per-step gauge).
func TestPusherCountsAcrossSteps(t *testing.T) {
	rc := newReceiver(t)
	c, _ := NewClient(ClientOptions{URL: rc.url(), sleep: noSleep})
	p := NewPusher(PusherOptions{Client: c, RunID: "r"})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	for step := 0; step < 2; step++ {
		prog := new(attack.Progress)
		stop := p.Attack("s", 1, prog)
		var buf strings.Builder
		if _, err := attack.Run(context.Background(), attack.Options{IDs: attack.IDs(3, "x"), Targets: []attack.Target{{Name: "a", URL: target.URL}}, Progress: prog}, evidence.NewWriter(&buf)); err != nil {
			t.Fatal(err)
		}
		stop()
	}
	p.Close(context.Background(), nil)
	wr := <-rc.reqs
	for _, ts := range wr.Timeseries {
		if l := labelsOf(ts); l["__name__"] == metricnames.RequestsTotal && l["class"] == "admitted" && ts.Samples[0].Value != 6 {
			t.Errorf("admitted %v after two steps of 3", ts.Samples[0].Value)
		}
	}
}

// TestPusherFailingReceiver: a receiver that fails every push costs the
// attack nothing (it sends and records every ID); the failures are counted,
// kept at most MaxPending, and dropped at Close.
func TestPusherFailingReceiver(t *testing.T) {
	for _, status := range []int{500, 400} {
		rc := newReceiver(t)
		rc.status.Store(int32(status))
		c, _ := NewClient(ClientOptions{URL: rc.url(), sleep: noSleep, Retries: -1})
		tick := make(chan time.Time)
		p := NewPusher(PusherOptions{Client: c, RunID: "r", MaxPending: 2, tick: tick})
		p.Start(context.Background())
		var once sync.Once
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() { // four pushes while the attack runs, each failing
				for range 4 {
					tick <- time.Now()
				}
			})
		}))
		prog := new(attack.Progress)
		stop := p.Attack("s", 1, prog)
		var buf strings.Builder
		sum, err := attack.Run(context.Background(), attack.Options{IDs: attack.IDs(20, "f"), Targets: []attack.Target{{Name: "a", URL: target.URL}}, Progress: prog}, evidence.NewWriter(&buf))
		stop()
		target.Close()
		if err != nil || sum.Sent != 20 || prog.Snapshot().Recorded != 20 {
			t.Fatalf("attack with a failing receiver: %v, sent %d", err, sum.Sent)
		}
		st := p.Close(context.Background(), nil)
		if st.Pushed != 0 || st.Failed < 1 || st.LastError == "" {
			t.Errorf("HTTP %d: stats %+v", status, st)
		}
		// 5 pushes made (4 ticks, Close): a 500 keeps them (at most 2, the
		// rest dropped: 5 in all); a 400 drops each one it refuses.
		if st.Dropped != 5 {
			t.Errorf("HTTP %d: dropped %d, want 5 (stats %+v)", status, st.Dropped, st)
		}
	}
}

// TestPusherRace drives Attack, Fault and SetRunID from several goroutines
// while the pusher pushes (go test -race).
func TestPusherRace(t *testing.T) {
	rc := newReceiver(t)
	go func() {
		for range rc.reqs {
		}
	}()
	c, _ := NewClient(ClientOptions{URL: rc.url(), sleep: noSleep})
	tick := make(chan time.Time)
	p := NewPusher(PusherOptions{Client: c, tick: tick})
	p.Start(context.Background())
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.SetRunID("r")
			prog := new(attack.Progress)
			stop := p.Attack("s", g, prog)
			p.Fault("s", g, evidence.Fault{Name: "x", Action: evidence.ActionExec, Target: "backend"})
			var buf strings.Builder
			_, _ = attack.Run(context.Background(), attack.Options{IDs: attack.IDs(30, "r"), Targets: []attack.Target{{URL: target.URL}}, Progress: prog}, evidence.NewWriter(&buf))
			stop()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case tick <- time.Now():
			continue
		case <-done:
		}
		break
	}
	if st := p.Close(context.Background(), nil); st.Failed != 0 || st.Pushed == 0 {
		t.Errorf("stats %+v", st)
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes and decodes
// back to the same request.
func FuzzDecode(f *testing.F) {
	b, _ := Encode([]prompb.TimeSeries{Series("rlbench_x", map[string]string{"run_id": "r"}, 1, 2)})
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte("not snappy"))
	f.Fuzz(func(t *testing.T, body []byte) {
		wr, err := Decode(body)
		if err != nil {
			return
		}
		again, err := Encode(wr.Timeseries)
		if err != nil {
			t.Fatal(err)
		}
		wr2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded body does not decode: %v", err)
		}
		if len(wr2.Timeseries) != len(wr.Timeseries) {
			t.Fatalf("%d series, then %d", len(wr.Timeseries), len(wr2.Timeseries))
		}
	})
}

// TestPusherFaultWindows: fault_active follows analyze's windows, a
// window shows in the sample after it closed, and an unnamed fault is
// labelled by its action and target.
func TestPusherFaultWindows(t *testing.T) {
	p := NewPusher(PusherOptions{Client: &Client{}, RunID: "r"})
	active := func() map[string]float64 {
		m := map[string]float64{}
		for _, ts := range p.collect(time.Now()) {
			if l := labelsOf(ts); l["__name__"] == metricnames.FaultActive {
				m[l["fault"]] = ts.Samples[0].Value
			}
		}
		return m
	}
	f := func(name, action, target string) {
		p.Fault("s", 1, evidence.Fault{Name: name, Action: action, Target: target})
	}
	f("down", evidence.ActionStop, "rls")
	f("down again", evidence.ActionStop, "rls") // already down: no window of its own
	if got := active(); got["down"] != 1 || len(got) != 1 {
		t.Fatalf("after stop: %v", got)
	}
	f("up", evidence.ActionStart, "rls")
	f("", evidence.ActionExec, "backend")
	if got := active(); got["down"] != 1 || got["exec backend"] != 1 || len(got) != 2 {
		t.Fatalf("after start and exec: %v (both were active during the interval)", got)
	}
	if got := active(); got["down"] != 0 || got["exec backend"] != 0 {
		t.Fatalf("one interval later: %v", got)
	}
}

// TestPusherSeriesAreMetricnamesFamilies: every live series the pusher
// writes (a paced attack, so the pacing error is among them, with a
// response the scenario's classify: rule makes a local_429, and a fault)
// is a live family of metricnames.Families with exactly that family's
// labels (the dashboard's queries are checked against the same list), its
// class a response class or metricnames.ClassNotSent, its quantile one of
// the pacing error's; and every live family is written.
func TestPusherSeriesAreMetricnamesFamilies(t *testing.T) {
	p := NewPusher(PusherOptions{Client: &Client{}, RunID: "r"})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer target.Close()
	cls, err := evidence.NewClassifier([]evidence.ClassRule{{Status: evidence.Range{Min: 503, Max: 503}, Class: "local_429"}})
	if err != nil {
		t.Fatal(err)
	}
	rate, err := attack.ParseRate("500/1s")
	if err != nil {
		t.Fatal(err)
	}
	prog := &attack.Progress{Classifier: cls}
	stop := p.Attack("s", 2, prog)
	p.Fault("s", 2, evidence.Fault{Name: "rls-down", Action: evidence.ActionStop, Target: "rls"})
	var buf strings.Builder
	if _, err := attack.Run(context.Background(), attack.Options{IDs: attack.IDs(5, "m"), Targets: []attack.Target{{Name: "a", URL: target.URL}},
		Rate: rate, Progress: prog}, evidence.NewWriter(&buf)); err != nil {
		t.Fatal(err)
	}
	series := p.collect(time.Now()) // while the attack is the scenario's current one
	stop()
	classes := map[string]bool{metricnames.ClassNotSent: true}
	for c := evidence.Class(0); c < evidence.NumClasses; c++ {
		classes[c.String()] = true
	}
	written := map[string]bool{}
	for _, ts := range series {
		l := labelsOf(ts)
		name := l["__name__"]
		f, ok := metricnames.Lookup(name)
		if !ok || !f.Live {
			t.Errorf("%v: not a live family of metricnames", l)
			continue
		}
		written[name] = true
		var got []string
		for k := range l {
			if k != "__name__" {
				got = append(got, k)
			}
		}
		if want := f.SeriesLabels(name); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: labels %v, metricnames lists %v", name, got, want)
		}
		if l[metricnames.LabelRepeat] != "2" || l[metricnames.LabelScenario] != "s" || l[metricnames.LabelRunID] != "r" {
			t.Errorf("%v: run_id, scenario or repeat wrong", l)
		}
		if c, ok := l[metricnames.LabelClass]; ok && !classes[c] {
			t.Errorf("%v: class %q is neither a response class nor %s", l, c, metricnames.ClassNotSent)
		}
		if q, ok := l[metricnames.LabelQuantile]; ok && !slices.Contains([]string{"0.5", "0.9", "0.99", "1"}, q) {
			t.Errorf("%v: quantile %q", l, q)
		}
		if name == metricnames.RequestsTotal && (l[metricnames.LabelClass] != "local_429" || ts.Samples[0].Value != 5) {
			t.Errorf("%v = %v, want the 5 responses as local_429 by the rule", l, ts.Samples[0].Value)
		}
	}
	for _, f := range metricnames.Families() {
		if f.Live && !written[f.Name] {
			t.Errorf("live family %s not written", f.Name)
		}
	}
}
