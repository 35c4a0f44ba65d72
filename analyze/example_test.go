package analyze_test

import (
	"context"
	"fmt"
	"log"

	"github.com/rlbench/rlbench/analyze"
	"github.com/rlbench/rlbench/evidence"
)

// Example loads the run directory `rlbench demo` wrote (two lab proxies
// with local token buckets of 5, 20 IDs) and judges it from memory: Judge
// reads no file, so evidence built in memory can be judged the same way.
// analyze.Analyze does both steps.
func Example() {
	b, err := evidence.Load(context.Background(), "testdata/v1-release/demo")
	if err != nil {
		log.Fatal(err)
	}
	rep := analyze.Judge(b, analyze.Options{})
	for _, s := range rep.Scenarios {
		fmt.Printf("%s: %s (%s)\n", s.Name, s.Status, s.Expectation)
		fmt.Printf("  sent %d, admitted %d, local_429 %d, receipts %d\n",
			s.Totals.Sent, s.Totals.N[evidence.ClassAdmitted], s.Totals.N[evidence.ClassLocal429], s.Receipts.Total)
		for _, t := range s.Targets {
			fmt.Printf("  %s: admitted %d of %d\n", t.Target, t.Classes.N[evidence.ClassAdmitted], t.Classes.Sent)
		}
	}
	fmt.Println("verdict:", rep.Status)
	// Output:
	// two local buckets: PASS (local buckets: 10 admitted)
	//   sent 20, admitted 10, local_429 10, receipts 10
	//   proxy-a: admitted 5 of 10
	//   proxy-b: admitted 5 of 10
	// verdict: PASS
}
