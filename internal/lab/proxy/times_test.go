package proxy

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// tickClock is a proxy Clock whose every reading is 1 µs after the
// previous one, so that the times a request passes through are strictly
// ordered without depending on the host's timer resolution; its AfterFunc
// is the real timer (these tests arm none).
type tickClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTickClock() *tickClock { return &tickClock{t: time.Unix(1796031180, 0)} }

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Microsecond)
	return c.t
}

func (c *tickClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// proxyTimes flushes p's access log and parses it as analyze does
// (evidence/envoyrec.ParseAccessLog), keyed by x-rlbench-id.
func proxyTimes(t *testing.T, p *Proxy, alog *syncBuf) map[string]envoyrec.AccessLogEntry {
	t.Helper()
	must(t, p.FlushAccessLog() == nil, "flush")
	es, err := envoyrec.ParseAccessLog(bytes.NewReader(alog.Bytes()), "access.log")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]envoyrec.AccessLogEntry{}
	for _, e := range es {
		out[e.RlbenchID] = e
	}
	return out
}

// TestAccessLogLocalTimes: with a local token bucket of 3 tokens, the
// admitted requests log start_ns <= local_ns <= upstream_start_ns and the
// rejected ones local_ns without upstream_start_ns; no line has RLS times.
// The logged local_ns is the bucket's own time: after the last request the
// default bucket's refill time is the last line's local_ns.
func TestAccessLogLocalTimes(t *testing.T) {
	be := startBackend(t)
	var alog syncBuf
	p := startProxy(t, Config{Name: "proxy-a", Upstream: be.URL(), AccessLog: &alog, Clock: newTickClock(), Local: &LocalRateLimit{
		MaxTokens: 3, FillInterval: Duration(time.Hour), FilterEnabled: pct(100), FilterEnforced: pct(100)}})
	ids := []string{"l-1", "l-2", "l-3", "l-4", "l-5"}
	for _, id := range ids {
		do(t, "GET", p.URL()+"/r", map[string]string{"X-Rlbench-Id": id})
	}
	log := proxyTimes(t, p, &alog)
	must(t, len(log) == len(ids), "%d lines, want %d", len(log), len(ids))
	var prevLocal int64
	for i, id := range ids {
		e := log[id]
		must(t, e.StartNs > 0 && e.StartNs < e.LocalNs, "%s: start_ns %d, local_ns %d", id, e.StartNs, e.LocalNs)
		must(t, e.LocalNs > prevLocal, "%s: local_ns %d not after the previous request's %d", id, e.LocalNs, prevLocal)
		prevLocal = e.LocalNs
		must(t, e.RLSStartNs == 0 && e.RLSEndNs == 0, "%s: RLS times without a rate limit filter: %+v", id, e)
		if i < 3 {
			must(t, e.Code == 200 && e.UpstreamStartNs > e.LocalNs, "%s admitted: code %d, local_ns %d, upstream_start_ns %d", id, e.Code, e.LocalNs, e.UpstreamStartNs)
		} else {
			must(t, e.Code == 429 && e.UpstreamStartNs == 0, "%s rejected: code %d, upstream_start_ns %d", id, e.Code, e.UpstreamStartNs)
		}
	}
	p.limiter.def.mu.Lock()
	last := p.limiter.def.last.UnixNano()
	p.limiter.def.mu.Unlock()
	must(t, last == prevLocal, "the bucket refilled to %d, the log says local_ns %d", last, prevLocal)
}

// TestAccessLogRLSTimes: a request that called the RLS logs rls_start_ns <
// rls_end_ns after its start_ns; an OK (or a failed call that fails open)
// is then forwarded after rls_end_ns, an OVER_LIMIT and a failed call with
// failure_mode_deny are not forwarded; a connect failure upstream logs no
// upstream_start_ns; no line has local_ns.
func TestAccessLogRLSTimes(t *testing.T) {
	be := startBackend(t)
	_, rls := startFakeRLS(t)
	var alog syncBuf
	open := startProxy(t, Config{Name: "open", Upstream: be.URL(), AccessLog: &alog, Clock: newTickClock(), Global: globalCfg(rls, false, time.Minute)})
	deny := startProxy(t, Config{Name: "deny", Upstream: be.URL(), AccessLog: &alog, Clock: newTickClock(), Global: globalCfg(rls, true, time.Minute)})
	dead := startProxy(t, Config{Name: "dead", Upstream: "http://" + deadAddr(t), AccessLog: &alog, Clock: newTickClock(), Global: globalCfg(rls, false, time.Minute)})
	cases := []struct {
		p       *Proxy
		id      string
		mode    string
		code    int
		forward bool
	}{
		{open, "ok", "ok", 200, true},
		{open, "over", "over", 429, false},
		{open, "fail-open", "error", 200, true},
		{deny, "fail-deny", "error", 500, false},
		{dead, "uf", "ok", 503, false},
	}
	for _, c := range cases {
		r := do(t, "GET", c.p.URL()+"/r", map[string]string{"X-Rlbench-Id": c.id, "X-Mode": c.mode})
		must(t, r.code == c.code, "%s: code %d, want %d", c.id, r.code, c.code)
	}
	log := proxyTimes(t, open, &alog)
	for id, e := range proxyTimes(t, deny, &alog) {
		log[id] = e
	}
	for id, e := range proxyTimes(t, dead, &alog) {
		log[id] = e
	}
	for _, c := range cases {
		e, ok := log[c.id]
		must(t, ok, "%s: no access log line", c.id)
		must(t, e.StartNs > 0 && e.StartNs < e.RLSStartNs && e.RLSStartNs < e.RLSEndNs, "%s: start_ns %d, rls_start_ns %d, rls_end_ns %d", c.id, e.StartNs, e.RLSStartNs, e.RLSEndNs)
		must(t, e.LocalNs == 0, "%s: local_ns %d without a local filter", c.id, e.LocalNs)
		if c.forward {
			must(t, e.UpstreamStartNs > e.RLSEndNs, "%s: upstream_start_ns %d, rls_end_ns %d", c.id, e.UpstreamStartNs, e.RLSEndNs)
		} else {
			must(t, e.UpstreamStartNs == 0, "%s: not forwarded, yet upstream_start_ns %d", c.id, e.UpstreamStartNs)
		}
	}
}

// stallClock is a tickClock that holds every other reader for a
// millisecond after its reading, as a loaded host preempts a request
// between reading the time and deciding it (a fault injected, not a wait
// for anything).
type stallClock struct {
	tickClock
	n atomic.Int64
}

func (c *stallClock) Now() time.Time {
	t := c.tickClock.Now()
	if c.n.Add(1)%2 == 0 {
		time.Sleep(time.Millisecond)
	}
	return t
}

// TestLocalTimesInDecisionOrder: with many concurrent requests at a bucket
// that never refills during the test, the admitted ones are exactly the
// first max_tokens by the logged local_ns, however the goroutines were
// scheduled between reading the clock and taking the bucket: a model
// judging by the logged times sees the tokens taken in the order they
// were.
func TestLocalTimesInDecisionOrder(t *testing.T) {
	be := startBackend(t)
	var alog syncBuf
	clock := &stallClock{tickClock: tickClock{t: time.Unix(1796031180, 0)}}
	const tokens, n = 8, 64
	p := startProxy(t, Config{Name: "proxy-a", Upstream: be.URL(), AccessLog: &alog, Clock: clock, Local: &LocalRateLimit{
		MaxTokens: tokens, FillInterval: Duration(time.Hour), FilterEnabled: pct(100), FilterEnforced: pct(100)}})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(t, "GET", p.URL()+"/r", map[string]string{"X-Rlbench-Id": fmt.Sprintf("o-%02d", i)})
		}()
	}
	wg.Wait()
	log := proxyTimes(t, p, &alog)
	must(t, len(log) == n, "%d lines, want %d", len(log), n)
	es := slices.SortedFunc(maps.Values(log), func(a, b envoyrec.AccessLogEntry) int { return cmp.Compare(a.LocalNs, b.LocalNs) })
	for i, e := range es {
		if admitted := e.Code == 200; admitted != (i < tokens) {
			t.Errorf("%s, %d-th by local_ns (%d): code %d; want the first %d by local_ns admitted", e.RlbenchID, i+1, e.LocalNs, e.Code, tokens)
		}
	}
}
