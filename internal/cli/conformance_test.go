package cli

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/model"
	"github.com/rlbench/rlbench/schemas"
)

// TestNewConformanceCmd: the flags become ConformanceOptions (the model
// parsed, the headers and shapes collected); a missing --url or --model and
// a bad model are usage errors before anything runs.
func TestNewConformanceCmd(t *testing.T) {
	var got *ConformanceOptions
	cmd := NewConformanceCmd(tio, func(o *ConformanceOptions) error { got = o; return nil })
	err := execute(cmd, []string{"--url", "http://127.0.0.1:1", "--receipts-url", "http://127.0.0.1:2/_rlbench/receipts", "--model", "token_bucket:capacity=10,rate_per_sec=2.5", "--key-header", "x-api-key",
		"--shape", "burst 1.5x capacity", "--shape", "sustained 2x rate", "--header", "Authorization: Bearer t", "--reject-status", "503", "--format", "json"})
	if err != nil || got == nil {
		t.Fatalf("err %v, options %v", err, got)
	}
	l := got.Limiter
	if l.URL != "http://127.0.0.1:1" || l.ReceiptsURL != "http://127.0.0.1:2/_rlbench/receipts" || l.Model.Kind != model.KindTokenBucket || l.Model.Capacity != 10 || l.Model.RatePerSec != 2.5 ||
		l.KeyHeader != "x-api-key" || len(l.Shapes) != 2 || l.Headers["Authorization"] != "Bearer t" || l.RejectStatus != 503 || got.Format != formatJSON || l.Name != "limiter" {
		t.Errorf("options %+v", got)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"no url":        {[]string{"--model", "token_bucket:capacity=1,rate_per_sec=1"}, "--url is required"},
		"no receipts":   {[]string{"--url", "http://127.0.0.1:1", "--model", "token_bucket:capacity=1,rate_per_sec=1"}, "--receipts-url is required"},
		"no model":      {[]string{"--url", "http://127.0.0.1:1", "--receipts-url", "http://127.0.0.1:2/_rlbench/receipts"}, "--model is required"},
		"bad field":     {[]string{"--url", "http://127.0.0.1:1", "--model", "token_bucket:capacity=1,rate=1"}, `rate: does not apply to kind "token_bucket"`},
		"bad kind":      {[]string{"--url", "http://127.0.0.1:1", "--model", "leaky:capacity=1"}, `model "leaky:capacity=1"`},
		"bad format":    {[]string{"--url", "http://127.0.0.1:1", "--model", "token_bucket:capacity=1,rate_per_sec=1", "--format", "html"}, "format"},
		"unknown field": {[]string{"--url", "http://127.0.0.1:1", "--model", "token_bucket:capacity=1,speed=1"}, `speed: unknown field`},
		"not a field":   {[]string{"--url", "http://127.0.0.1:1", "--model", "token_bucket:capacity"}, "want FIELD=VALUE"},
	} {
		t.Run(name, func(t *testing.T) {
			got = nil
			cmd := NewConformanceCmd(tio, func(o *ConformanceOptions) error { got = o; return nil })
			err := execute(cmd, c.args)
			if code, msg, _ := classifyError(err); code != ExitUsage || !strings.Contains(msg, c.want) || got != nil {
				t.Errorf("exit %d %q (runF %v), want exit 2 with %q", code, msg, got != nil, c.want)
			}
		})
	}
}

// bucketServer is an HTTP limiter of one's own in front of an rlbench
// backend: a token bucket of capacity 10 refilled continuously at 10/s
// (golang.org/x/time/rate's semantics) that forwards what it admits and
// answers 429 to the rest. It returns the limiter and the backend's
// receipts URL.
func bucketServer(t *testing.T) (*httptest.Server, string) {
	be, err := backend.Start(t.Context(), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	up, err := url.Parse(be.URL())
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(up)
	var mu sync.Mutex
	tokens, last := 10.0, time.Now()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		tokens = math.Min(10, tokens+now.Sub(last).Seconds()*10)
		last = now
		ok := tokens >= 1
		if ok {
			tokens--
		}
		mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s, be.URL() + evidence.ReceiptsPath
}

// TestConformanceCommandOnOwnLimiter: one command puts an HTTP token
// bucket under two standard shapes; its row PASSes with the admissions
// checked against the model, the JSON matrix validates against its schema
// and the exit code is the matrix's verdict. Claiming a smaller bucket
// than it is FAILs with the model's explanation.
func TestConformanceCommandOnOwnLimiter(t *testing.T) {
	s, receipts := bucketServer(t)
	args := []string{"conformance", "--quiet", "--root", t.TempDir(), "--url", s.URL, "--receipts-url", receipts, "--format", "json",
		"--shape", "burst 1.5x capacity", "--shape", "double burst across a refill"}
	code, out, errOut := runCLI(t, append(args, "--model", "token_bucket:capacity=10,rate_per_sec=10")...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if err := schemas.Validate(schemas.Matrix, []byte(out)); err != nil {
		t.Fatalf("matrix JSON: %v\n%s", err, out)
	}
	var m report.Matrix
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != 2 || m.Limiters[0] != "limiter" {
		t.Fatalf("matrix %s", out)
	}
	for _, c := range m.Cells {
		if c.Status != evidence.Pass || c.Admitted == nil || c.Admitted.Status != report.CheckPass || !strings.HasPrefix(c.Admitted.Want, "model ") {
			t.Errorf("cell %+v admitted %+v", c, c.Admitted)
		}
	}
	// The same limiter claimed as a bucket of 5: over-admission, explained.
	code, out, errOut = runCLI(t, append(args[:len(args)-4:len(args)-4], "--format", "table", "--shape", "burst 1.5x capacity",
		"--model", "token_bucket:capacity=5,rate_per_sec=10", "--capacity", "10")...)
	if code != ExitFail || !strings.Contains(out, "Conformance: FAIL") || !strings.Contains(out, "admitted: want model ") ||
		!strings.Contains(out, "at most 5 fit (capacity plus refill)") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// FuzzParseModelFlag: ParseModelFlag never panics, and a spec it accepts
// is valid and names the kind the input starts with.
func FuzzParseModelFlag(f *testing.F) {
	for _, s := range []string{"token_bucket:capacity=10,rate_per_sec=10", "fixed_window:limit=5,unit=second", "sliding_counter:limit=10,window=1s,count=all",
		"nginx_limit_req:rate=10r/s,burst=5,nodelay=true", "token_bucket:capacity=1e400", "token_bucket:capacity=NaN", ":", "x", "token_bucket:,", "token_bucket:a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := ParseModelFlag(s)
		if err != nil {
			if !strings.Contains(err.Error(), "model ") {
				t.Errorf("error %q does not say it is the model", err)
			}
			return
		}
		if err := spec.Validate(); err != nil {
			t.Errorf("%q: accepted an invalid spec: %v", s, err)
		}
		if kind, _, _ := strings.Cut(strings.TrimSpace(s), ":"); spec.Kind != kind {
			t.Errorf("%q: kind %q", s, spec.Kind)
		}
	})
}
