package evidence

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"
)

// Thresholds are k6-style bounds on a measured figure (k6's thresholds,
// https://grafana.com/docs/k6/latest/using-k6/thresholds/: "p(99)<50",
// "rate<0.01"): an operator and a value, written as one string.
// LatencyBound is a duration ("<= 50ms"), RatioBound a share of the
// requests sent ("< 0.1%" or "< 0.001"). The operators are <, <=, > and
// >= (k6's == and != are refused: a latency or a ratio is never exactly
// a value worth requiring).

// Threshold operators.
const (
	OpLess      = "<"
	OpLessEq    = "<="
	OpGreater   = ">"
	OpGreaterEq = ">="
)

// ThresholdOps lists the operators, longest first (the order the parser
// tries them).
var ThresholdOps = []string{OpLessEq, OpGreaterEq, OpLess, OpGreater}

// maxThresholdText bounds a threshold's text (a plan is written by people).
const maxThresholdText = 64

// ThresholdError is a threshold that does not parse: Text is the
// threshold as written, which DecodeScenario finds to name its line.
type ThresholdError struct {
	Text string
	Err  error
}

func (e *ThresholdError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ThresholdError) Unwrap() error { return e.Err }

// splitThreshold splits "OP VALUE" (spaces optional around and between)
// into the operator and the value's text.
func splitThreshold(s string) (op, value string, err error) {
	if len(s) > maxThresholdText {
		return "", "", fmt.Errorf("threshold of %d bytes: at most %d", len(s), maxThresholdText)
	}
	t := strings.TrimSpace(s)
	for _, o := range ThresholdOps {
		if rest, ok := strings.CutPrefix(t, o); ok {
			v := strings.TrimSpace(rest)
			if v == "" {
				return "", "", fmt.Errorf("threshold %q: no value after %s", s, o)
			}
			return o, v, nil
		}
	}
	return "", "", fmt.Errorf("threshold %q: want an operator (<, <=, >, >=) and a value, e.g. \"<= 50ms\"", s)
}

// holds reports whether v op bound.
func holds(op string, v, bound float64) bool {
	switch op {
	case OpLess:
		return v < bound
	case OpLessEq:
		return v <= bound
	case OpGreater:
		return v > bound
	case OpGreaterEq:
		return v >= bound
	}
	return false
}

// LatencyBound is a bound on a latency: an operator and a duration, written
// "<= 50ms" (the duration in time.ParseDuration's syntax, >= 0).
type LatencyBound struct {
	Op string
	D  time.Duration
}

// ParseLatencyBound parses "OP DURATION", e.g. "<= 50ms", "<1s", ">= 2ms".
func ParseLatencyBound(s string) (LatencyBound, error) {
	op, v, err := splitThreshold(s)
	if err != nil {
		return LatencyBound{}, err
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return LatencyBound{}, fmt.Errorf("threshold %q: %q is not a duration such as 50ms", s, v)
	}
	if d < 0 {
		return LatencyBound{}, fmt.Errorf("threshold %q: a latency is never negative", s)
	}
	if op == OpLess && d == 0 {
		return LatencyBound{}, fmt.Errorf("threshold %q: no latency is below 0: the bound could only fail", s)
	}
	return LatencyBound{Op: op, D: d}, nil
}

// Holds reports whether the latency d meets the bound.
func (b LatencyBound) Holds(d time.Duration) bool { return holds(b.Op, float64(d), float64(b.D)) }

// Upper reports whether the bound is an upper one (< or <=): a latency
// above it is the breach.
func (b LatencyBound) Upper() bool { return b.Op == OpLess || b.Op == OpLessEq }

// CannotFail reports whether no latency can break the bound (">= 0s").
func (b LatencyBound) CannotFail() bool { return b.Op == OpGreaterEq && b.D == 0 }

// String is the bound as ParseLatencyBound reads it: "<= 50ms".
func (b LatencyBound) String() string { return b.Op + " " + b.D.String() }

// MarshalJSON writes String.
func (b LatencyBound) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads a string of ParseLatencyBound.
func (b *LatencyBound) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("latency threshold: want a string such as \"<= 50ms\", not %s", data)
	}
	v, err := ParseLatencyBound(s)
	if err != nil {
		return &ThresholdError{Text: s, Err: err}
	}
	*b = v
	return nil
}

// RatioBound is a bound on a share of the requests sent: an operator and a
// fraction in 0..1, written as a percentage ("< 0.1%") or a fraction
// ("< 0.001").
type RatioBound struct {
	Op string
	// Ratio is the fraction, 0..1.
	Ratio float64
	// Percent records that it was written as a percentage (String keeps
	// the form).
	Percent bool
}

// ParseRatioBound parses "OP PERCENT%" or "OP FRACTION", e.g. "< 0.1%",
// "<= 0.001", ">= 50%"; the value lies in 0..100% (0..1).
func ParseRatioBound(s string) (RatioBound, error) {
	op, v, err := splitThreshold(s)
	if err != nil {
		return RatioBound{}, err
	}
	num, pct := strings.CutSuffix(v, "%")
	num = strings.TrimSpace(num)
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || strings.ContainsAny(num, "xXpP_-") || math.IsNaN(f) || math.IsInf(f, 0) {
		return RatioBound{}, fmt.Errorf("threshold %q: %q is not a ratio such as 0.1%% or 0.001", s, v)
	}
	if pct {
		f /= 100
	}
	if f < 0 || f > 1 {
		return RatioBound{}, fmt.Errorf("threshold %q: a ratio lies in 0..1 (0%%..100%%)", s)
	}
	if op == OpLess && f == 0 || op == OpGreater && f == 1 {
		return RatioBound{}, fmt.Errorf("threshold %q: no ratio lies outside 0..1 (0%%..100%%): the bound could only fail", s)
	}
	return RatioBound{Op: op, Ratio: f, Percent: pct}, nil
}

// Holds reports whether the ratio r meets the bound.
func (b RatioBound) Holds(r float64) bool { return holds(b.Op, r, b.Ratio) }

// CannotFail reports whether no ratio can break the bound: ">= 0" or "<= 100%".
func (b RatioBound) CannotFail() bool {
	return b.Op == OpGreaterEq && b.Ratio == 0 || b.Op == OpLessEq && b.Ratio == 1
}

// String is the bound in the form it was written: "< 0.1%", "<= 0.001".
func (b RatioBound) String() string {
	if b.Percent {
		return b.Op + " " + strconv.FormatFloat(b.Ratio*100, 'f', -1, 64) + "%"
	}
	return b.Op + " " + strconv.FormatFloat(b.Ratio, 'f', -1, 64)
}

// MarshalJSON writes String.
func (b RatioBound) MarshalJSON() ([]byte, error) { return json.Marshal(b.String()) }

// UnmarshalJSON reads a string of ParseRatioBound.
func (b *RatioBound) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("ratio threshold: want a string such as \"< 0.1%%\", not %s", data)
	}
	v, err := ParseRatioBound(s)
	if err != nil {
		return &ThresholdError{Text: s, Err: err}
	}
	*b = v
	return nil
}

// LatencyThreshold bounds latency percentiles of the requests of one
// response class, over every target or at one (Expectation.Latency):
//
//	{"class": "admitted", "p99": "<= 50ms"}
//	{"class": "local_429", "target": "proxy-a", "p99": "<= 5ms", "max": "< 100ms"}
//
// The latency is the client's, send to response (evidence.Request
// LatencyNs); the percentiles are the report's (analyze/report.ClassLatency).
type LatencyThreshold struct {
	// Class is a response class name (a Class String).
	Class string `json:"class"`
	// Target, when set, counts only the requests sent to this attack target.
	Target string `json:"target,omitempty"`
	// P50, P90, P99 and P999 bound the 50th, 90th, 99th and 99.9th
	// percentiles, Max the largest latency and Mean the mean.
	P50  *LatencyBound `json:"p50,omitempty"`
	P90  *LatencyBound `json:"p90,omitempty"`
	P99  *LatencyBound `json:"p99,omitempty"`
	P999 *LatencyBound `json:"p999,omitempty"`
	Max  *LatencyBound `json:"max,omitempty"`
	Mean *LatencyBound `json:"mean,omitempty"`
}

// LatencyStat is one bounded statistic of a LatencyThreshold.
type LatencyStat struct {
	// Name is the statistic's key: p50, p90, p99, p999, max or mean.
	Name  string
	Bound LatencyBound
}

// Stats lists the statistics the threshold bounds, in key order p50, p90,
// p99, p999, max, mean.
func (t *LatencyThreshold) Stats() []LatencyStat {
	var out []LatencyStat
	for _, s := range []struct {
		name string
		b    *LatencyBound
	}{{"p50", t.P50}, {"p90", t.P90}, {"p99", t.P99}, {"p999", t.P999}, {"max", t.Max}, {"mean", t.Mean}} {
		if s.b != nil {
			out = append(out, LatencyStat{Name: s.name, Bound: *s.b})
		}
	}
	return out
}

// Validate checks the threshold: a known class (a Class String) and at
// least one statistic.
func (t *LatencyThreshold) Validate() error {
	if _, ok := ParseClass(t.Class); !ok {
		return fmt.Errorf("class %q: want one of %s", t.Class, strings.Join(ClassNames(), ", "))
	}
	if len(t.Stats()) == 0 {
		return errors.New("give a percentile to bound: p50, p90, p99, p999, max or mean (e.g. p99: \"<= 50ms\")")
	}
	return nil
}

// RatioNames are the names Expectation.Ratios accepts: every class name
// (ClassNames) and "passed" (the requests that passed every limiter), each
// counted over the requests sent.
func RatioNames() []string { return append(ClassNames(), "passed") }
