package attack

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// needRelief skips where there is no relief dispatcher (not Linux, or a
// single P).
func needRelief(t *testing.T) {
	t.Helper()
	al, err := newAlarm()
	if err != nil || !preciseAvailable() {
		t.Skip("no relief dispatcher here (Linux with GOMAXPROCS >= 2 only)")
	}
	al.close()
}

// idServer counts the IDs it receives and closes got once it receives
// the ID set in want.
type idServer struct {
	mu   sync.Mutex
	seen map[string]int
	want string
	got  chan struct{}
}

func newIDServer(t *testing.T) (*idServer, string) {
	s := &idServer{seen: map[string]int{}, got: make(chan struct{})}
	url := newLocalServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(evidence.IDHeader)
		s.mu.Lock()
		s.seen[id]++
		if id == s.want {
			close(s.got)
		}
		s.mu.Unlock()
	}))
	return s, url
}

// TestReliefSendsWhileDispatcherStalls: the dispatcher is held before the
// first ID k0 >= 20 it waits for (as a wake-up late by milliseconds would
// hold it) until the server has received ID k0+19; the relief sends
// k0..k0+19 meanwhile, before the dispatcher goes on, each ID still once
// on the wire and once in the evidence, and evidence.AttackPacing.ReliefSends counts
// them.
func TestReliefSendsWhileDispatcherStalls(t *testing.T) {
	needRelief(t)
	const n, stallAt, more = 120, 20, 20
	ids := IDs(n, "r")
	s, url := newIDServer(t)
	var released time.Time
	k0 := -1
	opts := Options{IDs: ids, Targets: []Target{{URL: url}}, Rate: vegeta.Rate{Freq: 1000, Per: time.Second}}
	opts.testHold = func(k int) {
		if k < stallAt || k0 >= 0 || k+more > n {
			return
		}
		k0 = k
		s.mu.Lock()
		s.want = ids[k+more-1]
		s.mu.Unlock()
		select {
		case <-s.got:
		case <-time.After(10 * time.Second):
			t.Error("the relief did not send while the dispatcher was held")
		}
		released = time.Now()
	}
	sum, err, lines := runToLines(t, context.Background(), opts)
	if err != nil || !sum.Complete || len(lines) != n || sum.Resent != 0 {
		t.Fatalf("err %v summary %+v, %d lines", err, sum, len(lines))
	}
	if k0 < 0 {
		t.Fatal("the dispatcher never waited for an ID from 20 on")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := map[string]int64{}
	for _, l := range lines {
		if l.Code != 200 || s.seen[l.ID] != 1 {
			t.Errorf("%s: code %d, received %d times", l.ID, l.Code, s.seen[l.ID])
		}
		byID[l.ID] = l.SentNs
	}
	if len(byID) != n {
		t.Fatalf("%d distinct IDs in %d lines", len(byID), n)
	}
	// While the dispatcher was held, the relief sent the IDs after it.
	for k := k0; k < k0+more; k++ {
		if sent := time.Unix(0, byID[ids[k]]); !sent.Before(released) {
			t.Errorf("%s sent at %v, after the dispatcher was released (%v)", ids[k], sent, released)
		}
	}
	if pc := sum.Pacing; pc == nil || pc.ReliefSends < more || pc.DirectSends < pc.ReliefSends {
		t.Fatalf("pacing %+v: want at least %d relief sends", sum.Pacing, more)
	}
}

// TestReliefWithEndingConnections: the dispatcher stalls for a while on
// every tenth ID while the server ends its connections after two
// requests (closes announced and silent, unsolicited 408s): the relief
// meets parked workers whose connection ended and writes that leave no
// byte, and hands such IDs back. Every ID is still recorded once, received
// at most once, and never answered by the 408.
func TestReliefWithEndingConnections(t *testing.T) {
	needRelief(t)
	s := &endingServer{seen: map[string]int{}}
	host := serveRaw(t, s.handle)
	const n = 300
	opts := Options{IDs: IDs(n, "e"), Targets: []Target{{URL: "http://" + host}}, Rate: vegeta.Rate{Freq: 3000, Per: time.Second}}
	opts.testHold = func(k int) {
		if k%10 == 5 {
			// A stall of a few due times: the relief's grace is 200 µs.
			t0 := time.Now()
			for time.Since(t0) < 2*time.Millisecond {
			}
		}
	}
	sum, err, lines := runToLines(t, context.Background(), opts)
	if err != nil || len(lines) != n || sum.Resent != 0 {
		t.Fatalf("err %v summary %+v, %d lines", err, sum, len(lines))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	once := map[string]bool{}
	for _, l := range lines {
		if once[l.ID] {
			t.Errorf("%s recorded twice", l.ID)
		}
		once[l.ID] = true
		if s.seen[l.ID] > 1 || l.Code == 408 || (l.Code == 200 && s.seen[l.ID] != 1) {
			t.Errorf("%s: code %d, received %d times", l.ID, l.Code, s.seen[l.ID])
		}
	}
	if sum.Pacing == nil || sum.Pacing.ReliefSends == 0 {
		t.Fatalf("pacing %+v: the relief never sent", sum.Pacing)
	}
}

// TestReliefCancelledWhileHeld: the context ends while the dispatcher is
// held and the relief sends; each ID the server received is recorded
// once, none is received twice, with one connection allowed.
func TestReliefCancelledWhileHeld(t *testing.T) {
	needRelief(t)
	for _, maxConns := range []int{0, 1} {
		const n = 200
		ids := IDs(n, "c")
		s, url := newIDServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		opts := Options{IDs: ids, Targets: []Target{{URL: url}}, Rate: vegeta.Rate{Freq: 2000, Per: time.Second}, MaxConnections: maxConns}
		held := false
		opts.testHold = func(k int) {
			if k < 30 || held {
				return
			}
			held = true
			s.mu.Lock()
			s.want = ids[k+9]
			s.mu.Unlock()
			select {
			case <-s.got:
			case <-time.After(10 * time.Second):
				t.Error("the relief did not send while held")
			}
			cancel()
		}
		_, _, lines := runToLines(t, ctx, opts)
		cancel()
		s.mu.Lock()
		once := map[string]bool{}
		for _, l := range lines {
			if once[l.ID] {
				t.Errorf("max %d: %s recorded twice", maxConns, l.ID)
			}
			once[l.ID] = true
		}
		for id, c := range s.seen {
			if c != 1 || !once[id] {
				t.Errorf("max %d: %s received %d times, recorded %v", maxConns, id, c, once[id])
			}
		}
		s.mu.Unlock()
	}
}

// TestReliefFlowsAndCountsSplit: two paced flows, one split by counts over
// two targets (the second target's IDs come after all of the first's, so
// its parked connections sit idle until then), each dispatcher stalled
// for a while on every seventh ID: every ID is received once and recorded
// once, and the reliefs sent some.
func TestReliefFlowsAndCountsSplit(t *testing.T) {
	needRelief(t)
	s1, url1 := newIDServer(t)
	s2, url2 := newIDServer(t)
	opts := Options{Targets: []Target{{Name: "a", URL: url1}, {Name: "b", URL: url2}}, Flows: []Flow{
		{Name: "A", IDs: IDs(150, "fa"), Rate: vegeta.Rate{Freq: 3000, Per: time.Second}, Split: Split{Mode: SplitCounts, Values: []int{100, 50}}},
		{Name: "B", IDs: IDs(90, "fb"), Rate: vegeta.Rate{Freq: 2000, Per: time.Second}, Split: Split{Mode: SplitEven}},
	}}
	opts.testHold = func(k int) {
		if k%7 == 3 {
			t0 := time.Now()
			for time.Since(t0) < time.Millisecond { // a late wake-up: the relief's grace is 200 µs
			}
		}
	}
	sum, err, lines := runToLines(t, context.Background(), opts)
	if err != nil || !sum.Complete || len(lines) != 240 || sum.Resent != 0 {
		t.Fatalf("err %v summary %+v, %d lines", err, sum, len(lines))
	}
	s1.mu.Lock()
	defer s1.mu.Unlock()
	s2.mu.Lock()
	defer s2.mu.Unlock()
	once := map[string]bool{}
	for _, l := range lines {
		if once[l.ID] {
			t.Errorf("%s recorded twice", l.ID)
		}
		once[l.ID] = true
		if n := s1.seen[l.ID] + s2.seen[l.ID]; l.Code != 200 || n != 1 {
			t.Errorf("%s (flow %s, target %s): code %d, received %d times", l.ID, l.Flow, l.Target, l.Code, n)
		}
	}
	if len(s1.seen)+len(s2.seen) != 240 {
		t.Fatalf("the servers received %d distinct IDs, want 240", len(s1.seen)+len(s2.seen))
	}
	if sum.Pacing == nil || sum.Pacing.ReliefSends == 0 {
		t.Fatalf("pacing %+v: the reliefs never sent", sum.Pacing)
	}
}

// TestCountsSplitRetiresBusyWorker: a counts split warms only the first
// target's connections, and when the second target's first ID is due every
// one of them is busy (the first server holds its answers), so no parked
// worker can give up its place yet. Once the answers are released, the
// dispatcher must retire one of them and send the second target's IDs: it
// used to wait for a signal that parking again never gives, until the
// context ended (found under load by TestReliefFlowsAndCountsSplit).
func TestCountsSplitRetiresBusyWorker(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	held := 0
	slow := newLocalServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		held++
		mu.Unlock()
		<-release
	}))
	s2, url2 := newIDServer(t)
	const first = 16 // the bound at 1000/s: max(16, rate x 10 ms); all warmed on target a
	opts := Options{Targets: []Target{{Name: "a", URL: slow}, {Name: "b", URL: url2}}, IDs: IDs(first+4, "c"),
		Rate: vegeta.Rate{Freq: 1000, Per: time.Second}, Split: Split{Mode: SplitCounts, Values: []int{first, 4}}}
	var once sync.Once
	opts.testWait = func(k int) {
		if k == first {
			once.Do(func() { close(release) })
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sum, err, lines := runToLines(t, ctx, opts)
	once.Do(func() { close(release) })
	if err != nil || !sum.Complete || len(lines) != first+4 {
		t.Fatalf("err %v summary %+v, %d lines", err, sum, len(lines))
	}
	s2.mu.Lock()
	defer s2.mu.Unlock()
	if len(s2.seen) != 4 {
		t.Fatalf("target b received %d IDs, want 4", len(s2.seen))
	}
	if pc := sum.Pacing; pc == nil || pc.WarmConnections != first {
		t.Fatalf("pacing %+v: want %d warm connections (all on target a)", sum.Pacing, first)
	}
}
