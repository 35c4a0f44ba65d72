// Package events is rlbench's event stream: JSON Lines that `rlbench run`
// and `rlbench attack --events FILE|-` write while they run, for
// dashboards and pipelines that want more than the report at the end.
//
// Every line is one Event ("schema": "rlbench.event/v1", schemas/event.v1.schema.json):
// a sequence number (1, 2, ... in write order), a timestamp and a Type
// with its object: started, progress (every second per attack, from the
// attack's live counters, attack.Progress), fault_begin and fault_end,
// verdict (one per scenario repeat, after the analysis) and finished.
//
// A Sink writes them. It never prints on its own: the caller gives it the
// writer (a file, or standard output with `--events -`), and each event is
// one Write of one whole line, flushed when the writer can flush, from the
// sink's own goroutine: emitting never waits for the reader. Progress is
// read by a ticker goroutine (Follow) from the attack's atomic counters,
// so writing events never runs on the attack's send path.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// Schema is the schema ID of every event line; its file is schemas/event.v1.schema.json.
const Schema = "rlbench.event/v1"

// Event types (Event.Type).
const (
	TypeStarted    = "started"
	TypeProgress   = "progress"
	TypeFaultBegin = "fault_begin"
	TypeFaultEnd   = "fault_end"
	TypeVerdict    = "verdict"
	TypeFinished   = "finished"
)

// Types lists the event types in the order a run writes them.
var Types = []string{TypeStarted, TypeProgress, TypeFaultBegin, TypeFaultEnd, TypeVerdict, TypeFinished}

// Event is one line of the stream. Exactly the object named by Type is
// set (Started for "started", and so on).
type Event struct {
	// Schema is "rlbench.event/v1" (Schema); the version is its suffix.
	Schema string `json:"schema"`
	// Seq numbers the events of one stream 1, 2, ... in write order.
	Seq int64 `json:"seq"`
	// Time is when the event was written, RFC 3339 with nanoseconds, UTC.
	Time string `json:"time"`
	// Type is one of started, progress, fault_begin, fault_end, verdict, finished.
	Type string `json:"type"`
	// RunID names the run: the run directory's name for `rlbench run`,
	// the --out directory's for `rlbench attack`.
	RunID    string    `json:"run_id,omitempty"`
	Started  *Started  `json:"started,omitempty"`
	Progress *Progress `json:"progress,omitempty"`
	Fault    *Fault    `json:"fault,omitempty"`
	Verdict  *Verdict  `json:"verdict,omitempty"`
	Finished *Finished `json:"finished,omitempty"`
}

// Started opens a stream.
type Started struct {
	// Command is "run" or "attack".
	Command string `json:"command"`
	// Plan is the plan's name and PlanFile its file (run only).
	Plan     string `json:"plan,omitempty"`
	PlanFile string `json:"plan_file,omitempty"`
	// Dir is the run directory (run) or evidence directory (attack, --out).
	Dir string `json:"dir,omitempty"`
	// Scenarios are the plan's scenario names, in order (run only).
	Scenarios []string `json:"scenarios,omitempty"`
}

// Progress is one attack's live counts at one instant.
type Progress struct {
	// Scenario, Repeat and Step name the attack within a run (empty for
	// `rlbench attack`).
	Scenario string `json:"scenario,omitempty"`
	Repeat   int    `json:"repeat,omitempty"`
	Step     string `json:"step,omitempty"`
	// Started is false while connections are being warmed; Done is set on
	// the last progress event of an attack, whose counts are exact.
	Started bool `json:"started"`
	Done    bool `json:"done"`
	// ElapsedSeconds is the time since the attack's start.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Total is the IDs the attack sends; Recorded those with a result
	// line; Sent those of them that left the client; NotSent the others;
	// InFlight those sent without a result yet.
	Total    int `json:"total"`
	Recorded int `json:"recorded"`
	Sent     int `json:"sent"`
	NotSent  int `json:"not_sent"`
	InFlight int `json:"in_flight"`
	// PerSec is the achieved rate, Recorded / ElapsedSeconds.
	PerSec float64 `json:"per_sec"`
	// PacingErrorNs are the quantiles (ns) of the paced sends' lateness
	// so far (SentNs - IntendedNs, evidence.AttackPacing.ErrorNs at the
	// end); absent without paced sends.
	PacingErrorNs *evidence.AttackQuantiles `json:"pacing_error_ns,omitempty"`
	// Targets are the counts per attack target.
	Targets []TargetProgress `json:"targets"`
}

// TargetProgress is one target's counts in a Progress.
type TargetProgress struct {
	Target   string `json:"target"`
	Sent     int    `json:"sent"`
	NotSent  int    `json:"not_sent"`
	InFlight int    `json:"in_flight"`
	// Classes counts the responses per response class (evidence.Class
	// names: admitted, local_429, ..., no_response); classes without
	// responses are left out.
	Classes map[string]int `json:"classes"`
	// PerSec is the target's achieved rate, Sent / ElapsedSeconds.
	PerSec float64 `json:"per_sec"`
}

// Fault is a fault step's begin or end (evidence.Fault, one line of
// faults.jsonl, when it ends).
type Fault struct {
	Scenario string `json:"scenario,omitempty"`
	Repeat   int    `json:"repeat,omitempty"`
	// Name is the fault step's name; Action and Target as in faults.jsonl.
	Name   string `json:"name"`
	Action string `json:"action"`
	Target string `json:"target"`
	// BeginNs is when the action began (unix ns); EndNs when it ended
	// (fault_end only).
	BeginNs int64 `json:"begin_ns"`
	EndNs   int64 `json:"end_ns,omitempty"`
	// WindowNs is the length of a timed fault window (a set with for:),
	// which a clear of the same name ends; 0 otherwise.
	WindowNs int64 `json:"window_ns,omitempty"`
	// OK and Error are the action's outcome (fault_end only).
	OK    *bool  `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}

// Verdict is one scenario repeat's outcome, as the analysis judged it.
type Verdict struct {
	Scenario string `json:"scenario"`
	Repeat   int    `json:"repeat"`
	// Dir is the scenario repeat's evidence directory.
	Dir string `json:"dir"`
	// Status is PASS, FAIL or NOT_RUN.
	Status string `json:"status"`
	// Admitted counts the requests that passed every limiter
	// (report.Classes.Passed); NoResponse those without a response, which
	// may have passed too.
	Admitted   int `json:"admitted"`
	NoResponse int `json:"no_response"`
	// Bound is the largest admitted count the configuration allows
	// (report.Bound.Allowed); absent when none is known.
	Bound *int `json:"bound,omitempty"`
	// ModelMin and ModelMax are what the limiters' models admit
	// (report.ModelBound); absent when they cannot tell.
	ModelMin *int `json:"model_min,omitempty"`
	ModelMax *int `json:"model_max,omitempty"`
	// Reasons explain a FAIL or NOT_RUN (report.ScenarioReport.Reasons).
	Reasons []string `json:"reasons,omitempty"`
}

// Finished closes a stream.
type Finished struct {
	// Status is the run's verdict (PASS, FAIL or NOT_RUN; absent for
	// `rlbench attack`, which judges nothing).
	Status string `json:"status,omitempty"`
	// ExitCode is the process's exit code (README "Exit codes").
	ExitCode int `json:"exit_code"`
	// StatusFile is the status.txt written (run only).
	StatusFile string `json:"status_file,omitempty"`
	// Dir is the run or evidence directory.
	Dir string `json:"dir,omitempty"`
	// Error is the error that ended the command, if any.
	Error string `json:"error,omitempty"`
}

// flusher is a writer that buffers (bufio.Writer).
type flusher interface{ Flush() error }

// MaxQueued bounds the events a Sink holds for a reader that does not
// keep up; events beyond it are dropped and Close reports how many.
const MaxQueued = 1 << 16

// Sink writes events to a writer, one line per Write, from a goroutine of
// its own: Emit numbers, stamps and encodes the event and queues it, and
// never waits for the writer (a reader of `--events -` that stalls holds
// up neither an attack nor a fault's timing). Close writes what is queued
// and returns the first write error. Its methods are safe for concurrent
// use, and do nothing on a nil *Sink (no --events). After a write error
// nothing more is written.
type Sink struct {
	mu      sync.Mutex
	w       io.Writer
	seq     int64
	now     func() time.Time
	runID   string
	err     error
	queue   [][]byte
	dropped int
	closed  bool
	wake    chan struct{} // cap 1: the queue has lines
	done    chan struct{} // closed when the writer goroutine has ended
}

// NewSink returns a sink writing to w. now is the clock of the events'
// Time (time.Now when nil). Close it.
func NewSink(w io.Writer, now func() time.Time) *Sink {
	if now == nil {
		now = time.Now
	}
	s := &Sink{w: w, now: now, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.write()
	return s
}

// write writes the queued lines until Close, each with one Write and a
// Flush when the writer has one.
func (s *Sink) write() {
	defer close(s.done)
	for {
		s.mu.Lock()
		lines, closed, failed := s.queue, s.closed, s.err != nil
		s.queue = nil
		s.mu.Unlock()
		for _, l := range lines {
			if failed {
				break
			}
			_, err := s.w.Write(l)
			if f, ok := s.w.(flusher); ok && err == nil {
				err = f.Flush()
			}
			if err != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = err
				}
				s.mu.Unlock()
				failed = true
			}
		}
		if closed && len(lines) == 0 {
			return
		}
		if len(lines) == 0 {
			<-s.wake
		}
	}
}

// SetRunID sets the run_id of the events emitted after it.
func (s *Sink) SetRunID(id string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.runID = id
	s.mu.Unlock()
}

// errType is the error of an event whose Type is unknown or whose object
// does not match it.
var errType = errors.New("events: the event's object does not match its type")

// errClosed is Emit's error after Close.
var errClosed = errors.New("events: the sink is closed")

// Emit queues e with its Schema, Seq, Time and RunID filled in (a RunID
// already set is kept). It returns an error for an event that does not
// match its type, after Close, or once a write has failed (then nothing
// more is written); it never waits for the writer.
func (s *Sink) Emit(e Event) error {
	if s == nil {
		return nil
	}
	if !matches(&e) {
		return errType
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.closed:
		return errClosed
	}
	s.seq++
	e.Schema, e.Seq, e.Time = Schema, s.seq, s.now().UTC().Format(time.RFC3339Nano)
	if e.RunID == "" {
		e.RunID = s.runID
	}
	b, err := json.Marshal(&e)
	if err != nil {
		return err
	}
	if len(s.queue) >= MaxQueued {
		s.dropped++
		return nil
	}
	s.queue = append(s.queue, append(b, '\n'))
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// Err returns the first write error so far, or nil.
func (s *Sink) Err() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close writes the queued events, stops the writer and returns the first
// write error, or an error counting the events dropped for a reader that
// did not keep up. Later calls return the same.
func (s *Sink) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.dropped > 0 {
		return fmt.Errorf("events: %d events dropped: the reader did not keep up (more than %d queued)", s.dropped, MaxQueued)
	}
	return s.err
}

// matches reports whether exactly the object of e.Type is set.
func matches(e *Event) bool {
	set := map[string]bool{TypeStarted: e.Started != nil, TypeProgress: e.Progress != nil, TypeFaultBegin: e.Fault != nil,
		TypeFaultEnd: e.Fault != nil, TypeVerdict: e.Verdict != nil, TypeFinished: e.Finished != nil}
	want, ok := set[e.Type]
	if !ok || !want {
		return false
	}
	n := 0
	for _, p := range []bool{e.Started != nil, e.Progress != nil, e.Fault != nil, e.Verdict != nil, e.Finished != nil} {
		if p {
			n++
		}
	}
	return n == 1
}
