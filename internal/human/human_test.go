package human

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
)

func TestCodes(t *testing.T) {
	got := Codes(map[string]map[string]int{"proxy-b": {"200": 10}, "proxy-a": {"429": 5, "200": 5, "0": 1}, "proxy-c": {}}, 0)
	if want := "proxy-a: 1 × no response, 5 × 200, 5 × 429; proxy-b: 10 × 200"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if got := Codes(nil, 0); got != "none" {
		t.Fatalf("nil: %q", got)
	}
	// Tester report 1, item 15: an attack on a closed port, every request
	// not sent, printed "3 × no response" beside "3 not sent".
	if got, want := Codes(map[string]map[string]int{"a": {"0": 3}}, 3), "a: 3 × not sent"; got != want {
		t.Errorf("all not sent: got %q want %q", got, want)
	}
	if got, want := Codes(map[string]map[string]int{"a": {"0": 2, "200": 1}, "b": {"0": 1}}, 1), "a: 2 × no response or not sent, 1 × 200; b: 1 × no response or not sent (1 of the 3 without a status not sent)"; got != want {
		t.Errorf("mixed: got %q want %q", got, want)
	}
	// One target holds every code 0: the not-sent ones are told apart.
	if got, want := Codes(map[string]map[string]int{"a": {"0": 3, "200": 1}, "b": {"200": 2}}, 1), "a: 2 × no response, 1 × not sent, 1 × 200; b: 2 × 200"; got != want {
		t.Errorf("one target: got %q want %q", got, want)
	}
}

func TestProgress(t *testing.T) {
	s := attack.ProgressSnapshot{Total: 500, Started: true, Recorded: 120, Sent: 119, Answered: 118, NotSent: 1, NoResponse: 1,
		Codes: []attack.CodeCount{{Code: 200, N: 100}, {Code: 429, N: 18}}, PerSec: 40, Left: 9500 * time.Millisecond, Elapsed: 3 * time.Second}
	want := "119/500 sent, 118 answered (200: 100, 429: 18), 1 without response, 1 not sent, 40.0/s, 9.5s left"
	if got := Progress(s); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	s.Done = true
	if got := Progress(s); !strings.HasSuffix(got, ", done in 3s") {
		t.Fatalf("done: %q", got)
	}
	if got := Progress(attack.ProgressSnapshot{Total: 7}); got != "warming connections for 7 requests" {
		t.Fatalf("warming: %q", got)
	}
	for _, l := range []string{Progress(s), Codes(map[string]map[string]int{"a": {"200": 1}}, 0)} {
		if strings.Contains(l, "map[") {
			t.Fatalf("Go map syntax in %q", l)
		}
	}
}
