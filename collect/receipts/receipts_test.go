package receipts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
)

func TestFetchFromBackend(t *testing.T) {
	ctx := context.Background()
	be, err := backend.Start(ctx, backend.Options{Replica: "replica-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for i := range 5 {
		req, _ := http.NewRequest(http.MethodGet, be.URL()+"/x", nil)
		req.Header.Set(evidence.IDHeader, fmt.Sprint("id-", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	u, err := ReceiptsURL(be.URL())
	if err != nil || !strings.HasSuffix(u, evidence.ReceiptsPath) {
		t.Fatalf("ReceiptsURL = %q, %v", u, err)
	}
	dir := evidence.Dir(t.TempDir())
	path := dir.CollectedReceipts(SourceName(u))
	w, err := evidence.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fetch(ctx, u, w, Options{})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Receipts != 5 || len(res.Replicas) != 1 || res.Replicas[0] != "replica-a" {
		t.Fatalf("result %+v: want 5 receipts of replica-a", res)
	}
	var ids []string
	if err := evidence.ReadFile(path, func(_ int, rc *evidence.Receipt) error {
		ids = append(ids, *rc.ID)
		if rc.Replica != "replica-a" {
			t.Errorf("receipt %s: replica %q", *rc.ID, rc.Replica)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "id-0,id-1,id-2,id-3,id-4" {
		t.Fatalf("ids %v", ids)
	}
	st, err := evidence.ReadFileState(path)
	if err != nil || st.State != evidence.StateClosed || st.Records != 5 {
		t.Fatalf("seal %+v, %v", st, err)
	}
	if got := filepath.Base(path); strings.ContainsAny(strings.TrimSuffix(got, ".jsonl"), ".:") {
		t.Fatalf("source file name %q is not a simple name", got)
	}
}

func TestFetchErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bad/_rlbench/receipts":
			fmt.Fprint(w, `{"id":"a","recv_ns":1}`+"\n"+`{"id":"b",`+"\n")
		case "/norecv/_rlbench/receipts":
			fmt.Fprint(w, `{"id":"a"}`+"\n")
		case "/big/_rlbench/receipts":
			fmt.Fprint(w, strings.Repeat(`{"id":"a","recv_ns":1}`+"\n", 100))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	withUser := strings.Replace(srv.URL, "http://", "http://u:secret@", 1)
	cases := []struct {
		path, want string
		max        int64
	}{
		{"/bad/_rlbench/receipts", ":2:", 0},
		{"/norecv/_rlbench/receipts", ":1: not a receipt", 0},
		{"/missing/_rlbench/receipts", "404", 0},
		{"/big/_rlbench/receipts", "larger than 100 bytes", 100},
	}
	for _, c := range cases {
		w := evidence.NewWriter(&strings.Builder{})
		_, err := Fetch(context.Background(), withUser+c.path, w, Options{MaxBytes: c.max})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.path, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "u:xxxxx@") {
			t.Errorf("%s: error %q must name the URL with its password redacted", c.path, err)
		}
		var le *evidence.LineError
		if c.path == "/bad/_rlbench/receipts" && (!errors.As(err, &le) || le.Line != 2) {
			t.Errorf("bad line: %v is not a LineError of line 2", err)
		}
	}
	if _, err := ReceiptsURL("ftp://x"); err == nil {
		t.Error("ftp URL accepted")
	}
}
