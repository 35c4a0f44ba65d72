package backend

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"

	"github.com/rlbench/rlbench/evidence"
)

type syncBuf = testfix.SyncBuffer

func readReceipts(t *testing.T, name string, data []byte) []evidence.Receipt {
	t.Helper()
	var out []evidence.Receipt
	err := evidence.ReadLines(bytes.NewReader(data), name, func(_ int, r *evidence.Receipt) error {
		out = append(out, *r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// getItem sends TestReceiptsForEveryRequest's request i (GET /item/i?q=i
// with id-00i, a recorded X-Request-Id and an unrecorded header) and checks
// the backend's answer.
func getItem(ctx context.Context, base string, i int) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/item/%d?q=%d", base, i, i), nil)
	req.Header.Set("X-Rlbench-Id", fmt.Sprintf("id-%03d", i))
	req.Header.Set("X-Request-Id", fmt.Sprintf("rq-%d", i))
	req.Header.Set("X-Not-Recorded", "x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf(`{"id":"id-%03d"}`, i); resp.StatusCode != 200 || string(body) != want {
		return fmt.Errorf("request %d: %d %q, want 200 %q", i, resp.StatusCode, body, want)
	}
	return nil
}

// checkItemReceipt checks the receipt of a getItem request: its path,
// query, method, the one recorded header, receive time and remote address.
func checkItemReceipt(t *testing.T, r evidence.Receipt) {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(*r.ID, "id-%d", &i); err != nil {
		t.Fatalf("id %q", *r.ID)
	}
	if r.Path != fmt.Sprintf("/item/%d", i) || r.Query != fmt.Sprintf("q=%d", i) || r.Method != "GET" {
		t.Errorf("receipt %s: %+v", *r.ID, r)
	}
	if r.Headers["x-request-id"] != fmt.Sprintf("rq-%d", i) || len(r.Headers) != 1 {
		t.Errorf("receipt %s headers %v", *r.ID, r.Headers)
	}
	if r.RecvNs <= 0 || r.RecvTime == "" || !strings.HasPrefix(r.Remote, "127.0.0.1:") {
		t.Errorf("receipt %s time/remote %+v", *r.ID, r)
	}
}

func TestReceiptsForEveryRequest(t *testing.T) {
	ctx := t.Context()
	var sink syncBuf
	b, err := Start(ctx, Options{Receipts: &sink})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.HasPrefix(b.Addr(), "127.0.0.1:") || b.URL() != "http://"+b.Addr() {
		t.Fatalf("addr %q url %q", b.Addr(), b.URL())
	}

	const n = 25
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := getItem(ctx, b.URL(), i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	// One POST without the id header: recorded with "id": null.
	resp, err := http.Post(b.URL()+"/noid", "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"id":null}` {
		t.Errorf("no-id body %q", body)
	}
	// Health and receipts endpoints are not receipts.
	resp, err = http.Get(b.URL() + HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("healthz %d %q", resp.StatusCode, body)
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	resp, err = http.Get(b.URL() + evidence.ReceiptsPath)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got := readReceipts(t, "GET "+evidence.ReceiptsPath, served)
	if len(got) != n+1 {
		t.Fatalf("%s returned %d receipts, want %d", evidence.ReceiptsPath, len(got), n+1)
	}
	if b.Count() != n+1 {
		t.Errorf("Count() = %d", b.Count())
	}
	var ids []string
	nulls := 0
	for _, r := range got {
		if r.ID == nil {
			nulls++
			if r.Method != "POST" || r.Path != "/noid" {
				t.Errorf("null-id receipt %+v", r)
			}
			continue
		}
		ids = append(ids, *r.ID)
		checkItemReceipt(t, r)
	}
	if nulls != 1 {
		t.Errorf("%d null ids, want 1", nulls)
	}
	sort.Strings(ids)
	for i, id := range ids {
		if want := fmt.Sprintf("id-%03d", i); id != want {
			t.Fatalf("ids[%d] = %q want %q", i, id, want)
		}
	}
	if !bytes.Contains(served, []byte(`"id":null`)) {
		t.Errorf("raw receipts lack \"id\":null: %s", served)
	}

	// The sink got everything, in the same order.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if sink.String() != string(served) {
		t.Errorf("sink after Close differs from %s:\n%s\nvs\n%s", evidence.ReceiptsPath, sink.String(), served)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestReceiptsFileSealedAndStatus: with a ReceiptsFile the receipt is on
// the file as soon as its request is answered (before Close), and Close
// seals the file (evidence, seal.go) with the count.
func TestReceiptsFileSealedAndStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), evidence.ReceiptsFile)
	b, err := Start(t.Context(), Options{ReceiptsFile: path, Status: 503, Body: []byte("down"), Headers: []string{"X-Forwarded-For"}})
	if err != nil {
		t.Fatal(err)
	}
	if b.ReceiptsFile() != path {
		t.Errorf("ReceiptsFile %q", b.ReceiptsFile())
	}
	req, _ := http.NewRequest("DELETE", b.URL()+"/x", nil)
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || string(body) != "down" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	onFile, _ := os.ReadFile(path) // answered: written through already
	got := readReceipts(t, path, onFile)
	if len(got) != 1 || got[0].ID != nil || got[0].Method != "DELETE" || got[0].Headers["x-forwarded-for"] != "10.0.0.1" {
		t.Fatalf("receipts on the file before Close %+v", got)
	}
	if st, err := evidence.ReadFileState(path); err != nil || st.State != evidence.StateOpen {
		t.Fatalf("seal while running %+v %v", st, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := evidence.ReadFileState(path); err != nil || st.State != evidence.StateClosed || st.Records != 1 || st.Bytes != int64(len(onFile)) {
		t.Fatalf("seal after Close %+v %v", st, err)
	}
	if _, err := Start(t.Context(), Options{ReceiptsFile: path, Receipts: io.Discard}); err == nil {
		t.Error("ReceiptsFile and Receipts both accepted")
	}
}

func TestBadOptions(t *testing.T) {
	for _, st := range []int{42, 101, 199, 1000} {
		if _, err := Start(context.Background(), Options{Status: st}); err == nil {
			t.Errorf("status %d accepted", st)
		}
	}
	if _, err := Start(context.Background(), Options{Listen: "256.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "256.0.0.1:0") {
		t.Errorf("bad listen error %v", err)
	}
}

func TestContextCancelCloses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var sink syncBuf
	b, err := Start(ctx, Options{Receipts: &sink})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(b.URL() + "/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	// Close after cancel waits for the cancel-triggered close; the line was flushed.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readReceipts(t, "sink", []byte(sink.String())); len(got) != 1 {
		t.Fatalf("%d receipts after cancel", len(got))
	}
}

// TestEndpointsOnConsecutivePorts: with a fixed first port the endpoints
// take the next ones; a port that does not fit is refused before any bind.
func TestEndpointsOnConsecutivePorts(t *testing.T) {
	base := testfix.FreePortSpan(t, 3)
	b, err := Start(t.Context(), Options{Listen: fmt.Sprintf("127.0.0.1:%d", base), Endpoints: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, ep := range b.Endpoints() {
		if want := fmt.Sprintf("http://127.0.0.1:%d", base+i); ep.URL != want {
			t.Errorf("%s: %s, want %s", ep.Name, ep.URL, want)
		}
	}
	if _, err := Start(t.Context(), Options{Listen: "127.0.0.1:65535", Endpoints: 2}); err == nil || !strings.Contains(err.Error(), "room for 2 endpoint(s)") {
		t.Errorf("65535 with 2 endpoints: %v", err)
	}
}
