package backend

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/rlbench/rlbench/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Every receipt the backend writes, with and without faults, validates
// against schemas/receipt.v1.schema.json (additionalProperties: false: an
// undocumented field fails).
func TestReceiptsMatchSchema(t *testing.T) {
	sch, err := schemas.Compile(schemas.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	b, _ := start(t, Options{Endpoints: 2, After: rec.after, Faults: Faults{Latency: &Latency{Dist: LatencyFixed, A: time.Millisecond}}})
	get(t, b.URL()+"/plain?q=1", "a")
	if _, err := b.SetFaults([]int{0}, Faults{ErrorStatus: 503}); err != nil {
		t.Fatal(err)
	}
	get(t, b.URL()+"/err", "b")
	if _, err := b.SetFaults([]int{0}, Faults{ResetProbability: 1}); err != nil {
		t.Fatal(err)
	}
	_, _ = get(t, b.URL()+"/reset", "c")
	resp, err := http.Get(b.Endpoints()[1].URL + "/noid")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	lines := bytes.Split(bytes.TrimSpace(b.Receipts()), []byte("\n"))
	if len(lines) != 4 {
		t.Fatalf("%d receipts", len(lines))
	}
	for _, l := range lines {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(l))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("receipt %s: %v", l, err)
		}
	}
}
