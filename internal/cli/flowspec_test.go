package cli

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestParseFlowSpec: every key of a --flow spec, and every error, quoting
// the spec and naming the bad part.
func TestParseFlowSpec(t *testing.T) {
	got, err := ParseFlowSpec(" name=B , rate=20/1s,duration=5s,header=x-user: B,header=x-plan:free,split=weights=2:1,seed=3,method=post,path=/p,body=x,concurrency=2,no-keepalive,id-prefix=b,,")
	want := FlowSpec{Name: "B", Rate: vegeta.Rate{Freq: 20, Per: time.Second}, Duration: 5 * time.Second, IDs: 100, IDPrefix: "b",
		Header: http.Header{"X-User": {"B"}, "X-Plan": {"free"}}, Split: attack.Split{Mode: attack.SplitWeights, Values: []int{2, 1}},
		Seed: 3, Method: "post", Path: "/p", Body: "x", Concurrency: 2, NoKeepAlive: true}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v\nwant %+v", got, err, want)
	}
	if got, err := ParseFlowSpec("name=C,ids-file=c.txt,no-keepalive=false"); err != nil || got.IDsFile != "c.txt" || got.NoKeepAlive || got.IDs != 0 {
		t.Errorf("ids-file: %+v, %v", got, err)
	}
	for _, c := range []struct{ spec, want string }{
		{"name=A,ids", `flow "name=A,ids": "ids": want key=value`},
		{"name=A,ids=0", `flow "name=A,ids=0": "ids=0": want a count > 0`},
		{"name=A,ids=x", `flow "name=A,ids=x": "ids=x": want a count > 0`},
		{"name=A,rate=fast", `flow "name=A,rate=fast": "rate=fast": rate "fast": want N/duration`},
		{"name=A,duration=-1s", `flow "name=A,duration=-1s": "duration=-1s": want a positive duration such as 5s`},
		// A header without a colon may be a value alone: it is not quoted (issue 27).
		{"name=A,header=nocolon", `flow "name=A,header=xxxxx": "header=xxxxx": header "xxxxx": want "Name: value"`},
		{"name=A,ids=2,split=thirds", `flow "name=A,ids=2,split=thirds": "split=thirds": split "thirds"`},
		{"name=A,ids=2,split=counts=1:x", `(values separated by ':', e.g. weights=60:30:10)`},
		{"name=A,ids=2,seed=1.5", `flow "name=A,ids=2,seed=1.5": "seed=1.5": want an integer`},
		{"name=A,ids=2,concurrency=-1", `flow "name=A,ids=2,concurrency=-1": "concurrency=-1": want a count >= 0`},
		{"name=A,ids=2,no-keepalive=maybe", `flow "name=A,ids=2,no-keepalive=maybe": "no-keepalive=maybe": want true or false`},
		{"name=A,ids=2,speed=3", `flow "name=A,ids=2,speed=3": "speed=3": unknown key "speed" (name, ids, id-prefix, ids-file, rate, duration, method, path, header, body, split, seed, concurrency, no-keepalive)`},
		{"ids=2", `flow "ids=2": name=NAME is required`},
		{"name=A,duration=5s", `flow "name=A,duration=5s": duration needs a rate (the IDs are rate x duration)`},
		{"name=A,ids=2,ids-file=f", `flow "name=A,ids=2,ids-file=f": give one of ids=N, ids-file=FILE or duration=D (with rate)`},
		{"name=A", `flow "name=A": give one of ids=N, ids-file=FILE or duration=D (with rate)`},
		{"name=A,rate=1/1h,duration=1s", `flow "name=A,rate=1/1h,duration=1s": rate 1/1h0m0s over 1s is no request`},
		{"name=A,ids=10000001", `flow "name=A,ids=10000001": more than 10000000 ids`},
		// The first bad part wins, before the spec is checked as a whole.
		{"ids=0,speed=1", `flow "ids=0,speed=1": "ids=0": want a count > 0`},
	} {
		if _, err := ParseFlowSpec(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.spec, err, c.want)
		}
	}
}

// FuzzParseFlowSpec: a spec is refused with an error quoting it, or
// accepted with a name and one source of IDs, at most attack.MaxIDs.
func FuzzParseFlowSpec(f *testing.F) {
	for _, s := range []string{"name=A,ids=3", "name=B,rate=20/1s,duration=5s,header=x-user: B,split=weights=2:1", "name=C,ids-file=c.txt,no-keepalive",
		"name=A,ids=2,speed=3", "name=A,rate=1/1h,duration=1s", "ids=9223372036854775807,name=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := ParseFlowSpec(s)
		if err != nil {
			// The spec is quoted as redactFlowSpec shows it: a header
			// without ":" is all value, so it is masked ("header=0" is
			// quoted "header=xxxxx"); a part without credentials is
			// quoted as given.
			if !strings.HasPrefix(err.Error(), fmt.Sprintf("flow %q", redactFlowSpec(s))) {
				t.Fatalf("error %q does not quote the spec", err)
			}
			return
		}
		if fs.Name == "" || countTrue(fs.IDs > 0 && fs.Duration == 0, fs.IDsFile != "", fs.Duration > 0) != 1 || fs.IDs > attack.MaxIDs || fs.Concurrency < 0 {
			t.Fatalf("accepted %q as %+v", s, fs)
		}
		if fs.Duration > 0 && fs.IDs != attack.DurationIDs(fs.Rate, fs.Duration) {
			t.Fatalf("accepted %q with %d ids, want rate x duration", s, fs.IDs)
		}
	})
}
