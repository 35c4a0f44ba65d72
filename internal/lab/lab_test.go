package lab

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/internal/testfix"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/proxy"
)

type syncBuf = testfix.SyncBuffer

func TestTwoProxiesLocalBuckets(t *testing.T) {
	on := 100.0
	var receipts syncBuf
	l, err := Start(t.Context(), Options{Proxies: 2, BackendReceipts: &receipts,
		Local: &proxy.LocalRateLimit{MaxTokens: 5, TokensPerFill: 5, FillInterval: time.Hour, FilterEnabled: &on, FilterEnforced: &on}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	a := l.Addresses()
	js, _ := json.Marshal(a)
	var back Addresses
	if err := json.Unmarshal(js, &back); err != nil || len(back.Proxies) != 2 || back.Proxies[0].Name != "proxy-a" || back.Proxies[1].Name != "proxy-b" {
		t.Fatalf("addresses %s (%v)", js, err)
	}
	for _, p := range a.Proxies {
		if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || !strings.HasPrefix(p.AdminURL, "http://127.0.0.1:") || p.URL == p.AdminURL {
			t.Fatalf("proxy address %+v", p)
		}
	}

	// 20 requests, 10 to each proxy, concurrently: 5 tokens per proxy.
	type res struct {
		id   string
		code int
	}
	out := make([]res, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := a.Proxies[i%2].URL
			id := fmt.Sprintf("lab-%02d", i)
			req, _ := http.NewRequest("GET", target+"/item", nil)
			req.Header.Set("X-Rlbench-Id", id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out[i] = res{id, resp.StatusCode}
		}()
	}
	wg.Wait()
	admitted := map[string]bool{}
	perProxy := [2]int{}
	for i, r := range out {
		if r.code == 200 {
			admitted[r.id] = true
			perProxy[i%2]++
		} else if r.code != 429 {
			t.Errorf("%s: %d", r.id, r.code)
		}
	}
	if len(admitted) != 10 || perProxy != [2]int{5, 5} {
		t.Fatalf("admitted %d (per proxy %v), want 10 (5, 5)", len(admitted), perProxy)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// After Close the receipts are flushed: exactly the admitted ids, once each.
	seen := map[string]int{}
	err = evidence.ReadLines(bytes.NewReader(receipts.Bytes()), "receipts", func(_ int, r *evidence.Receipt) error {
		if r.ID == nil {
			return fmt.Errorf("receipt without id: %+v", r)
		}
		seen[*r.ID]++
		if xff := r.Headers["x-forwarded-for"]; xff != "127.0.0.1" {
			return fmt.Errorf("receipt %s x-forwarded-for %q", *r.ID, xff)
		}
		if r.Headers["x-request-id"] == "" {
			return fmt.Errorf("receipt %s without generated x-request-id", *r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 10 {
		t.Fatalf("%d receipts, want 10", len(seen))
	}
	for id, n := range seen {
		if !admitted[id] || n != 1 {
			t.Errorf("receipt %s: %d times, admitted=%v", id, n, admitted[id])
		}
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(t.Context(), Options{Proxies: 27}); err == nil {
		t.Error("27 proxies accepted")
	}
	_, err := Start(t.Context(), Options{Proxies: 2, Local: &proxy.LocalRateLimit{MaxTokens: 0, FillInterval: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "proxy-a") || !strings.Contains(err.Error(), "max_tokens") {
		t.Errorf("bad local config error: %v", err)
	}
}
