package rls

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/testfix"

	commonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/rlsconfig"
)

// base is 2026-11-30T09:00:00Z, an hour boundary (1796029200 % 3600 == 0),
// the window of the observed runs (key inventory_tenant_lab_1796029200).
const base = int64(1796029200)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

type syncBuffer = testfix.SyncBuffer

func decisions(t *testing.T, log string) []evidence.Decision {
	t.Helper()
	var out []evidence.Decision
	err := evidence.ReadLines(strings.NewReader(log), "decisions", func(_ int, d *evidence.Decision) error {
		out = append(out, *d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func loadConfigs(t testing.TB, files ...string) []*rlsconfig.Config {
	t.Helper()
	var cfgs []*rlsconfig.Config
	for _, f := range files {
		c, err := rlsconfig.ParseFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	return cfgs
}

type lab struct {
	srv  *Server
	clk  *clock
	log  *syncBuffer
	conn *grpc.ClientConn
	cli  pb.RateLimitServiceClient
}

func startLab(t *testing.T, opts Options) *lab {
	t.Helper()
	l := &lab{clk: &clock{t: time.Unix(base+2549, 0)}, log: &syncBuffer{}}
	if opts.Configs == nil {
		opts.Configs = loadConfigs(t, "inventory.yaml", "rls_local_config.yaml")
	}
	if opts.Now == nil {
		opts.Now = l.clk.Now
	}
	if opts.DecisionLog == nil && opts.Decisions == nil {
		opts.DecisionLog = l.log
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	l.srv = srv
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") || strings.HasSuffix(srv.Addr(), ":0") {
		t.Fatalf("addr %q", srv.Addr())
	}
	l.conn, err = grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.conn.Close() })
	l.cli = pb.NewRateLimitServiceClient(l.conn)
	return l
}

func req(domain string, descs ...[]string) *pb.RateLimitRequest {
	r := &pb.RateLimitRequest{Domain: domain}
	for _, kv := range descs {
		d := &commonpb.RateLimitDescriptor{}
		for i := 0; i+1 < len(kv); i += 2 {
			d.Entries = append(d.Entries, &commonpb.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
		}
		r.Descriptors = append(r.Descriptors, d)
	}
	return r
}

func (l *lab) call(t *testing.T, r *pb.RateLimitRequest) *pb.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := l.cli.ShouldRateLimit(ctx, r, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("ShouldRateLimit(%v): %v", r, err)
	}
	return resp
}

func TestConcurrent20(t *testing.T) {
	l := startLab(t, Options{})
	const n = 20
	gate := make(chan struct{})
	var wg sync.WaitGroup
	resps := make([]*pb.RateLimitResponse, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			<-gate
			resps[i], errs[i] = l.cli.ShouldRateLimit(ctx, req("inventory", []string{"tenant", "lab"}), grpc.WaitForReady(true))
		}()
	}
	close(gate)
	wg.Wait()
	codesSeen := map[pb.RateLimitResponse_Code]int{}
	var remaining []int
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		r := resps[i]
		codesSeen[r.GetOverallCode()]++
		st := r.GetStatuses()[0]
		if st.GetCode() != r.GetOverallCode() {
			t.Errorf("status %v != overall %v", st.GetCode(), r.GetOverallCode())
		}
		if cl := st.GetCurrentLimit(); cl.GetRequestsPerUnit() != 5 || cl.GetUnit() != pb.RateLimitResponse_RateLimit_HOUR {
			t.Errorf("current_limit %v", cl)
		}
		// now is 09:42:29Z: 3600 - 2549 = 1051 s until the hour, as observed.
		if d := st.GetDurationUntilReset().AsDuration(); d != 1051*time.Second {
			t.Errorf("duration_until_reset %v", d)
		}
		if r.GetOverallCode() == pb.RateLimitResponse_OK {
			remaining = append(remaining, int(st.GetLimitRemaining()))
		} else if st.GetLimitRemaining() != 0 {
			t.Errorf("over limit with remaining %d", st.GetLimitRemaining())
		}
	}
	if codesSeen[pb.RateLimitResponse_OK] != 5 || codesSeen[pb.RateLimitResponse_OVER_LIMIT] != 15 {
		t.Fatalf("codes %v, want 5 OK 15 OVER_LIMIT", codesSeen)
	}
	sort.Ints(remaining)
	if fmt.Sprint(remaining) != "[0 1 2 3 4]" {
		t.Errorf("limit_remaining of OKs %v", remaining)
	}

	decs := decisions(t, l.log.String())
	if len(decs) != n {
		t.Fatalf("%d decisions, want %d", len(decs), n)
	}
	seen := map[uint64]bool{}
	for _, d := range decs {
		if d.Domain != "inventory" || d.Key != fmt.Sprintf("inventory_tenant_lab_%d", base) || d.WindowStart != base ||
			d.Limit != 5 || d.Unit != "HOUR" || len(d.Descriptor) != 1 || d.Descriptor[0] != (descriptor.DescriptorEntry{Key: "tenant", Value: "lab"}) ||
			d.TimeNs != (base+2549)*1e9 {
			t.Errorf("decision %+v", d)
		}
		if seen[d.Current] {
			t.Errorf("current %d twice", d.Current)
		}
		seen[d.Current] = true
		want := "OK"
		if d.Current > 5 {
			want = "OVER_LIMIT"
		}
		if d.Code != want {
			t.Errorf("current %d code %s, want %s", d.Current, d.Code, want)
		}
	}
	for c := uint64(1); c <= n; c++ {
		if !seen[c] {
			t.Errorf("current %d missing", c)
		}
	}
}

func TestNotLimited(t *testing.T) {
	l := startLab(t, Options{})
	for i := 0; i < 8; i++ {
		for _, r := range []*pb.RateLimitRequest{
			req("inventory", []string{"tenant", "lab2"}),
			req("nosuch", []string{"tenant", "lab"}),
			req("inventory", []string{"tenant", "lab", "user", "u1"}), // deeper than config
		} {
			resp := l.call(t, r)
			st := resp.GetStatuses()[0]
			if resp.GetOverallCode() != pb.RateLimitResponse_OK || st.GetCode() != pb.RateLimitResponse_OK || st.GetCurrentLimit() != nil ||
				st.GetLimitRemaining() != 0 || st.GetDurationUntilReset() != nil {
				t.Fatalf("%v: %v", r, resp)
			}
		}
	}
	// unlimited: OK with limit_remaining MaxUint32 ({"code":"OK","limitRemaining":4294967295} observed).
	resp := l.call(t, req("rlbench", []string{"free", "all"}))
	if st := resp.GetStatuses()[0]; st.GetCode() != pb.RateLimitResponse_OK || st.GetLimitRemaining() != math.MaxUint32 || st.GetCurrentLimit() != nil {
		t.Fatalf("unlimited: %v", resp)
	}
	decs := decisions(t, l.log.String())
	if len(decs) != 25 {
		t.Fatalf("%d decisions", len(decs))
	}
	for _, d := range decs {
		if d.Code != "OK" || d.Key != "" || d.Current != 0 || d.Limit != 0 {
			t.Errorf("unlimited decision %+v", d)
		}
	}
}

func TestErrors(t *testing.T) {
	l := startLab(t, Options{})
	for _, tc := range []struct {
		r    *pb.RateLimitRequest
		want string
	}{
		{req("", []string{"tenant", "lab"}), "rate limit domain must not be empty"},
		{req("inventory"), "rate limit descriptor list must not be empty"},
	} {
		_, err := l.cli.ShouldRateLimit(context.Background(), tc.r)
		if status.Code(err) != codes.Unknown || status.Convert(err).Message() != tc.want {
			t.Errorf("%v: %v", tc.r, err)
		}
	}
	decs := decisions(t, l.log.String())
	if len(decs) != 2 || decs[0].Code != "ERROR" || decs[0].Error != "rate limit domain must not be empty" || decs[1].Domain != "inventory" {
		t.Errorf("decisions %+v", decs)
	}

	empty := startLab(t, Options{Configs: []*rlsconfig.Config{}})
	_, err := empty.cli.ShouldRateLimit(context.Background(), req("inventory", []string{"tenant", "lab"}))
	if status.Convert(err).Message() != "no rate limit configuration loaded" {
		t.Errorf("no config: %v", err)
	}

	cfgs := loadConfigs(t, "inventory.yaml", "inventory.yaml")
	if _, err := Start(context.Background(), Options{Configs: cfgs}); err == nil || !strings.Contains(err.Error(), "duplicate domain 'inventory'") {
		t.Errorf("duplicate domain: %v", err)
	}
	if _, err := Start(context.Background(), Options{WindowStart: "sliding"}); err == nil || !strings.Contains(err.Error(), "sliding") {
		t.Errorf("bad window: %v", err)
	}
}

// TestSemantics covers multi-descriptor counting, shadow mode, replaces,
// hits_addend and Envoy's limit override.
func TestSemantics(t *testing.T) {
	l := startLab(t, Options{})
	// tenant=lab (5/h) and plan=free (3/h) in one request: from the 4th call
	// plan=free is over, the request is rejected, and tenant=lab still counts.
	var overall []string
	for i := 0; i < 6; i++ {
		resp := l.call(t, req("inventory", []string{"tenant", "lab"}, []string{"plan", "free"}))
		overall = append(overall, resp.GetOverallCode().String()+"/"+resp.GetStatuses()[0].GetCode().String())
	}
	if got := strings.Join(overall, " "); got != "OK/OK OK/OK OK/OK OVER_LIMIT/OK OVER_LIMIT/OK OVER_LIMIT/OVER_LIMIT" {
		t.Errorf("multi-descriptor: %s", got)
	}
	// shadow: counted beyond the limit but always OK.
	for i := 0; i < 3; i++ {
		resp := l.call(t, req("inventory", []string{"shadow", "x"}))
		if resp.GetOverallCode() != pb.RateLimitResponse_OK || resp.GetStatuses()[0].GetLimitRemaining() != 0 {
			t.Fatalf("shadow call %d: %v", i, resp)
		}
	}
	// replaces: with special=s present, base=b is not applied nor counted.
	for i := 0; i < 3; i++ {
		resp := l.call(t, req("inventory", []string{"base", "b"}, []string{"special", "s"}))
		if resp.GetOverallCode() != pb.RateLimitResponse_OK || resp.GetStatuses()[0].GetCurrentLimit() != nil ||
			resp.GetStatuses()[1].GetLimitRemaining() != uint32(9-i) {
			t.Fatalf("replaces call %d: %v", i, resp)
		}
	}
	if resp := l.call(t, req("inventory", []string{"base", "b"})); resp.GetStatuses()[0].GetLimitRemaining() != 0 || resp.GetOverallCode() != pb.RateLimitResponse_OK {
		t.Fatalf("base alone, first hit: %v", resp)
	}
	// hits_addend 2 on client default rule (2/min): 2 OK (remaining 0), 4 over.
	r := req("inventory", []string{"client", "c1"})
	r.HitsAddend = 2
	if resp := l.call(t, r); resp.GetOverallCode() != pb.RateLimitResponse_OK {
		t.Fatalf("addend first: %v", resp)
	}
	if resp := l.call(t, r); resp.GetOverallCode() != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("addend second: %v", resp)
	}
	// a default rule counts per request value: client=c2 has its own counter.
	if resp := l.call(t, req("inventory", []string{"client", "c2"})); resp.GetStatuses()[0].GetLimitRemaining() != 1 {
		t.Fatalf("client c2: %v", resp)
	}
	// Envoy's limit override: 1 per second on an otherwise unmatched descriptor.
	o := req("inventory", []string{"route", "r1"})
	o.Descriptors[0].Limit = &commonpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typepb.RateLimitUnit_SECOND}
	if resp := l.call(t, o); resp.GetOverallCode() != pb.RateLimitResponse_OK || resp.GetStatuses()[0].GetCurrentLimit().GetUnit() != pb.RateLimitResponse_RateLimit_SECOND {
		t.Fatalf("override first: %v", resp)
	}
	if resp := l.call(t, o); resp.GetOverallCode() != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("override second: %v", resp)
	}

	var shadowCur, addendCur, c2Keys []string
	for _, d := range decisions(t, l.log.String()) {
		switch {
		case d.Descriptor[0].Key == "shadow":
			shadowCur = append(shadowCur, fmt.Sprintf("%d/%s", d.Current, d.Code))
		case d.Descriptor[0].Key == "client" && d.Descriptor[0].Value == "c1":
			addendCur = append(addendCur, fmt.Sprint(d.Current))
		case d.Descriptor[0].Key == "client":
			c2Keys = append(c2Keys, d.Key)
		}
	}
	if got := strings.Join(shadowCur, " "); got != "1/OK 2/OK 3/OK" {
		t.Errorf("shadow decisions %s", got)
	}
	if got := strings.Join(addendCur, " "); got != "2 4" {
		t.Errorf("addend currents %s", got)
	}
	// minute window of 09:42:29Z starts at 09:42:00Z = base+2520.
	if len(c2Keys) != 1 || c2Keys[0] != fmt.Sprintf("inventory_client_c2_%d", base+2520) {
		t.Errorf("c2 keys %v", c2Keys)
	}
}

func TestWindowRollover(t *testing.T) {
	for _, mode := range []string{evidence.WindowAligned, evidence.WindowFirstHit} {
		t.Run(mode, func(t *testing.T) {
			l := startLab(t, Options{WindowStart: mode})
			r := req("rlbench", []string{"generic_key", "fixed"}) // 3 per minute
			type step struct {
				at        int64 // seconds after base
				code      pb.RateLimitResponse_Code
				resetSecs int64
			}
			var steps []step
			if mode == evidence.WindowAligned {
				steps = []step{
					{55, pb.RateLimitResponse_OK, 5}, {56, pb.RateLimitResponse_OK, 4}, {57, pb.RateLimitResponse_OK, 3},
					{59, pb.RateLimitResponse_OVER_LIMIT, 1},
					// new epoch-aligned minute: 3 more pass 5 s after the first 3 (2x limit across the boundary).
					{60, pb.RateLimitResponse_OK, 60}, {61, pb.RateLimitResponse_OK, 59}, {62, pb.RateLimitResponse_OK, 58},
					{63, pb.RateLimitResponse_OVER_LIMIT, 57},
				}
			} else {
				steps = []step{
					{55, pb.RateLimitResponse_OK, 60}, {56, pb.RateLimitResponse_OK, 59}, {57, pb.RateLimitResponse_OK, 58},
					{59, pb.RateLimitResponse_OVER_LIMIT, 56},
					// the aligned boundary changes nothing: the window runs to 55+60.
					{60, pb.RateLimitResponse_OVER_LIMIT, 55}, {114, pb.RateLimitResponse_OVER_LIMIT, 1},
					{115, pb.RateLimitResponse_OK, 60}, {116, pb.RateLimitResponse_OK, 59},
				}
			}
			for _, s := range steps {
				l.clk.Set(time.Unix(base+s.at, 0))
				resp := l.call(t, r)
				st := resp.GetStatuses()[0]
				if st.GetCode() != s.code || st.GetDurationUntilReset().AsDuration() != time.Duration(s.resetSecs)*time.Second {
					t.Errorf("t=+%d: code %v reset %v, want %v %ds", s.at, st.GetCode(), st.GetDurationUntilReset().AsDuration(), s.code, s.resetSecs)
				}
			}
			var got []string
			for _, d := range decisions(t, l.log.String()) {
				got = append(got, fmt.Sprintf("%d:%d", d.WindowStart-base, d.Current))
			}
			want := "0:1 0:2 0:3 0:4 60:1 60:2 60:3 60:4"
			if mode == evidence.WindowFirstHit {
				want = "55:1 55:2 55:3 55:4 55:5 55:6 115:1 115:2"
			}
			if strings.Join(got, " ") != want {
				t.Errorf("window:current %s, want %s", strings.Join(got, " "), want)
			}
		})
	}
}

func TestRestartLosesCounts(t *testing.T) {
	l := startLab(t, Options{})
	addr := l.srv.Addr()
	r := req("inventory", []string{"tenant", "lab"})
	count := func() (ok, over int) {
		for i := 0; i < 6; i++ {
			if l.call(t, r).GetOverallCode() == pb.RateLimitResponse_OK {
				ok++
			} else {
				over++
			}
		}
		return
	}
	if ok, over := count(); ok != 5 || over != 1 {
		t.Fatalf("before restart: %d OK %d over", ok, over)
	}
	if err := l.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Like a killed process, the restart drops the client's connection without
	// GOAWAY; wait until the client has seen that, or the next call may be
	// sent on the dead transport and fail with Unavailable.
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if !l.conn.WaitForStateChange(wctx, connectivity.Ready) {
		t.Fatal("client never noticed the restart")
	}
	if l.srv.Addr() != addr || !l.srv.Running() {
		t.Fatalf("after restart addr %s (was %s), running %v", l.srv.Addr(), addr, l.srv.Running())
	}
	// the same client connection reconnects (WaitForReady) and gets 5 more OK.
	if ok, over := count(); ok != 5 || over != 1 {
		t.Fatalf("after restart: %d OK %d over", ok, over)
	}
	var cur []string
	for _, d := range decisions(t, l.log.String()) {
		cur = append(cur, fmt.Sprint(d.Current))
	}
	if got := strings.Join(cur, " "); got != "1 2 3 4 5 6 1 2 3 4 5 6" {
		t.Errorf("currents %s", got)
	}
}

func TestStop(t *testing.T) {
	entered := make(chan struct{}, 1)
	testHookDelay = func() { entered <- struct{}{} }
	t.Cleanup(func() { testHookDelay = nil })
	l := startLab(t, Options{Delay: time.Minute})

	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := l.cli.ShouldRateLimit(ctx, req("inventory", []string{"tenant", "lab"}))
		errc <- err
	}()
	<-entered // the call is inside the server's delay
	stopped := time.Now()
	l.srv.Stop()
	err := <-errc
	if err == nil {
		t.Fatal("in-flight call succeeded after Stop")
	}
	if c := status.Code(err); c != codes.Unavailable && c != codes.Canceled {
		t.Errorf("in-flight call: %v", err)
	}
	if el := time.Since(stopped); el > 10*time.Second {
		t.Errorf("Stop took %v with a 1 min delay pending", el)
	}
	if l.srv.Running() {
		t.Error("running after Stop")
	}
	// a new call fails: nothing listens any more.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := l.cli.ShouldRateLimit(ctx, req("inventory", []string{"tenant", "lab"})); status.Code(err) != codes.Unavailable {
		t.Errorf("call after Stop: %v", err)
	}
	if got := l.log.String(); got != "" {
		t.Errorf("cancelled call logged a decision: %s", got)
	}
	l.srv.Stop() // idempotent
}

func TestDelayTimeoutNotCounted(t *testing.T) {
	l := startLab(t, Options{Delay: 300 * time.Millisecond})
	r := req("inventory", []string{"tenant", "lab"})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.cli.ShouldRateLimit(ctx, r); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("short deadline: %v", err)
	}
	start := time.Now()
	resp := l.call(t, r)
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("call took %v, delay is 300ms", el)
	}
	if rem := resp.GetStatuses()[0].GetLimitRemaining(); rem != 4 {
		t.Errorf("limit_remaining %d: the timed-out call was counted", rem)
	}
}

func TestHealthAndContext(t *testing.T) {
	l := startLab(t, Options{})
	hc := healthpb.NewHealthClient(l.conn)
	for _, svc := range []string{"ratelimit", ""} {
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q: %v %v", svc, resp, err)
		}
	}
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "other"}); status.Code(err) != codes.NotFound {
		t.Errorf("health other: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, Options{Configs: loadConfigs(t, "inventory.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	cancel()
	if err := srv.Restart(); err == nil {
		t.Error("Restart after the start context ended succeeded")
	}
}

func TestEvidenceWriterAndInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decisions.jsonl")
	w, err := evidence.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Unix(base, 0)}
	srv, err := Start(context.Background(), Options{Configs: loadConfigs(t, "inventory.yaml"), Decisions: w, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	for i := 0; i < 7; i++ {
		if _, err := srv.ShouldRateLimit(context.Background(), req("inventory", []string{"tenant", "lab"})); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var codes []string
	if err := evidence.ReadFile(path, func(_ int, d *evidence.Decision) error {
		codes = append(codes, fmt.Sprintf("%d%s", d.Current, d.Code[:2]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(codes, " "); got != "1OK 2OK 3OK 4OK 5OK 6OV 7OV" {
		t.Errorf("decisions %s", got)
	}
	if srv.LogErr() != nil {
		t.Error(srv.LogErr())
	}
}

// TestMatchesCapturedGRPCResponses replays the calls behind the real RLS's
// captured gRPC responses (rls_local_3fb7025_grpc_client.txt: a 4th hit on
// generic_key=fixed 3/min at 18 s before the minute ends, then the same with a
// remote_address descriptor) and compares the prototext, whitespace-normalized.
func TestMatchesCapturedGRPCResponses(t *testing.T) {
	raw, err := os.ReadFile("testdata/rls_local_3fb7025_grpc_client.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "response: "); ok {
			want = append(want, strings.Join(strings.Fields(rest), " "))
		}
	}
	if len(want) != 2 {
		t.Fatalf("fixture has %d responses", len(want))
	}
	l := startLab(t, Options{})
	l.clk.Set(time.Unix(base+42, 0))
	gen := []string{"generic_key", "fixed"}
	for i := 0; i < 3; i++ {
		l.call(t, req("rlbench", gen))
	}
	got := []string{
		prototext.MarshalOptions{}.Format(l.call(t, req("rlbench", gen))),
		prototext.MarshalOptions{}.Format(l.call(t, req("rlbench", gen, []string{"remote_address", "127.0.0.1"}))),
	}
	for i := range got {
		if g := strings.Join(strings.Fields(got[i]), " "); g != want[i] {
			t.Errorf("response %d:\n got  %s\n want %s", i, g, want[i])
		}
	}
	var keys []string
	for _, d := range decisions(t, l.log.String())[3:] {
		keys = append(keys, fmt.Sprintf("%s=%d", d.Key, d.Current))
	}
	if g := strings.Join(keys, " "); g != fmt.Sprintf("rlbench_generic_key_fixed_%d=4 rlbench_generic_key_fixed_%d=5 rlbench_remote_address_127.0.0.1_%d=1", base, base, base+42) {
		t.Errorf("keys %s", g)
	}
}

func TestFixtureCopy(t *testing.T) {
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			t.Skip("repo root not found")
		}
		dir = filepath.Dir(dir)
	}
	for _, f := range []string{"rls_local_config.yaml", "rls_local_3fb7025_grpc_client.txt"} {
		want, err := os.ReadFile(filepath.Join(dir, "..", "shared", "fixtures", "rls", f))
		if err != nil {
			t.Skipf("shared fixtures absent: %v", err)
		}
		got, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("testdata/%s differs from the shared fixture (%v)", f, err)
		}
	}
}

func BenchmarkShouldRateLimitInProcess(b *testing.B) {
	srv, err := Start(context.Background(), Options{Configs: loadConfigs(b, "inventory.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	r := req("inventory", []string{"tenant", "lab"})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := srv.ShouldRateLimit(context.Background(), r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkShouldRateLimitGRPC(b *testing.B) {
	srv, err := Start(context.Background(), Options{Configs: loadConfigs(b, "inventory.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	cli := pb.NewRateLimitServiceClient(conn)
	r := req("inventory", []string{"tenant", "lab"})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cli.ShouldRateLimit(context.Background(), r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestQuotaModeAndReplacedUnlimited: two service-level rules the lab RLS got wrong, found by the differential
// test against the real RLS (envoyproxy/ratelimit src/service/ratelimit.go). A quota_mode rule over its limit
// answers OK with current_limit and limit_remaining only (no duration_until_reset), and the request is not
// rejected; the lab answered OVER_LIMIT. An unlimited rule whose name another matched rule replaces stays
// unlimited (limit_remaining 4294967295); the lab dropped it as if it matched nothing.
func TestQuotaModeAndReplacedUnlimited(t *testing.T) {
	c, err := rlsconfig.ParseFile(filepath.Join("..", "..", "rlsconfig", "testdata", "matching.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	l := startLab(t, Options{Configs: []*rlsconfig.Config{c}})
	for i := 0; i < 3; i++ {
		resp := l.call(t, req("matching", []string{"quota", "q"}))
		st := resp.GetStatuses()[0]
		if resp.GetOverallCode() != pb.RateLimitResponse_OK || st.GetCode() != pb.RateLimitResponse_OK ||
			st.GetCurrentLimit().GetRequestsPerUnit() != 1 || st.GetLimitRemaining() != 0 ||
			(i > 0 && st.GetDurationUntilReset() != nil) {
			t.Fatalf("quota_mode call %d: %v", i, resp)
		}
	}
	ds := decisions(t, l.log.String())
	if len(ds) != 3 || ds[2].Code != "OK" || ds[2].Current != 3 {
		t.Fatalf("quota_mode decisions: %+v", ds)
	}
	resp := l.call(t, req("matching", []string{"free", "all"}, []string{"special", "s"}))
	if st := resp.GetStatuses(); st[0].GetLimitRemaining() != math.MaxUint32 || st[0].GetCurrentLimit() != nil ||
		st[1].GetCurrentLimit().GetRequestsPerUnit() != 10 {
		t.Fatalf("replaced unlimited: %v", resp)
	}
}

// TestRecvNs: every decision records when its call entered the RLS
// (RecvNs) beside when it was decided (TimeNs), on the injected clock that
// moves 1 ms at every reading: RecvNs is before TimeNs, the decisions of one
// call share both, a later call was received after the earlier one was
// decided, and a rejected call's ERROR line has its receive time too.
func TestRecvNs(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(base, 0)
	tick := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
	log := &syncBuffer{}
	srv, err := Start(context.Background(), Options{Configs: loadConfigs(t, "inventory.yaml"), DecisionLog: log, Now: tick})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	ctx := context.Background()
	if _, err := srv.ShouldRateLimit(ctx, req("inventory", []string{"tenant", "lab"}, []string{"plan", "free"})); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ShouldRateLimit(ctx, req("inventory", []string{"tenant", "lab"})); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ShouldRateLimit(ctx, req("")); err == nil {
		t.Fatal("empty domain accepted")
	}
	ds := decisions(t, log.String())
	if len(ds) != 4 {
		t.Fatalf("%d decisions, want 4: %+v", len(ds), ds)
	}
	for i, d := range ds {
		if d.RecvNs <= base*1e9 || d.RecvNs >= d.TimeNs {
			t.Errorf("decision %d: recv_ns %d, time_ns %d: want base < recv < time", i, d.RecvNs, d.TimeNs)
		}
	}
	if ds[0].RecvNs != ds[1].RecvNs || ds[0].TimeNs != ds[1].TimeNs {
		t.Errorf("one call's decisions differ in times: %+v %+v", ds[0], ds[1])
	}
	if ds[2].RecvNs <= ds[1].TimeNs || ds[3].RecvNs <= ds[2].TimeNs || ds[3].Code != "ERROR" {
		t.Errorf("later calls: %+v %+v", ds[2], ds[3])
	}
}
