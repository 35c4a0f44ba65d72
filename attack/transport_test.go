package attack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/evidence"
)

// killingBackend answers the first request on each connection with 200 and,
// on every later request of a kept-alive connection, reads the request and
// then closes the connection without answering. That is the case in which
// net/http silently re-sends a replayable request on a new connection
// (transport.go shouldRetryRequest: reused conn + errServerClosedIdle or
// transportReadFromServerError).
type killingBackend struct {
	srv    *httptest.Server
	header string
	mu     sync.Mutex
	perCon map[string]int      // remote addr -> requests seen
	seen   map[string]int      // id -> times received
	killed map[string]struct{} // ids whose connection was killed
}

func newKillingBackend(t *testing.T, header string) *killingBackend {
	kb := &killingBackend{header: header, perCon: map[string]int{}, seen: map[string]int{}, killed: map[string]struct{}{}}
	kb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(kb.header)
		kb.mu.Lock()
		kb.perCon[r.RemoteAddr]++
		nth := kb.perCon[r.RemoteAddr]
		kb.seen[id]++
		if nth > 1 {
			kb.killed[id] = struct{}{}
		}
		kb.mu.Unlock()
		if nth == 1 {
			w.WriteHeader(http.StatusOK)
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(kb.srv.Close)
	return kb
}

func (kb *killingBackend) counts() (seen map[string]int, killed map[string]struct{}) {
	kb.mu.Lock()
	defer kb.mu.Unlock()
	seen = make(map[string]int, len(kb.seen))
	for k, v := range kb.seen {
		seen[k] = v
	}
	killed = make(map[string]struct{}, len(kb.killed))
	for k := range kb.killed {
		killed[k] = struct{}{}
	}
	return seen, killed
}

// TestBareVegetaResends is the control: with vegeta's default client the
// killing backend receives some GET twice. If this stops failing in a new
// Go release the no-resend test below no longer exercises the retry path.
func TestBareVegetaResends(t *testing.T) {
	kb := newKillingBackend(t, "X-Id")
	ids := IDs(10, "bare")
	var next atomic.Int64
	tr := func(tgt *vegeta.Target) error {
		i := next.Add(1) - 1
		if i >= int64(len(ids)) {
			return vegeta.ErrNoTargets
		}
		*tgt = vegeta.Target{Method: "GET", URL: kb.srv.URL + "/", Header: http.Header{"X-Id": {ids[i]}}}
		return nil
	}
	atk := vegeta.NewAttacker(vegeta.Workers(1), vegeta.MaxWorkers(1))
	for range atk.Attack(tr, vegeta.Rate{}, 0, "") {
	}
	seen, _ := kb.counts()
	twice := 0
	for _, c := range seen {
		if c > 1 {
			twice++
		}
	}
	if twice == 0 {
		t.Fatalf("bare vegeta re-sent nothing (seen %v): the killing backend does not trigger net/http's retry", seen)
	}
	t.Logf("bare vegeta: %d of %d ids received twice", twice, len(ids))
}

// TestRunNeverResends proves the at-most-once guarantee against the killing
// backend, for GET (replayable by default) and HEAD, with keep-alives on.
func TestRunNeverResends(t *testing.T) {
	for _, method := range []string{"GET", "HEAD", "OPTIONS"} {
		t.Run(method, func(t *testing.T) {
			kb := newKillingBackend(t, evidence.IDHeader)
			ids := IDs(20, "once")
			sum, err, lines := runToLines(t, context.Background(), Options{
				IDs: ids, Targets: []Target{{Name: "k", URL: kb.srv.URL}}, Method: method, Concurrency: 1,
			})
			if err != nil || !sum.Complete || len(lines) != len(ids) {
				t.Fatalf("summary %+v err %v lines %d", sum, err, len(lines))
			}
			seen, killed := kb.counts()
			for _, id := range ids {
				if seen[id] != 1 {
					t.Errorf("%s received %d times", id, seen[id])
				}
			}
			if len(killed) == 0 {
				t.Fatal("no connection was killed: the test did not exercise reuse")
			}
			zero := 0
			for _, l := range lines {
				_, wasKilled := killed[l.ID]
				if l.NotSent {
					t.Errorf("%s: a request written to a connection is not \"not sent\": %+v", l.ID, l)
				}
				if wasKilled != (l.Code == 0) {
					t.Errorf("%s: code %d (error %q), killed=%v", l.ID, l.Code, l.Error, wasKilled)
				}
				if l.Code == 0 {
					zero++
					if l.Error == "" {
						t.Errorf("%s: code 0 without error", l.ID)
					}
				}
			}
			if sum.Resent != 0 || sum.CodesByTarget["k"]["0"] != zero || sum.CodesByTarget["k"]["200"] != len(ids)-zero {
				t.Errorf("summary codes %v resent %d (zero=%d)", sum.CodesByTarget, sum.Resent, zero)
			}
			t.Logf("%s: %d of %d requests hit a killed keep-alive connection, none re-sent", method, zero, len(ids))
		})
	}
}

// TestResendGuardDetects makes the engine re-send like net/http's Transport
// (testResend), and checks that the write guard reports every re-sent ID.
func TestResendGuardDetects(t *testing.T) {
	kb := newKillingBackend(t, evidence.IDHeader)
	ids := IDs(10, "guard")
	sum, err, lines := runToLines(t, context.Background(), Options{
		IDs: ids, Targets: []Target{{Name: "k", URL: kb.srv.URL}}, Concurrency: 1, testResend: true,
	})
	if err != nil || len(lines) != len(ids) {
		t.Fatalf("summary %+v err %v", sum, err)
	}
	seen, _ := kb.counts()
	twice := 0
	for _, l := range lines {
		flagged := strings.Contains(l.Error, "this request was written 2 times")
		if (seen[l.ID] == 2) != flagged {
			t.Errorf("%s: received %d times, error %q", l.ID, seen[l.ID], l.Error)
		}
		if seen[l.ID] == 2 {
			twice++
		}
	}
	if twice == 0 || sum.Resent != twice {
		t.Fatalf("re-sent %d, summary resent %d", twice, sum.Resent)
	}
}
