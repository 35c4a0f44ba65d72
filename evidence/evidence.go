// Package evidence defines the on-disk evidence layout that rlbench's
// commands write and analyze reads: file names, the JSON Lines record types,
// a line writer that flushes, and a line reader whose errors name file and line.
//
// Layout of one scenario's evidence directory (see README "Evidence layout"):
//
//	scenario.json                 expectation and limit configuration (Scenario)
//	attack.json                   attack summary (written last; "complete" tells if it ended normally)
//	requests.jsonl                one Request per fired ID
//	receipts.jsonl                one Receipt per request the backend received
//	faults.jsonl                  one Fault per fault action (optional)
//	rls/decisions.jsonl           one Decision per lab RLS decision (optional)
//	stats/<proxy>.<label>.raw     raw Envoy admin /stats body (label: before|after)
//	stats/<proxy>.<label>.json    parsed snapshot (collect.Snapshot)
//	status.txt                    "<scenario> <PASS|FAIL|NOT_RUN> <reason>" lines
package evidence

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"
)

// File names inside an evidence directory.
const (
	ScenarioFile  = "scenario.json"
	AttackFile    = "attack.json"
	RequestsFile  = "requests.jsonl"
	ReceiptsFile  = "receipts.jsonl"
	FaultsFile    = "faults.jsonl"
	DecisionsFile = "rls/decisions.jsonl"
	StatsDir      = "stats"
	StatusFile    = "status.txt"
	ManifestFile  = "manifest.json"
)

// Request is one line of requests.jsonl: the outcome of one fired ID as the
// client saw it. Code 0 means no response was received (dial error, reset,
// timeout); such a request is indeterminate, since it may have reached the backend.
type Request struct {
	ID     string `json:"id"`
	Target string `json:"target"`
	URL    string `json:"url"`
	Method string `json:"method"`
	// SentNs is when the request was handed to the transport, unix ns.
	SentNs int64 `json:"sent_ns"`
	// LatencyNs runs from SentNs until the body was read (or the error), ns.
	LatencyNs int64 `json:"latency_ns"`
	// Code is the HTTP status, 0 when no response arrived.
	Code    int               `json:"code"`
	Error   string            `json:"error,omitempty"`
	BytesIn uint64            `json:"bytes_in"`
	Headers map[string]string `json:"headers,omitempty"`
	// Body holds the first 64 bytes of the response body.
	Body string `json:"body,omitempty"`
	// Phase names the attack (plan step) that sent the request, if any.
	Phase string `json:"phase,omitempty"`
}

// EndNs is the unix ns at which the client stopped waiting for the request.
func (r *Request) EndNs() int64 { return r.SentNs + r.LatencyNs }

// Receipt is one line of receipts.jsonl: a request the backend really received.
// ID is nil when the request carried no X-Rlbench-Id header.
type Receipt struct {
	ID       *string           `json:"id"`
	RecvNs   int64             `json:"recv_ns"`
	RecvTime string            `json:"recv_time"`
	Method   string            `json:"method"`
	Path     string            `json:"path"`
	Query    string            `json:"query,omitempty"`
	Remote   string            `json:"remote"`
	Headers  map[string]string `json:"headers,omitempty"`
}

// Fault is one line of faults.jsonl: a timed fault action (stop, start or
// restart of a component, or a shell command) with its begin and end in unix ns.
type Fault struct {
	Name    string `json:"name"`
	Action  string `json:"action"`
	Target  string `json:"target"`
	BeginNs int64  `json:"begin_ns"`
	EndNs   int64  `json:"end_ns"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	// Phase names the attack phase this fault precedes, if any.
	Phase string `json:"phase,omitempty"`
}

// DescriptorEntry is one key/value pair of a rate limit descriptor
// (envoy.extensions.common.ratelimit.v3.RateLimitDescriptor.Entry).
type DescriptorEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Decision is one line of rls/decisions.jsonl: one descriptor decision of a
// rate limit service. Code is "OK" or "OVER_LIMIT" (envoy.service.ratelimit.v3
// RateLimitResponse.Code), or "ERROR" when the call failed.
type Decision struct {
	TimeNs      int64             `json:"time_ns"`
	Domain      string            `json:"domain"`
	Descriptor  []DescriptorEntry `json:"descriptor"`
	Key         string            `json:"key,omitempty"`
	WindowStart int64             `json:"window_start,omitempty"`
	Current     uint64            `json:"current,omitempty"`
	Limit       uint32            `json:"limit,omitempty"`
	Unit        string            `json:"unit,omitempty"`
	Code        string            `json:"code"`
	Error       string            `json:"error,omitempty"`
}

// Writer writes JSON Lines through a buffer that is flushed at least every
// FlushEvery and on Close. It is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	bw     *bufio.Writer
	c      io.Closer
	stop   chan struct{}
	done   chan struct{}
	err    error
	closed bool
}

// FlushEvery is the longest a written line may stay in a Writer's buffer.
const FlushEvery = 100 * time.Millisecond

// NewWriter returns a Writer on w; if w is an io.Closer, Close closes it.
func NewWriter(w io.Writer) *Writer {
	jw := &Writer{bw: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	if c, ok := w.(io.Closer); ok {
		jw.c = c
	}
	go jw.loop()
	return jw
}

// Create creates (truncating) the file at path, and its parent directories,
// and returns a Writer on it.
func Create(path string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return NewWriter(f), nil
}

func (w *Writer) loop() {
	defer close(w.done)
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}

// Write encodes v as one JSON line.
func (w *Writer) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.WriteRaw(b)
}

// WriteRaw writes b (one JSON document without newline) as one line.
func (w *Writer) WriteRaw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("evidence: write on closed writer")
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
		return err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		w.err = err
	}
	return w.err
}

// Flush writes buffered lines to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || w.closed {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

// Close flushes and closes the writer (and the underlying io.Closer).
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	err := w.Flush()
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// LineError reports a malformed line of an evidence file.
type LineError struct {
	File string
	Line int
	Err  error
	// Truncated is true when the bad line is the last one and lacks its
	// newline: the writer was interrupted mid-line.
	Truncated bool
}

func (e *LineError) Error() string {
	if e.Truncated {
		return fmt.Sprintf("%s:%d: truncated last line: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadLines decodes each line of r as a T and calls fn with it and its line
// number (1-based). Blank lines are skipped. A line that does not decode stops
// the read with a *LineError naming name and the line. Lines may be up to 16 MiB.
func ReadLines[T any](r io.Reader, name string, fn func(line int, v *T) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// Long line: accumulate.
			buf := append([]byte(nil), b...)
			for err == bufio.ErrBufferFull {
				b, err = br.ReadSlice('\n')
				buf = append(buf, b...)
				if len(buf) > 16<<20 {
					return &LineError{File: name, Line: line + 1, Err: errors.New("line longer than 16 MiB")}
				}
			}
			b = buf
		}
		if len(b) == 0 && err == io.EOF {
			return nil
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("%s: %w", name, err)
		}
		line++
		complete := len(b) > 0 && b[len(b)-1] == '\n'
		data := trimSpace(b)
		if len(data) > 0 {
			var v T
			if derr := json.Unmarshal(data, &v); derr != nil {
				return &LineError{File: name, Line: line, Err: derr, Truncated: !complete}
			}
			if ferr := fn(line, &v); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

// ReadFile opens path and calls ReadLines on it, naming errors by path.
func ReadFile[T any](path string, fn func(line int, v *T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return ReadLines(f, path, fn)
}

// Range is an inclusive integer range; Min == Max for an exact value. It is
// rlbench's one range type: expectations, observed counts that are uncertain
// (requests without a response may have been admitted) and over-admission
// (which may be negative) all use it. It marshals as {"min":N,"max":M} and
// unmarshals from that object, from a number N, or from a string "N" or
// "MIN..MAX" (the plan syntax); see ParseRange.
type Range struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Exact returns the range n..n.
func Exact(n int) Range { return Range{Min: n, Max: n} }

// Contains reports whether n lies in r.
func (r Range) Contains(n int) bool { return n >= r.Min && n <= r.Max }

// String returns "N" for an exact range and "MIN..MAX" otherwise.
func (r Range) String() string {
	if r.Min == r.Max {
		return strconv.Itoa(r.Min)
	}
	return strconv.Itoa(r.Min) + ".." + strconv.Itoa(r.Max)
}

var rangeRE = regexp.MustCompile(`^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$`)

// ParseRange parses "N" or "MIN..MAX" (spaces allowed around the numbers).
// It returns an error when the text is neither or when MIN > MAX.
func ParseRange(s string) (Range, error) {
	if m := rangeRE.FindStringSubmatch(s); m != nil {
		lo, err1 := strconv.Atoi(m[1])
		hi, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil {
			return Range{}, fmt.Errorf("range %q: number out of range", s)
		}
		if lo > hi {
			return Range{}, fmt.Errorf("range %q: min > max", s)
		}
		return Range{Min: lo, Max: hi}, nil
	}
	if v, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		return Exact(v), nil
	}
	return Range{}, fmt.Errorf("range %q: want N or MIN..MAX", s)
}

// UnmarshalJSON accepts N, "N", "MIN..MAX" or {"min":MIN,"max":MAX} with
// MIN <= MAX; both fields are required in the object form.
func (r *Range) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*r = Exact(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := ParseRange(s)
		if err != nil {
			return err
		}
		*r = v
		return nil
	}
	var m struct{ Min, Max *int }
	if err := json.Unmarshal(b, &m); err != nil || m.Min == nil || m.Max == nil {
		return fmt.Errorf("range must be N, \"MIN..MAX\" or {min, max}: %s", b)
	}
	if *m.Min > *m.Max {
		return fmt.Errorf("range %s: min > max", b)
	}
	*r = Range{Min: *m.Min, Max: *m.Max}
	return nil
}

// Scenario is scenario.json: what one scenario's evidence is judged against.
type Scenario struct {
	// Schema is "rlbench.scenario/v1".
	Schema      string `json:"schema"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Proxies names the proxies whose stats snapshots are expected under stats/.
	Proxies []string `json:"proxies,omitempty"`
	// IntendedLimit is the admissions the operator meant for the whole backend
	// (e.g. a global 5); over-admission is measured against it.
	IntendedLimit *int        `json:"intended_limit,omitempty"`
	Expect        Expectation `json:"expect"`
	// Limits describes the configured limiters, for the bound the configuration allows.
	Limits []LimitSpec `json:"limits,omitempty"`
	// Repeat is the 1-based repeat index of this run, 0 when not repeated.
	Repeat int `json:"repeat,omitempty"`
	// Faults is the number of fault actions the scenario plans; fewer lines
	// in faults.jsonl make the evidence incomplete.
	Faults int `json:"faults,omitempty"`
	// Cluster is the proxies' upstream (backend) cluster name; when set, its
	// upstream_rq_2xx delta per proxy is compared with that proxy's admissions.
	Cluster string `json:"cluster,omitempty"`
	// RLSDecisions is true when the runner records the rate limit service's
	// decisions (rls/decisions.jsonl); a missing file is then incomplete evidence.
	RLSDecisions bool `json:"rls_decisions,omitempty"`
}

// Expectation is what a scenario must show to PASS. Every set field is a check.
type Expectation struct {
	// Label is a human name for the expectation, e.g. "local buckets: 10 admitted".
	Label string `json:"label,omitempty"`
	// Admitted is the allowed range of 2xx responses over all targets.
	Admitted *Range `json:"admitted,omitempty"`
	// Classes bounds responses per class (see analyze's class names).
	Classes map[string]Range `json:"classes,omitempty"`
	// ReceiptsEqualAdmitted requires every admitted ID to have exactly one
	// receipt and no rejected ID to have one.
	ReceiptsEqualAdmitted bool `json:"receipts_equal_admitted,omitempty"`
	// StatsAgree requires the proxies' counter deltas to agree with the clients.
	StatsAgree bool `json:"stats_agree,omitempty"`
}

// LimitSpec describes one configured limiter for computing the admissions the
// configuration allows over an attack's duration.
type LimitSpec struct {
	// Kind is "token_bucket" (Envoy local rate limit) or "fixed_window" (RLS).
	Kind string `json:"kind"`
	// Buckets is the number of independent buckets (one per Envoy process).
	Buckets       int   `json:"buckets,omitempty"`
	MaxTokens     int   `json:"max_tokens,omitempty"`
	TokensPerFill int   `json:"tokens_per_fill,omitempty"`
	FillInterval  int64 `json:"fill_interval_ns,omitempty"`
	// Limit and Unit are the RLS rate_limit (requests_per_unit, unit).
	Limit int    `json:"limit,omitempty"`
	Unit  string `json:"unit,omitempty"`
	// WindowStart is "aligned" (epoch-aligned, envoyproxy/ratelimit) or "first-hit".
	WindowStart string `json:"window_start,omitempty"`
	// StartNs is when the token buckets were created (proxy start, unix ns):
	// Envoy refills on a timer running from then. Zero when unknown, in which
	// case the bound assumes the worst timer phase.
	StartNs int64 `json:"start_ns,omitempty"`
}
