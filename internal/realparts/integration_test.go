//go:build integration

package realparts

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// requireParts finds both binaries, skipping when absent unless RLBENCH_REQUIRE_REAL_PARTS=1 (then it fails).
func requireParts(t *testing.T) (redisBin, rlsBin string) {
	t.Helper()
	var err1, err2 error
	redisBin, err1 = FindRedis()
	rlsBin, err2 = FindRLS()
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return redisBin, rlsBin
}

// startParts starts a fresh Redis and an RLS on it, both stopped by PID in t.Cleanup even on failure.
func startParts(t *testing.T, ctx context.Context, o RLSOptions) (*Redis, *RLS) {
	t.Helper()
	redisBin, rlsBin := requireParts(t)
	r, err := StartRedis(ctx, Options{Bin: redisBin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	o.Bin = rlsBin
	o.RedisAddr = r.Addr()
	if o.ConfigDir == "" {
		o.ConfigDir = "testdata/rls-config"
	}
	if o.WorkDir == "" {
		o.WorkDir = t.TempDir()
	}
	s, err := StartRLS(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close(context.Background())
		if t.Failed() {
			t.Logf("RLS log tail:\n%s", logTail(s.LogPath(), 3000))
		}
	})
	return r, s
}

func rlsClient(t *testing.T, addr string) rlsv3.RateLimitServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return rlsv3.NewRateLimitServiceClient(conn)
}

// call sends one ShouldRateLimit for inventory / tenant=<tenant> with a bounded deadline.
func call(c rlsv3.RateLimitServiceClient, tenant string, timeout time.Duration) (*rlsv3.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{
		Domain: "inventory",
		Descriptors: []*rlcommon.RateLimitDescriptor{{
			Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "tenant", Value: tenant}},
		}},
		HitsAddend: 1,
	})
}

// expect checks one decision: overall code and the descriptor's limit_remaining.
func expect(t *testing.T, what string, resp *rlsv3.RateLimitResponse, err error, code rlsv3.RateLimitResponse_Code, remaining uint32) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	st := resp.GetStatuses()
	if resp.GetOverallCode() != code || len(st) != 1 || st[0].GetCode() != code || st[0].GetLimitRemaining() != remaining {
		t.Fatalf("%s: got %v, want %v remaining %d", what, resp, code, remaining)
	}
	if st[0].GetCurrentLimit().GetRequestsPerUnit() != 5 || st[0].GetCurrentLimit().GetUnit() != rlsv3.RateLimitResponse_RateLimit_HOUR {
		t.Fatalf("%s: limit %v, want 5 per HOUR", what, st[0].GetCurrentLimit())
	}
}

// awayFromHourEdge waits (at most ~20 s) when the hour window ends within 20 s, so that a phase's hits share one
// epoch-aligned window (envoyproxy/ratelimit fixed windows, key suffix now/3600*3600).
func awayFromHourEdge(t *testing.T) {
	t.Helper()
	left := 3600 - time.Now().Unix()%3600
	if left < 20 {
		t.Logf("waiting %ds for the next hour window", left)
		time.Sleep(time.Duration(left)*time.Second + 200*time.Millisecond)
	}
}

func randomTenant(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "t" + hex.EncodeToString(b)
}

// pidGone reports whether no process has the pid (kill(pid, 0) gives ESRCH).
func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestIntegrationRealParts(t *testing.T) {
	ctx := context.Background()
	r, s := startParts(t, ctx, RLSOptions{Prometheus: true})
	redisPID, rlsPID := r.PID(), s.PID()
	if redisPID == 0 || rlsPID == 0 {
		t.Fatalf("PIDs redis %d rls %d", redisPID, rlsPID)
	}
	for _, port := range s.ports() {
		if err := VerifyListener(rlsPID, port); err != nil {
			t.Fatal(err)
		}
	}
	if err := VerifyListener(redisPID, r.Port()); err != nil {
		t.Fatal(err)
	}
	c := rlsClient(t, s.GRPCAddr())

	t.Run("concurrent 20 on 5 per hour", func(t *testing.T) {
		awayFromHourEdge(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		counts := map[string]int{}
		var remaining []int
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := call(c, "lab", 10*time.Second)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					counts["error: "+err.Error()]++
					return
				}
				counts[resp.GetOverallCode().String()]++
				if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					remaining = append(remaining, int(resp.GetStatuses()[0].GetLimitRemaining()))
				}
			}()
		}
		wg.Wait()
		if len(counts) != 2 || counts["OK"] != 5 || counts["OVER_LIMIT"] != 15 {
			t.Fatalf("got %v, want OK 5 OVER_LIMIT 15", counts)
		}
		sort.Ints(remaining)
		if fmt.Sprint(remaining) != "[0 1 2 3 4]" {
			t.Fatalf("limit_remaining of the OK calls %v, want each of 0..4 once", remaining)
		}
		// The Prometheus sink (flushed every 1 s) must show the same split.
		want := []string{
			`ratelimit_service_rate_limit_within_limit{domain="inventory",key1="tenant_lab"} 5`,
			`ratelimit_service_rate_limit_over_limit{domain="inventory",key1="tenant_lab"} 15`,
		}
		deadline := time.Now().Add(10 * time.Second)
		var body string
		for time.Now().Before(deadline) {
			body = get(t, s.MetricsURL())
			if strings.Contains(body, want[0]) && strings.Contains(body, want[1]) {
				return
			}
			time.Sleep(200 * time.Millisecond) // polling a 1 s flush, bounded by deadline
		}
		t.Fatalf("metrics at %s never showed %q; last body:\n%s", s.MetricsURL(), want, grepLines(body, "tenant_lab"))
	})

	t.Run("counts persist across RLS restart", func(t *testing.T) {
		awayFromHourEdge(t)
		tenant := randomTenant(t)
		for i, rem := range []uint32{4, 3, 2} {
			resp, err := call(c, tenant, 10*time.Second)
			expect(t, fmt.Sprintf("before restart call %d", i+1), resp, err, rlsv3.RateLimitResponse_OK, rem)
		}
		grpcAddr, httpAddr, oldPID := s.GRPCAddr(), s.HTTPAddr(), s.PID()
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if s.PID() == 0 || s.PID() == oldPID || !pidGone(oldPID) {
			t.Fatalf("after Restart: pid %d (old %d, old gone %v)", s.PID(), oldPID, pidGone(oldPID))
		}
		if s.GRPCAddr() != grpcAddr || s.HTTPAddr() != httpAddr {
			t.Fatalf("Restart moved ports: %s %s -> %s %s", grpcAddr, httpAddr, s.GRPCAddr(), s.HTTPAddr())
		}
		for _, port := range s.ports() {
			if err := VerifyListener(s.PID(), port); err != nil {
				t.Fatal(err)
			}
		}
		for i, rem := range []uint32{1, 0} {
			resp, err := call(c, tenant, 10*time.Second)
			expect(t, fmt.Sprintf("after restart call %d", i+1), resp, err, rlsv3.RateLimitResponse_OK, rem)
		}
		resp, err := call(c, tenant, 10*time.Second)
		expect(t, "after restart call 3", resp, err, rlsv3.RateLimitResponse_OVER_LIMIT, 0)
	})

	t.Run("redis stop then restart", func(t *testing.T) {
		awayFromHourEdge(t)
		oldPID, port := r.PID(), r.Port()
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if r.PID() != 0 || !pidGone(oldPID) {
			t.Fatalf("redis pid %d still present after Stop", oldPID)
		}
		start := time.Now()
		_, err := call(c, "lab", 10*time.Second)
		el := time.Since(start)
		if status.Code(err) != codes.Unknown {
			t.Fatalf("call with Redis down: got %v, want code Unknown", err)
		}
		if el > 2*time.Second {
			t.Fatalf("call with Redis down took %v, want a fast failure", el)
		}
		t.Logf("Redis down: %v after %v", err, el)

		if err := r.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if r.Port() != port || r.PID() == 0 || r.PID() == oldPID {
			t.Fatalf("Redis restart: port %d (was %d), pid %d (was %d)", r.Port(), port, r.PID(), oldPID)
		}
		// The RLS's pool (REDIS_POOL_SIZE=10) still holds connections to the old process: a call drawing one fails
		// fast with Unknown "...EOF" and never reaches Redis, and such calls come interleaved with answered ones.
		// Each decision is therefore retried on Unknown; all retries together are bounded by the pool size.
		stale := 0
		decide := func(what string) (*rlsv3.RateLimitResponse, error) {
			for {
				resp, err := call(c, "lab", 15*time.Second)
				if err == nil || status.Code(err) != codes.Unknown || stale >= 10 {
					return resp, err
				}
				stale++
			}
		}
		// No persistence: tenant=lab (at 20 before the outage) starts again at 1.
		for i, rem := range []uint32{4, 3, 2, 1, 0} {
			what := fmt.Sprintf("after redis restart call %d", i+1)
			resp, err := decide(what)
			expect(t, what, resp, err, rlsv3.RateLimitResponse_OK, rem)
		}
		resp, err := decide("after redis restart call 6")
		expect(t, "after redis restart call 6", resp, err, rlsv3.RateLimitResponse_OVER_LIMIT, 0)
		t.Logf("%d calls failed on stale pool connections after the Redis restart", stale)
	})

	t.Run("stop leaves no process", func(t *testing.T) {
		rlsPID, redisPID := s.PID(), r.PID()
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if !pidGone(rlsPID) || !pidGone(redisPID) || s.PID() != 0 || r.PID() != 0 {
			t.Fatalf("after Stop: rls %d gone %v, redis %d gone %v", rlsPID, pidGone(rlsPID), redisPID, pidGone(redisPID))
		}
		log, err := os.ReadFile(s.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		// Two starts (initial and Restart) each loaded the config, and each SIGTERM was handled gracefully.
		if n := strings.Count(string(log), "Successfully loaded the initial ratelimit configs"); n != 2 {
			t.Fatalf("RLS log shows %d config loads, want 2", n)
		}
		if n := strings.Count(string(log), "shutting down gracefully"); n != 2 {
			t.Fatalf("RLS log shows %d graceful shutdowns, want 2", n)
		}
	})
}

// Restart keeps the port: when a stranger (here this test) has taken it meanwhile, Restart fails with the log
// tail instead of moving, and the stranger's listener is left alone.
func TestIntegrationRedisRestartPortTaken(t *testing.T) {
	redisBin, _ := requireParts(t)
	ctx := context.Background()
	r, err := StartRedis(ctx, Options{Bin: redisBin, StartTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dir := r.Dir()
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", r.Addr())
	if err != nil {
		t.Fatalf("rebinding the stopped Redis port: %v", err)
	}
	defer l.Close()
	err = r.Restart(ctx)
	if err == nil {
		t.Fatal("Restart on a taken port succeeded")
	}
	// Either Redis's bind failed ("Address already in use") or the foreign listener was seen first; both say so.
	if !errors.Is(err, errPortTaken) || r.PID() != 0 {
		t.Fatalf("Restart on a taken port: pid %d, err %v", r.PID(), err)
	}
	if err := VerifyListener(os.Getpid(), r.Port()); err != nil {
		t.Fatalf("the test's own listener was disturbed: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the temporary dir %s: %v", dir, err)
	}
}

// An RLS that cannot start (Redis address refused) fails within the bound and returns its log tail; it leaves no
// process behind.
func TestIntegrationRLSStartFailure(t *testing.T) {
	_, rlsBin := requireParts(t)
	ports, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	start := time.Now()
	s, err := StartRLS(context.Background(), RLSOptions{
		Bin: rlsBin, ConfigDir: "testdata/rls-config", RedisAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		WorkDir: work, StartTimeout: 5 * time.Second, StopGrace: time.Second,
	})
	if err == nil {
		_ = s.Close(context.Background())
		t.Fatal("StartRLS with no Redis succeeded")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("failure took %v", el)
	}
	if !strings.Contains(err.Error(), "rls.log (tail)") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error lacks the log tail: %v", err)
	}
	t.Logf("start failure after %v: %.300s", time.Since(start), err)
}

func get(t *testing.T, url string) string {
	t.Helper()
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// StatsdAddr and LogFormat "json" reach the RLS: a decision shows up as a statsd counter line on a TCP listener of
// this test (the gostats sink is TCP by default) and the log carries the logrus JSON envelope.
func TestIntegrationStatsdAndJSONLog(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lines := make(chan string, 1024)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	_, s := startParts(t, context.Background(), RLSOptions{StatsdAddr: l.Addr().String(), LogFormat: "json"})
	c := rlsClient(t, s.GRPCAddr())
	tenant := randomTenant(t)
	resp, err := call(c, tenant, 10*time.Second)
	expect(t, "statsd run call", resp, err, rlsv3.RateLimitResponse_OK, 4)
	// Value-less rule: the stat key drops the value (shared/reference/envoy-and-rls-observables.md §5).
	want := "ratelimit.service.rate_limit.inventory.tenant.total_hits:1|c"
	deadline := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case line := <-lines:
			found = line == want
		case <-deadline:
			t.Fatalf("no statsd line %q within 10 s", want)
		}
	}
	log, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"@message":"cache key: inventory_tenant_`+tenant+`_`) {
		t.Fatalf("JSON log lacks the decision line for %s:\n%s", tenant, logTail(s.LogPath(), 2000))
	}
}
