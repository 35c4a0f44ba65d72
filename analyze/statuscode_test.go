package analyze

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestImpossibleResponseCode (issue 27): a requests.jsonl code that no
// client can record (negative, below 100 but not 0, above 999) was clamped
// into a class, 65736 read as 65535 (other 5xx) and -429 as 0 (no
// response), and the access log's disagreement with it made the scenario
// FAIL. Such a line is now bad evidence naming the file, the line and the
// code: NOT_RUN, never FAIL. 0, 100 and 999 still load (the demo with
// them is judged, not refused).
func TestImpossibleResponseCode(t *testing.T) {
	for _, c := range []struct {
		code int
		bad  bool
	}{{65736, true}, {-429, true}, {99, true}, {1000, true}, {0, false}, {100, false}, {999, false}} {
		t.Run(fmt.Sprint(c.code), func(t *testing.T) {
			e := newEv(t).demo()
			e.requests[3].Code = c.code
			s := run(t, e.write()).Scenarios[0]
			want := fmt.Sprintf("requests.jsonl:4: code %d: not an HTTP status (0 for no response, else 100..999)", c.code)
			if c.bad {
				wantVerdict(t, s, evidence.NotRun, want)
				return
			}
			if strings.Contains(reasons(s), "not an HTTP status") {
				t.Errorf("code %d refused: %s", c.code, reasons(s))
			}
		})
	}
}
