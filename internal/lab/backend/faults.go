package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// Faults are the injected faults of one backend endpoint. The zero value
// injects nothing. They are decided when a request arrives, in this order,
// and recorded in its receipt (evidence.Receipt Status, Fault, DelayNs):
//
//  1. MaxConcurrent > 0 and that many requests already being answered: the
//     request is over capacity and, by OverCapacity, answered 503 at once
//     (fault "overload") or its connection closed with a reset (fault
//     "refused"). With "refuse", new connections arriving while the
//     endpoint is at capacity are also reset before any request is read
//     (no receipt: nothing was received).
//  2. ResetProbability: the connection is closed with a TCP reset after
//     the request was read, without an answer (fault "reset"), after the
//     latency.
//  3. ErrorStatus with ErrorProbability (nil means always): the answer is
//     ErrorStatus instead of the backend's status (fault "error").
//  4. Latency: the answer (or reset) waits this long; a request waiting
//     counts against MaxConcurrent.
//
// Random draws come from the backend's seeded source (Options.Seed), so a
// run with the same seed and the same arrival order draws the same faults.
type Faults struct {
	// Latency added before answering; nil means none.
	Latency *Latency `json:"latency,omitempty"`
	// ErrorStatus, when non-zero, is answered instead of the backend's
	// status (400..599).
	ErrorStatus int `json:"error_status,omitempty"`
	// ErrorProbability is the share 0..1 of requests answered ErrorStatus;
	// nil means all of them.
	ErrorProbability *float64 `json:"error_probability,omitempty"`
	// MaxConcurrent caps the requests being answered at once; 0 means no cap.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// OverCapacity is OverCapacity503 (default) or OverCapacityRefuse.
	OverCapacity string `json:"over_capacity,omitempty"`
	// ResetProbability is the share 0..1 of requests whose connection is
	// reset after reading them.
	ResetProbability float64 `json:"reset_probability,omitempty"`
}

// Faults.OverCapacity values.
const (
	OverCapacity503    = "503"
	OverCapacityRefuse = "refuse"
)

// IsZero reports whether f injects nothing.
func (f Faults) IsZero() bool {
	return f.Latency == nil && f.ErrorStatus == 0 && f.MaxConcurrent == 0 && f.ResetProbability == 0
}

// Validate checks the statuses, probabilities, cap and latency.
func (f Faults) Validate() error {
	if f.ErrorStatus != 0 && (f.ErrorStatus < 400 || f.ErrorStatus > 599) {
		return fmt.Errorf("backend faults: error_status %d: want 400..599", f.ErrorStatus)
	}
	if p := f.ErrorProbability; p != nil && (*p < 0 || *p > 1 || *p != *p) {
		return fmt.Errorf("backend faults: error_probability %v: want 0..1", *p)
	}
	if f.ErrorProbability != nil && f.ErrorStatus == 0 {
		return errors.New("backend faults: error_probability needs error_status")
	}
	if f.ResetProbability < 0 || f.ResetProbability > 1 || f.ResetProbability != f.ResetProbability {
		return fmt.Errorf("backend faults: reset_probability %v: want 0..1", f.ResetProbability)
	}
	if f.MaxConcurrent < 0 {
		return fmt.Errorf("backend faults: max_concurrent %d is negative", f.MaxConcurrent)
	}
	switch f.OverCapacity {
	case "", OverCapacity503, OverCapacityRefuse:
	default:
		return fmt.Errorf("backend faults: over_capacity %q: want %s or %s", f.OverCapacity, OverCapacity503, OverCapacityRefuse)
	}
	if f.OverCapacity != "" && f.MaxConcurrent == 0 {
		return errors.New("backend faults: over_capacity needs max_concurrent")
	}
	if f.Latency != nil {
		return f.Latency.validate()
	}
	return nil
}

// String is f in JSON, for fault records and logs.
func (f Faults) String() string {
	b, _ := json.Marshal(f)
	return string(b)
}

// Latency distributions of Latency.Dist.
const (
	LatencyFixed       = "fixed"
	LatencyUniform     = "uniform"
	LatencyExponential = "exp"
	LatencyNormal      = "normal"
)

// Latency is an added delay, fixed or drawn per request from a
// distribution. Its text form (ParseLatency, the JSON form too) is one of
//
//	50ms                   fixed
//	uniform:10ms..50ms     uniform in [min, max)
//	exp:20ms               exponential with that mean
//	normal:50ms,10ms       normal with mean and standard deviation, below 0 as 0
type Latency struct {
	Dist string
	// A is the fixed value, the uniform minimum, or the mean.
	A time.Duration
	// B is the uniform maximum or the standard deviation.
	B time.Duration
}

// ParseLatency parses the text form of a Latency.
func ParseLatency(s string) (*Latency, error) {
	s = strings.TrimSpace(s)
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("latency %q: want a duration (50ms), uniform:MIN..MAX, exp:MEAN or normal:MEAN,STDDEV", s)
		}
		l := &Latency{Dist: LatencyFixed, A: d}
		return l, l.validate()
	}
	two := func(sep string) (time.Duration, time.Duration, error) {
		x, y, ok := strings.Cut(rest, sep)
		if !ok {
			return 0, 0, fmt.Errorf("latency %q: want %s:A%sB", s, kind, sep)
		}
		a, err1 := time.ParseDuration(strings.TrimSpace(x))
		b, err2 := time.ParseDuration(strings.TrimSpace(y))
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("latency %q: %v", s, err)
		}
		return a, b, nil
	}
	var l Latency
	var err error
	switch kind {
	case LatencyUniform:
		l.Dist = LatencyUniform
		l.A, l.B, err = two("..")
	case LatencyExponential:
		l.Dist = LatencyExponential
		l.A, err = time.ParseDuration(strings.TrimSpace(rest))
	case LatencyNormal:
		l.Dist = LatencyNormal
		l.A, l.B, err = two(",")
	default:
		return nil, fmt.Errorf("latency %q: unknown distribution %q (want uniform, exp or normal)", s, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("latency %q: %v", s, err)
	}
	return &l, l.validate()
}

func (l *Latency) validate() error {
	if l.A < 0 || l.B < 0 {
		return fmt.Errorf("latency %s: negative duration", l)
	}
	if l.Dist == LatencyUniform && l.B < l.A {
		return fmt.Errorf("latency %s: max below min", l)
	}
	switch l.Dist {
	case LatencyFixed, LatencyUniform, LatencyExponential, LatencyNormal:
		return nil
	}
	return fmt.Errorf("latency: unknown distribution %q", l.Dist)
}

// String is the text form.
func (l *Latency) String() string {
	switch l.Dist {
	case LatencyUniform:
		return LatencyUniform + ":" + l.A.String() + ".." + l.B.String()
	case LatencyExponential:
		return LatencyExponential + ":" + l.A.String()
	case LatencyNormal:
		return LatencyNormal + ":" + l.A.String() + "," + l.B.String()
	}
	return l.A.String()
}

// MarshalJSON writes the text form.
func (l *Latency) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// UnmarshalJSON reads the text form.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("latency must be a string like \"50ms\" or \"uniform:10ms..50ms\": %s", b)
	}
	v, err := ParseLatency(s)
	if err != nil {
		return err
	}
	*l = *v
	return nil
}

// draw returns one delay.
func (l *Latency) draw(r *rand.Rand) time.Duration {
	switch l.Dist {
	case LatencyUniform:
		if l.B == l.A {
			return l.A
		}
		return l.A + time.Duration(r.Int64N(int64(l.B-l.A)))
	case LatencyExponential:
		return time.Duration(r.ExpFloat64() * float64(l.A))
	case LatencyNormal:
		return time.Duration(math.Max(0, float64(l.A)+r.NormFloat64()*float64(l.B)))
	}
	return l.A
}

// seededRand is the backend's one random source.
type seededRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (s *seededRand) float() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Float64()
}

func (s *seededRand) latency(l *Latency) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.draw(s.r)
}

// decision is what the faults decided for one request.
type decision struct {
	status int
	fault  string
	delay  time.Duration
	reset  bool // close without an answer
}

// decide applies f to one request that arrived with inflight requests
// already being answered (this one not included).
func (f *Faults) decide(r *seededRand, inflight int, status int) decision {
	d := decision{status: status}
	if f.MaxConcurrent > 0 && inflight >= f.MaxConcurrent {
		if f.OverCapacity == OverCapacityRefuse {
			return decision{fault: evidence.ReceiptFaultRefused, reset: true}
		}
		return decision{status: 503, fault: evidence.ReceiptFaultOverload}
	}
	if f.Latency != nil {
		d.delay = r.latency(f.Latency)
	}
	if f.ResetProbability > 0 && (f.ResetProbability >= 1 || r.float() < f.ResetProbability) {
		d.status, d.fault, d.reset = 0, evidence.ReceiptFaultReset, true
		return d
	}
	if f.ErrorStatus != 0 && (f.ErrorProbability == nil || *f.ErrorProbability >= 1 || r.float() < *f.ErrorProbability) {
		d.status, d.fault = f.ErrorStatus, evidence.ReceiptFaultError
	}
	return d
}
