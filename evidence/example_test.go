package evidence_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/rlbench/rlbench/evidence"
)

// ExampleLoad writes a small scenario directory with the evidence writers
// (what attack.Run and a receipt-recording backend write) and loads it
// into memory in one pass.
func ExampleLoad() {
	tmp, err := os.MkdirTemp("", "evidence-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	d := evidence.Dir(tmp)

	five := 5
	must(evidence.WriteJSONFile(d.Scenario(), &evidence.Scenario{Schema: evidence.ScenarioSchema, Name: "hand-made",
		IntendedLimit: evidence.IntendedPerRun(five), Expect: evidence.Expectation{Admitted: evidence.AdmittedIn(evidence.Range{Min: 1, Max: 1})}}))
	id := "r-1"
	must(evidence.WriteLines(d.Requests(), []evidence.Request{
		{ID: "r-1", Target: "svc", URL: "http://127.0.0.1:1/", Method: "GET", SentNs: 1e18, LatencyNs: 1e6, Code: 200},
		{ID: "r-2", Target: "svc", URL: "http://127.0.0.1:1/", Method: "GET", SentNs: 1e18, LatencyNs: 1e6, Code: 429},
	}))
	must(evidence.WriteLines(d.Receipts(), []evidence.Receipt{{ID: &id, RecvNs: 1e18 + 5e5, Method: "GET", Path: "/"}}))
	// attack.json is written last: its absence means the attack did not finish.
	must(evidence.WriteJSONFile(d.Attack(), evidence.NewAttack(&evidence.AttackSummary{Schema: evidence.AttackSummarySchema,
		Sent: 2, Recorded: 2, Complete: true, StartNs: 1e18, EndNs: 1e18 + 1e6})))

	b, err := evidence.Load(context.Background(), tmp)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range b.Scenarios {
		fmt.Printf("%s: %d requests, %d receipts, attack complete %v, %d problems\n",
			s.Scenario.Name, s.Requests.Len(), s.Receipts.Len(), s.Attack.Complete, len(s.Problems))
		for i := 0; i < s.Requests.Len(); i++ {
			fmt.Printf("  %s %s\n", s.Requests.IDs.ID(i), s.Requests.Class[i])
		}
	}
	// Output:
	// hand-made: 2 requests, 1 receipts, attack complete true, 0 problems
	//   r-1 admitted
	//   r-2 other_4xx
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
