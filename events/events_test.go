package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

// TestEveryTypeValidates: one event of every type, as a run writes them,
// validates against schemas/event.v1.schema.json line by line, with seq
// 1, 2, ... and the run ID set once.
func TestEveryTypeValidates(t *testing.T) {
	var buf bytes.Buffer
	s := NewSink(&buf, fixedClock())
	s.SetRunID("20260102T030405Z-1")
	ok := true
	two := 2
	sn := attack.ProgressSnapshot{Total: 4, Started: true, Elapsed: time.Second, Recorded: 3, Sent: 3, InFlight: 1,
		PacingErrorNs: evidence.AttackQuantiles{N: 3, P50: 10, P90: 20, P99: 30, Max: 40},
		Targets:       []attack.TargetProgress{{Name: "proxy-a", Recorded: 3, Sent: 3, InFlight: 1, PerSec: 3}}}
	sn.Targets[0].Classes[evidence.ClassAdmitted] = 2
	sn.Targets[0].Classes[evidence.ClassLocal429] = 1
	for _, e := range []Event{
		{Type: TypeStarted, Started: &Started{Command: "run", Plan: "p", PlanFile: "plan.yaml", Scenarios: []string{"a"}}},
		{Type: TypeProgress, Progress: ProgressOf(sn, Progress{Scenario: "a", Repeat: 1, Step: "attack"})},
		{Type: TypeFaultBegin, Fault: &Fault{Scenario: "a", Repeat: 1, Name: "stop-rls", Action: "stop", Target: "rls", BeginNs: 1}},
		{Type: TypeFaultEnd, Fault: &Fault{Scenario: "a", Repeat: 1, Name: "stop-rls", Action: "stop", Target: "rls", BeginNs: 1, EndNs: 2, OK: &ok}},
		{Type: TypeVerdict, Verdict: &Verdict{Scenario: "a", Repeat: 1, Dir: "d", Status: evidence.Fail, Admitted: 3, Bound: &two, Reasons: []string{"over"}}},
		{Type: TypeFinished, Finished: &Finished{Status: evidence.Fail, ExitCode: 3, StatusFile: "d/status.txt"}},
	} {
		if err := s.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := schemas.ValidateLines(schemas.Event, buf.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Seq != int64(i+1) || e.Schema != Schema || e.RunID != "20260102T030405Z-1" || e.Type != Types[i] {
			t.Errorf("line %d: %s", i+1, l)
		}
	}
	if !strings.Contains(lines[1], `"classes":{"admitted":2,"local_429":1}`) {
		t.Errorf("progress line without its classes: %s", lines[1])
	}
}

// TestSchemaRejectsMismatch: the schema refuses an event whose object is
// not its type's, and Emit refuses to write one.
func TestSchemaRejectsMismatch(t *testing.T) {
	bad := `{"schema":"rlbench.event/v1","seq":1,"time":"2026-01-02T03:04:05Z","type":"finished","started":{"command":"run"}}`
	if err := schemas.Validate(schemas.Event, []byte(bad)); err == nil {
		t.Error("a finished event carrying started validates")
	}
	var buf bytes.Buffer
	s := NewSink(&buf, nil)
	if err := s.Emit(Event{Type: TypeFinished, Started: &Started{Command: "run"}}); !errors.Is(err, errType) {
		t.Errorf("mismatched event: err %v", err)
	}
	if err := s.Emit(Event{Type: "begun", Started: &Started{Command: "run"}}); !errors.Is(err, errType) {
		t.Errorf("unknown type: err %v", err)
	}
	if err := s.Close(); err != nil || buf.Len() != 0 {
		t.Errorf("close: %v, wrote %q", err, buf.String())
	}
	if err := s.Emit(Event{Type: TypeStarted, Started: &Started{Command: "run"}}); !errors.Is(err, errClosed) {
		t.Errorf("emit after close: %v", err)
	}
}

// failWriter fails every write.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) { f.n++; return 0, errors.New("disk full") }

// TestSinkStickyErrorAndFlush: the first write error sticks (nothing more
// is written, Close returns it), and a buffered writer is flushed after
// every line.
func TestSinkStickyErrorAndFlush(t *testing.T) {
	fw := &failWriter{}
	s := NewSink(fw, nil)
	st := Event{Type: TypeStarted, Started: &Started{Command: "attack"}}
	if err := s.Emit(st); err != nil {
		t.Fatal(err)
	}
	_ = s.Emit(st)
	if err := s.Close(); err == nil || s.Err() == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("write error not returned: %v", err)
	}
	if fw.n != 1 {
		t.Errorf("%d writes after an error, want 1", fw.n)
	}
	if err := s.Emit(st); err == nil {
		t.Error("emit after a write error")
	}
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 1<<16)
	s = NewSink(bw, nil)
	if err := s.Emit(st); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "}\n") {
		t.Errorf("line not flushed: %q", out.String())
	}
	var nilSink *Sink
	if nilSink.Emit(st) != nil || nilSink.Err() != nil {
		t.Error("nil sink")
	}
	nilSink.Follow(new(attack.Progress), Progress{})()
}

// TestFollowTicks: each tick writes one progress event of the attack's
// counters, and stop writes the last one; injected ticks, no wall clock.
func TestFollowTicks(t *testing.T) {
	var buf bytes.Buffer
	s := NewSink(&buf, fixedClock())
	tick := make(chan time.Time)
	halted := false
	stop := s.follow(new(attack.Progress), Progress{Scenario: "a", Repeat: 1, Step: "burst"}, tick, func() { halted = true })
	tick <- time.Time{}
	tick <- time.Time{}
	stop()
	stop() // twice is once
	if !halted {
		t.Error("ticker not stopped")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := schemas.ValidateLines(schemas.Event, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	// The third event (stop's) may only be written after both ticks were
	// taken: three lines, in sequence.
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d progress lines, want 3:\n%s", len(lines), buf.String())
	}
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != TypeProgress || e.Seq != int64(i+1) || e.Progress.Scenario != "a" || e.Progress.Step != "burst" {
			t.Errorf("line %d: %s", i+1, l)
		}
	}
}

// blockedWriter blocks every Write until release is closed.
type blockedWriter struct {
	release chan struct{}
	buf     bytes.Buffer
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.buf.Write(p)
}

// TestEmitNeverWaitsForTheReader: with a reader that does not read (a
// stalled `--events -` pipe), Emit returns at once; Close writes every
// event, in order, once the reader reads again.
func TestEmitNeverWaitsForTheReader(t *testing.T) {
	bw := &blockedWriter{release: make(chan struct{})}
	s := NewSink(bw, nil)
	for i := 0; i < 100; i++ { // each returns although no Write can complete
		if err := s.Emit(Event{Type: TypeProgress, Progress: &Progress{Targets: []TargetProgress{}}}); err != nil {
			t.Fatal(err)
		}
	}
	close(bw.release)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(bw.buf.String(), "\n"), "\n")
	if len(lines) != 100 {
		t.Fatalf("%d lines, want 100", len(lines))
	}
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Seq != int64(i+1) {
			t.Fatalf("line %d: %s (%v)", i+1, l, err)
		}
	}
}
