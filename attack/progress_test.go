package attack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// TestProgressPerTarget: the per-target counters (what the event stream
// and live metrics read) count requests in flight while the server holds
// them, and end with each target's responses per class and paced sends'
// pacing error.
func TestProgressPerTarget(t *testing.T) {
	release := make(chan struct{})
	var held atomic.Int32
	handler := func(code int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			held.Add(1)
			<-release
			w.WriteHeader(code)
			io.WriteString(w, body)
		})
	}
	a := httptest.NewServer(handler(http.StatusOK, "ok"))
	defer a.Close()
	b := httptest.NewServer(handler(http.StatusTooManyRequests, "local_rate_limited"))
	defer b.Close()
	prog := new(Progress)
	done := make(chan *evidence.AttackSummary)
	go func() {
		sum, _, _ := runToLines(t, context.Background(), Options{IDs: IDs(8, "t"), Targets: []Target{{Name: "a", URL: a.URL}, {Name: "b", URL: b.URL}},
			Split: Split{Mode: SplitEven}, Concurrency: 4, Progress: prog})
		done <- sum
	}()
	// The server holds every request: once four arrived and the client
	// counted four begun, four are in flight and none recorded.
	for held.Load() < 4 || prog.Snapshot().InFlight < 4 {
		time.Sleep(time.Millisecond)
	}
	mid := prog.Snapshot()
	if mid.InFlight != 4 || mid.Recorded != 0 || len(mid.Targets) != 2 || mid.Targets[0].InFlight+mid.Targets[1].InFlight != 4 {
		t.Fatalf("mid snapshot %+v", mid)
	}
	close(release)
	sum := <-done
	end := prog.Snapshot()
	if sum.Sent != 8 || end.InFlight != 0 || len(end.Targets) != 2 {
		t.Fatalf("end snapshot %+v", end)
	}
	want := map[string]evidence.Class{"a": evidence.ClassAdmitted, "b": evidence.ClassLocal429}
	for _, tp := range end.Targets {
		cl, ok := want[tp.Name]
		if !ok || tp.Sent != 4 || tp.Recorded != 4 || tp.InFlight != 0 || tp.Classes[cl] != 4 || tp.PerSec <= 0 {
			t.Errorf("target %+v: want 4 sent, 4 %s", tp, cl)
		}
	}
	if end.PacingErrorNs.N != 0 {
		t.Errorf("unpaced attack has pacing error %+v", end.PacingErrorNs)
	}
}

// TestProgressPacingAndRules: a paced attack's snapshot carries the
// pacing error of every send, and a Classifier's rules classify the
// per-target counts.
func TestProgressPacingAndRules(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<center>nginx</center>")
	}))
	defer srv.Close()
	cl, err := evidence.NewClassifier([]evidence.ClassRule{{Status: evidence.Range{Min: 503, Max: 503}, Body: "nginx", Class: "local_429"}})
	if err != nil {
		t.Fatal(err)
	}
	prog := &Progress{Classifier: cl}
	rate, err := ParseRate("200/1s")
	if err != nil {
		t.Fatal(err)
	}
	sum, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(6, "p"), Targets: []Target{{Name: "n", URL: srv.URL}}, Rate: rate, Progress: prog})
	if err != nil || sum.Sent != 6 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	end := prog.Snapshot()
	if end.PacingErrorNs.N != 6 || len(end.Targets) != 1 || end.Targets[0].Classes[evidence.ClassLocal429] != 6 {
		t.Fatalf("end snapshot %+v", end)
	}
}

// TestProgressInFlightAndClasses: with two targets on one server that
// answers four requests and holds the other six, the snapshot counts six
// in flight once four are recorded; at the end every response is counted
// by target and class (an even split: five per target; the held ones a
// global_429 by Envoy's x-envoy-ratelimited mark) and nothing is in flight.
func TestProgressInFlightAndClasses(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > 4 {
			<-release
			w.Header().Set("x-envoy-ratelimited", "true")
			w.WriteHeader(http.StatusTooManyRequests)
		}
		io.WriteString(w, "x")
	}))
	defer srv.Close()
	defer free() // a failing test frees the held handlers before srv.Close waits for them
	prog := new(Progress)
	if s := prog.Snapshot(); len(s.Targets) != 0 || s.InFlight != 0 || s.PacingErrorNs.N != 0 {
		t.Fatalf("fresh snapshot %+v", s)
	}
	done := make(chan error)
	go func() {
		_, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(10, "l"),
			Targets: []Target{{Name: "a", URL: srv.URL}, {Name: "b", URL: srv.URL}}, Concurrency: 10, Progress: prog})
		done <- err
	}()
	// The first four answered, the other six held by the server: in flight.
	for {
		s := prog.Snapshot()
		if s.Recorded == 4 && s.InFlight == 6 {
			break
		}
		if s.InFlight > 10 || s.InFlight < 0 {
			t.Fatalf("in flight %d of 10", s.InFlight)
		}
		time.Sleep(time.Millisecond)
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := prog.Snapshot()
	if len(s.Targets) != 2 || s.Targets[0].Name != "a" || s.Targets[1].Name != "b" || s.InFlight != 0 {
		t.Fatalf("end snapshot %+v", s)
	}
	var admitted, global int
	for _, tp := range s.Targets {
		if tp.InFlight != 0 || tp.NotSent != 0 {
			t.Errorf("%s: in flight %d, not sent %d at the end", tp.Name, tp.InFlight, tp.NotSent)
		}
		if tp.Classes[evidence.ClassAdmitted]+tp.Classes[evidence.ClassGlobal429] != 5 {
			t.Errorf("%s: classes %v, want 5 responses (even split)", tp.Name, tp.Classes)
		}
		admitted += tp.Classes[evidence.ClassAdmitted]
		global += tp.Classes[evidence.ClassGlobal429]
	}
	if admitted != 4 || global != 6 {
		t.Errorf("admitted %d global_429 %d, want 4 and 6", admitted, global)
	}
}
