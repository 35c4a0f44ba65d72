package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/lab"
)

// TestLabFileRuns: rlbench lab -f starts the lab its file describes, with
// the lab RLS configured from the file's rls.config: one request per hour
// for tenant lab, so the second request is OVER_LIMIT (429); both decisions
// are logged and the admitted one has its receipt.
func TestLabFileRuns(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(file, []byte(`proxies: 1
global:
  domain: inventory
  descriptors: [{generic_key: {descriptor_key: tenant, descriptor_value: lab}}]
  timeout: 30s
rls:
  config: |
    domain: inventory
    descriptors:
      - {key: tenant, value: lab, rate_limit: {unit: hour, requests_per_unit: 1}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := parseLab(t, "-f", file, "--receipts", filepath.Join(dir, "receipts.jsonl"), "--decisions", filepath.Join(dir, "decisions.jsonl"))
	pr, pw := io.Pipe()
	o.IO = &IOStreams{In: strings.NewReader(""), Out: pw, ErrOut: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runLab(ctx, o); _ = pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no address line: %v (lab: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var addrs lab.Addresses
	if err := json.Unmarshal([]byte(line), &addrs); err != nil || len(addrs.Proxies) != 1 || addrs.RLS == "" {
		t.Fatalf("addresses %q: %v", line, err)
	}
	var codes []int
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodGet, addrs.Proxies[0].URL+"/x", nil)
		req.Header.Set("X-Request-Id", []string{"r-1", "r-2"}[i])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if codes[0] != http.StatusOK || codes[1] != http.StatusTooManyRequests {
		t.Fatalf("codes %v, want [200 429]", codes)
	}
	for name, want := range map[string]int{"decisions.jsonl": 2, "receipts.jsonl": 1} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n != want {
			t.Errorf("%s: %d lines, want %d:\n%s", name, n, want, b)
		}
	}
}
