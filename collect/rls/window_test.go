package rls

import (
	"bufio"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// timeline reads d_timeline.txt: "redis <event> at unix_ns=<ns>".
func timeline(t *testing.T) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	sc := bufio.NewScanner(openFixture(t, "outage-fast/d_timeline.txt"))
	for sc.Scan() {
		head, ns, ok := strings.Cut(sc.Text(), " at unix_ns=")
		if !ok {
			t.Fatalf("timeline line %q", sc.Text())
		}
		v, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[head] = v
	}
	return out
}

// The short Redis outage: the 5 failed calls and 4 dial errors of the text
// log (second 09:42:32-34, 1 s resolution) fall inside [stop, started].
func TestOutageErrorsInWindow(t *testing.T) {
	tl := timeline(t)
	begin, end := tl["redis stop"], tl["redis started"]
	if begin != 1796031752389574152 || end != 1796031755711944400 {
		t.Fatalf("window = [%d, %d]", begin, end)
	}
	l := parseLogFixture(t, "outage-fast/rls-text.log")
	var calls, dials []ErrorLine
	for _, e := range l.Errors {
		switch {
		case e.Kind == ErrorKindCall && e.Class == ClassRedis:
			calls = append(calls, e)
		case e.Kind == ErrorKindRedisConnection:
			dials = append(dials, e)
		}
	}
	in, out := MatchErrorsToWindow(calls, begin, end)
	eqInt(t, "failed calls inside", in, 5)
	eqInt(t, "failed calls outside", out, 0)
	for _, e := range calls {
		// Logged at second ...752: only the resolution puts them in the window.
		if p := Place(e.TimeNs, e.TimeResolutionNs, begin, end); p != Straddles {
			t.Errorf("line %d placement %v, want straddles", e.Line, p)
		}
		if p := Place(e.TimeNs, 1, begin, end); p != Before {
			t.Errorf("line %d at ns resolution: %v, want before", e.Line, p)
		}
	}
	in, out = MatchErrorsToWindow(dials, begin, end)
	eqInt(t, "dial errors inside", in, 4)
	eqInt(t, "dial errors outside", out, 0)
	// Service error at 09:42:30 and decisions after 09:42:36 are outside.
	in, out = MatchErrorsToWindow(l.Errors[:3], begin, end)
	eqInt(t, "early errors inside", in, 0)
	eqInt(t, "early errors outside", out, 3)
	for _, d := range l.Decisions {
		if d.Line >= 421 && Place(d.TimeNs, d.TimeResolutionNs, begin, end) != After {
			t.Errorf("decision line %d not after the outage", d.Line)
		}
	}
	if Place(1796031753000000000, int64(1e9), begin, end) != Inside {
		t.Error("second 753 should be inside")
	}

	// The client saw 3 failed gRPC calls, all inside the window.
	sc := bufio.NewScanner(openFixture(t, "outage-fast/d_outage.jsonl"))
	failed, total := 0, 0
	for sc.Scan() {
		var r struct {
			Start int64  `json:"start_unix_ns"`
			End   int64  `json:"end_unix_ns"`
			Code  string `json:"grpc_code"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		total++
		if r.Code == "Unknown" {
			failed++
			if Place(r.Start, r.End-r.Start+1, begin, end) != Inside {
				t.Errorf("client failure %d..%d not inside", r.Start, r.End)
			}
		}
	}
	eqInt(t, "client calls", total, 8)
	eqInt(t, "client failures", failed, 3)
}
