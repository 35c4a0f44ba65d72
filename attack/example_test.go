package attack_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
)

// ExampleRun attacks a backend that records the ID of every request it
// receives and answers the first five with 200, the rest with 429: every
// ID is sent exactly once and has one line in requests.jsonl.
func ExampleRun() {
	var mu sync.Mutex
	received := map[string]int{} // ID -> times received
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received[r.Header.Get(evidence.IDHeader)]++
		n := len(received)
		mu.Unlock()
		if n > 5 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer backend.Close()

	var requests bytes.Buffer // requests.jsonl
	out := evidence.NewWriter(&requests)
	sum, err := attack.Run(context.Background(), attack.Options{
		IDs:     attack.IDs(10, "id"),
		Targets: []attack.Target{{Name: "backend", URL: backend.URL}},
	}, out)
	if err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}
	once := 0
	for _, n := range received {
		if n == 1 {
			once++
		}
	}
	codes := sum.CodesByTarget["backend"]
	fmt.Printf("sent %d, recorded %d, complete %v\n", sum.Sent, sum.Recorded, sum.Complete)
	fmt.Printf("200: %d, 429: %d\n", codes["200"], codes["429"])
	fmt.Printf("requests.jsonl: %d lines; backend: %d IDs, %d received once\n",
		bytes.Count(requests.Bytes(), []byte("\n")), len(received), once)
	// Output:
	// sent 10, recorded 10, complete true
	// 200: 5, 429: 5
	// requests.jsonl: 10 lines; backend: 10 IDs, 10 received once
}
