//go:build integration

package rls

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlbench/rlbench/internal/realparts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const spaceConfig = `domain: inventory
descriptors:
  - key: tenant
    rate_limit:
      unit: hour
      requests_per_unit: 5
`

// startRealRLS starts a fresh Redis and the pinned envoyproxy/ratelimit on
// it (LOG_LEVEL level), both stopped by PID at cleanup. It skips when the
// real parts are absent, unless RLBENCH_REQUIRE_REAL_PARTS=1.
func startRealRLS(t *testing.T, level string) (*realparts.RLS, rlsv3.RateLimitServiceClient) {
	t.Helper()
	redisBin, err1 := realparts.FindRedis()
	rlsBin, err2 := realparts.FindRLS()
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("RLBENCH_REQUIRE_REAL_PARTS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx := context.Background()
	r, err := realparts.StartRedis(ctx, realparts.Options{Bin: redisBin, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	cfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "inventory.yaml"), []byte(spaceConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := realparts.StartRLS(ctx, realparts.RLSOptions{Bin: rlsBin, RedisAddr: r.Addr(), ConfigDir: cfg, WorkDir: t.TempDir(), LogLevel: level})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	conn, err := grpc.NewClient(s.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return s, rlsv3.NewRateLimitServiceClient(conn)
}

func callTenant(t *testing.T, c rlsv3.RateLimitServiceClient, tenant string) rlsv3.RateLimitResponse_Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "inventory", HitsAddend: 1,
		Descriptors: []*rlcommon.RateLimitDescriptor{{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "tenant", Value: tenant}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetOverallCode()
}

// TestIntegrationLogSpaceValue: the real RLS logs a descriptor value with a
// space verbatim in its cache key ("inventory_tenant_lab one_<window>");
// all 14 decisions are reconstructed (they were 9, with 5 "pending"). With
// RLBENCH_CAPTURE=FILE the log is copied to FILE (how
// testdata/rls_local_3fb7025_space_value.log was made).
func TestIntegrationLogSpaceValue(t *testing.T) {
	if left := 3600 - time.Now().Unix()%3600; left < 20 {
		time.Sleep(time.Duration(left)*time.Second + 200*time.Millisecond) // one hour window for all calls
	}
	s, c := startRealRLS(t, "debug")
	var ok, over int
	for i := 0; i < 14; i++ {
		switch callTenant(t, c, "lab one") {
		case rlsv3.RateLimitResponse_OK:
			ok++
		case rlsv3.RateLimitResponse_OVER_LIMIT:
			over++
		}
	}
	if ok != 5 || over != 9 {
		t.Fatalf("RLS answered %d OK and %d OVER_LIMIT, want 5 and 9", ok, over)
	}
	l := parseRealLog(t, s, "RLBENCH_CAPTURE")
	codes := l.CountCodes()
	if len(l.Decisions) != 14 || codes["OK"] != 5 || codes["OVER_LIMIT"] != 9 || len(l.PendingLookups) != 0 {
		t.Fatalf("decisions %d %v, pending %d: want 14 (5 OK, 9 OVER_LIMIT), none pending", len(l.Decisions), codes, len(l.PendingLookups))
	}
	for _, d := range l.Decisions {
		if d.Domain != "inventory" || len(d.Descriptor) != 1 || d.Descriptor[0].Value != "lab one" || !strings.HasPrefix(d.Key, "inventory_tenant_lab one_") || d.CodeDerived {
			t.Fatalf("decision %+v", d)
		}
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings %v", l.Warnings)
	}
}

// TestIntegrationLogInfoLevel: at LOG_LEVEL=info the real RLS logs no
// decision; the parsed log says so instead of reporting 0 decisions silently.
func TestIntegrationLogInfoLevel(t *testing.T) {
	s, c := startRealRLS(t, "info")
	for i := 0; i < 3; i++ {
		callTenant(t, c, "lab")
	}
	l := parseRealLog(t, s, "RLBENCH_CAPTURE_INFO")
	if len(l.Decisions) != 0 || len(l.Warnings) != 1 || !strings.HasPrefix(l.Warnings[0], WarnNoDebugLines) {
		t.Fatalf("decisions %d, warnings %q: want none and %q", len(l.Decisions), l.Warnings, WarnNoDebugLines)
	}
}

// parseRealLog parses the RLS's log; when the environment variable
// captureEnv names a file, the log is copied there first (how the
// testdata captures were made).
func parseRealLog(t *testing.T, s *realparts.RLS, captureEnv string) *Log {
	t.Helper()
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv(captureEnv); dst != "" {
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := ParseLog(bytes.NewReader(b), "rls.log")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
