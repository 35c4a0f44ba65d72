package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWait: wait returns once every URL answers 2xx, and after --timeout
// exits 1 naming the URL that never did; misuse is exit 2.
func TestWait(t *testing.T) {
	var tries atomic.Int32
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) < 4 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("LIVE"))
	}))
	defer late.Close()
	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer never.Close()

	if code, _, stderr := runCLI(t, "wait", "--interval", "10ms", late.URL+"/ready"); code != ExitOK || tries.Load() != 4 {
		t.Fatalf("wait for a URL ready at the 4th try: exit %d after %d tries (%s)", code, tries.Load(), stderr)
	}
	code, _, stderr := runCLI(t, "wait", "--interval", "10ms", "--timeout", "200ms", late.URL+"/ready", never.URL+"/ready")
	if code != ExitError || !strings.Contains(stderr, "not ready after 200ms") || !strings.Contains(stderr, never.URL+"/ready: answered 503 Service Unavailable") ||
		strings.Contains(stderr, late.URL) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{{"wait"}, {"wait", "127.0.0.1:1"}, {"wait", "--timeout", "0s", late.URL}} {
		if code, _, _ := runCLI(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
