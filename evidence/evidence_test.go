package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriterConcurrentLinesAllArrive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if err := w.Write(Request{ID: fmt.Sprintf("g%d-%d", g, i), Code: 200}); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = ReadFile(p, func(line int, r *Request) error {
		if seen[r.ID] {
			return fmt.Errorf("line %d: %s twice", line, r.ID)
		}
		seen[r.ID] = true
		return nil
	})
	if err != nil || len(seen) != 4000 {
		t.Fatalf("err %v, %d distinct lines", err, len(seen))
	}
	if err := w.Write(Request{ID: "late"}); err == nil {
		t.Fatal("write after Close succeeded")
	}
}

// TestWriterFlushesPeriodically checks that a buffered line reaches the
// file at the flush loop's next tick, without Close: the test drives the
// ticks (a tick sent on the unbuffered channel is taken only when the
// loop waits again, so after the second send the first tick's flush is
// done).
func TestWriterFlushesPeriodically(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	ticks := make(chan time.Time)
	w := newWriter(f, ticks)
	defer w.Close()
	if err := w.Write(Receipt{RecvNs: 1}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); len(b) != 0 {
		t.Fatalf("line %q on the file before a flush: the writer is not buffered", b)
	}
	ticks <- time.Time{}
	ticks <- time.Time{}
	b, _ := os.ReadFile(p)
	if !bytes.HasSuffix(b, []byte("\n")) || !strings.Contains(string(b), `"id":null`) {
		t.Fatalf("after a tick the file holds %q, want the line (id null)", b)
	}
}

func TestReadLinesErrors(t *testing.T) {
	in := "{\"id\":\"a\"}\n\n{\"id\":\"b\"}\n{\"id\": 3}\n"
	err := ReadLines(strings.NewReader(in), "req.jsonl", func(int, *Request) error { return nil })
	var le *LineError
	if !errors.As(err, &le) || le.Line != 4 || le.Truncated || !strings.HasPrefix(err.Error(), "req.jsonl:4: ") {
		t.Fatalf("err %v", err)
	}
	err = ReadLines(strings.NewReader("{\"id\":\"a\"}\n{\"id\":\"b"), "req.jsonl", func(int, *Request) error { return nil })
	if !errors.As(err, &le) || le.Line != 2 || !le.Truncated || !strings.Contains(err.Error(), "req.jsonl:2: truncated last line") {
		t.Fatalf("err %v", err)
	}
	// A last line without newline that is complete JSON is fine.
	n := 0
	if err := ReadLines(strings.NewReader("{\"id\":\"a\"}\n{\"id\":\"b\"}"), "r", func(int, *Request) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("err %v n %d", err, n)
	}
	// Lines longer than the reader's buffer are read whole.
	long := strings.Repeat("x", 600<<10)
	var got string
	if err := ReadLines(strings.NewReader(`{"id":"`+long+"\"}\n"), "r", func(_ int, r *Request) error { got = r.ID; return nil }); err != nil || got != long {
		t.Fatalf("long line: err %v len %d", err, len(got))
	}
}

func TestRangeForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Range
		err  bool
	}{
		{`10`, Range{10, 10}, false},
		{`"10"`, Range{10, 10}, false},
		{`"5..10"`, Range{5, 10}, false},
		{`" 5 .. 10 "`, Range{5, 10}, false},
		{`"-5..3"`, Range{-5, 3}, false},
		{`{"min":2,"max":4}`, Range{2, 4}, false},
		{`"10..5"`, Range{}, true},
		{`{"min":4,"max":2}`, Range{}, true},
		{`{"min":4}`, Range{}, true},
		{`"ten"`, Range{}, true},
		{`true`, Range{}, true},
	} {
		var r Range
		err := json.Unmarshal([]byte(tc.in), &r)
		if (err != nil) != tc.err || (!tc.err && r != tc.want) {
			t.Errorf("%s: got %v, %v; want %v (error %v)", tc.in, r, err, tc.want, tc.err)
		}
	}
	if s := (Range{5, 10}).String(); s != "5..10" {
		t.Errorf("String = %q", s)
	}
	if s := Exact(3).String(); s != "3" {
		t.Errorf("String = %q", s)
	}
}

// TestRangeCovers: a range covers another when it holds each of its values.
func TestRangeCovers(t *testing.T) {
	for _, tc := range []struct {
		r, o Range
		want bool
	}{
		{Range{0, 1000000000}, Range{0, 20}, true},
		{Range{0, 20}, Range{0, 20}, true},
		{Exact(20), Exact(20), true},
		{Range{0, 19}, Range{0, 20}, false},
		{Range{1, 20}, Range{0, 20}, false},
		{Exact(10), Range{0, 20}, false},
		{Range{5, 10}, Range{6, 9}, true},
	} {
		if got := tc.r.Covers(tc.o); got != tc.want {
			t.Errorf("%v covers %v = %v, want %v", tc.r, tc.o, got, tc.want)
		}
	}
}
