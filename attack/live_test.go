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

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// TestProgressLive: the live counters count in flight while the target
// holds requests, then every response by target and class, and end with
// nothing in flight.
func TestProgressLive(t *testing.T) {
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
	prog.CountLive(nil)
	if l := prog.Live(); len(l.Targets) != 0 || l.Pacing.N != 0 {
		t.Fatalf("fresh live %+v", l)
	}
	done := make(chan error)
	go func() {
		_, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(10, "l"),
			Targets: []Target{{Name: "a", URL: srv.URL}, {Name: "b", URL: srv.URL}}, Concurrency: 10, Progress: prog})
		done <- err
	}()
	// The first four answered, the other six held by the server: in flight.
	inFlight := func(l LiveSnapshot) (n int64) {
		for _, tl := range l.Targets {
			n += tl.InFlight
		}
		return n
	}
	for {
		l := prog.Live()
		if prog.Snapshot().Recorded == 4 && inFlight(l) == 6 {
			break
		}
		if n := inFlight(l); n > 10 || n < 0 {
			t.Fatalf("in flight %d of 10", n)
		}
		time.Sleep(time.Millisecond)
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	l := prog.Live()
	if len(l.Targets) != 2 || l.Targets[0].Name != "a" || l.Targets[1].Name != "b" {
		t.Fatalf("targets %+v", l.Targets)
	}
	var admitted, global int64
	for _, tl := range l.Targets {
		if tl.InFlight != 0 || tl.NotSent != 0 {
			t.Errorf("%s: in flight %d, not sent %d at the end", tl.Name, tl.InFlight, tl.NotSent)
		}
		if tl.Classes[evidence.ClassAdmitted]+tl.Classes[evidence.ClassGlobal429] != 5 {
			t.Errorf("%s: classes %v, want 5 responses (even split)", tl.Name, tl.Classes)
		}
		admitted += tl.Classes[evidence.ClassAdmitted]
		global += tl.Classes[evidence.ClassGlobal429]
	}
	if admitted != 4 || global != 6 {
		t.Errorf("admitted %d global_429 %d, want 4 and 6", admitted, global)
	}
	if l.Pacing.N != 0 {
		t.Errorf("pacing %+v for an unpaced attack", l.Pacing)
	}
}

// TestProgressLivePacing: a paced attack's live pacing error counts every
// send; without CountLive nothing is counted.
func TestProgressLivePacing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	for _, on := range []bool{true, false} {
		prog := new(Progress)
		if on {
			prog.CountLive(nil)
		}
		if _, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(5, "p"), Targets: []Target{{URL: srv.URL}},
			Rate: vegeta.Rate{Freq: 1000, Per: time.Second}, Progress: prog}); err != nil {
			t.Fatal(err)
		}
		l := prog.Live()
		if on && (l.Pacing.N != 5 || len(l.Targets) != 1 || l.Targets[0].Classes[evidence.ClassAdmitted] != 5) {
			t.Errorf("live %+v, want 5 paced sends, 5 admitted", l)
		}
		if !on && (l.Pacing.N != 0 || len(l.Targets) != 0) {
			t.Errorf("live without CountLive: %+v", l)
		}
	}
}
