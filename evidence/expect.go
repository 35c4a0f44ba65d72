package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/model"
)

// PeakExpectation bounds the backend's arrivals: the receipts that fall in
// any sliding window [t, t+Window) of the run. Several may be given, one
// per window length (Expectation.BackendPeak):
//
//	{"window": "10ms", "max": 20}
//	{"window": "10ms", "model": true}
type PeakExpectation struct {
	// Window is the sliding window's length, e.g. "10ms"; 1 µs .. 1 h.
	Window model.Duration `json:"window"`
	// Max, when set, is the most receipts any window may hold.
	Max *int `json:"max,omitempty"`
	// Min, when set, is the least the fullest window must hold (the burst
	// did reach the backend).
	Min *int `json:"min,omitempty"`
	// Model, when true, bounds every window by what the scenario's limiter
	// lets through in a window of that length over every arrival schedule
	// (model PeakBound: a leaky bucket smooths to its rate, a token
	// bucket lets its capacity through at once), the window widened by
	// Tolerance for the timing between the limiter and the backend.
	Model bool `json:"model,omitempty"`
	// Tolerance widens the model's window: the time between a limiter
	// forwarding a request and the backend recording it varies with the
	// event loops and the scheduler of a loaded machine. Zero means
	// DefaultPeakTolerance.
	Tolerance model.Duration `json:"tolerance,omitempty"`
	// Target, when set, counts only the receipts of requests sent to this
	// attack target.
	Target string `json:"target,omitempty"`
}

// DefaultPeakTolerance is PeakExpectation.Tolerance when not given: 5 ms
// of scheduling between a limiter's forwarding and the backend's receipt.
const DefaultPeakTolerance = 5 * time.Millisecond

// Peak window bounds (PeakExpectation.Window).
const (
	MinPeakWindow = time.Microsecond
	MaxPeakWindow = time.Hour
)

// EffectiveTolerance returns the effective Tolerance.
func (p *PeakExpectation) EffectiveTolerance() time.Duration {
	if p.Tolerance > 0 {
		return time.Duration(p.Tolerance)
	}
	return DefaultPeakTolerance
}

// Validate checks the expectation: a window within MinPeakWindow ..
// MaxPeakWindow, at least one of max, min and model, counts >= 0, min <=
// max, a tolerance >= 0.
func (p *PeakExpectation) Validate() error {
	w := time.Duration(p.Window)
	switch {
	case w < MinPeakWindow || w > MaxPeakWindow:
		return fmt.Errorf("window %v: want %v .. %v", w, MinPeakWindow, MaxPeakWindow)
	case p.Max == nil && p.Min == nil && !p.Model:
		return errors.New("give max, min or model: true")
	case p.Max != nil && *p.Max < 0, p.Min != nil && *p.Min < 0:
		return errors.New("max and min must be >= 0")
	case p.Max != nil && p.Min != nil && *p.Min > *p.Max:
		return fmt.Errorf("min %d > max %d", *p.Min, *p.Max)
	case p.Tolerance < 0:
		return fmt.Errorf("tolerance %v: must not be negative", time.Duration(p.Tolerance))
	}
	return nil
}

// PeakExpectations are Expectation.BackendPeak: one PeakExpectation or a
// list of them (JSON and plan YAML accept either; it is written as a list).
type PeakExpectations []PeakExpectation

// UnmarshalJSON accepts an object or an array of objects, strictly: an
// unknown field ("maximum") is an error naming it, as in the rest of a plan.
//
// A wrong value's error is a *FieldValueError at its field
// ("expect.backend_peak[0].model", "expect.backend_peak.window"), its
// message the decoder's: DecodeScenario names the line.
func (l *PeakExpectations) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if len(b) > 0 && b[0] == '{' {
		var p PeakExpectation
		if err := dec.Decode(&p); err != nil {
			return peakFieldError(b, false, err)
		}
		*l = PeakExpectations{p}
		return nil
	}
	var ps []PeakExpectation
	if err := dec.Decode(&ps); err != nil {
		return peakFieldError(b, true, err)
	}
	*l = ps
	return nil
}

// peakFieldError names the field of err, an error decoding b (an object,
// or a list of them when list), as a *FieldValueError: a type error's
// field, or the first field that does not decode alone (a value that
// decodes itself, "window": "ten"). An unknown field's error, and one
// whose field is not found, is returned as is.
func peakFieldError(b []byte, list bool, err error) error {
	const base = "expect.backend_peak"
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) && te.Field != "" {
		f := strings.TrimPrefix(te.Field, ".")
		if list {
			i, rest, _ := strings.Cut(f, ".")
			if _, aerr := strconv.Atoi(i); aerr != nil {
				return err
			}
			f = "[" + i + "]"
			if rest != "" {
				f += "." + rest
			}
			return &FieldValueError{Path: base + f, Err: err}
		}
		return &FieldValueError{Path: base + "." + f, Err: err}
	}
	items := []json.RawMessage{b}
	if list && json.Unmarshal(b, &items) != nil {
		return err
	}
	for i, item := range items {
		var fields map[string]json.RawMessage
		if json.Unmarshal(item, &fields) != nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			one, merr := json.Marshal(map[string]json.RawMessage{k: fields[k]})
			var p PeakExpectation
			if merr != nil || json.Unmarshal(one, &p) == nil {
				continue
			}
			path := base + "." + k
			if list {
				path = fmt.Sprintf("%s[%d].%s", base, i, k)
			}
			return &FieldValueError{Path: path, Err: err}
		}
	}
	return err
}

// FactorRange is an inclusive range of a ratio; an absent bound is open.
type FactorRange struct {
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// Contains reports whether v lies in the range.
func (r FactorRange) Contains(v float64) bool {
	return (r.Min == nil || v >= *r.Min) && (r.Max == nil || v <= *r.Max)
}

// String renders the range: ">= 2", "<= 4", "2..4".
func (r FactorRange) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case r.Min != nil && r.Max != nil:
		return f(*r.Min) + ".." + f(*r.Max)
	case r.Min != nil:
		return ">= " + f(*r.Min)
	case r.Max != nil:
		return "<= " + f(*r.Max)
	}
	return "any"
}

// Validate checks that the range has a bound, bounds >= 0 and finite, min <= max.
func (r FactorRange) Validate() error {
	if r.Min == nil && r.Max == nil {
		return errors.New("give min or max")
	}
	for _, v := range []*float64{r.Min, r.Max} {
		if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return fmt.Errorf("bound %v: want a finite number >= 0", *v)
		}
	}
	if r.Min != nil && r.Max != nil && *r.Min > *r.Max {
		return fmt.Errorf("min %v > max %v", *r.Min, *r.Max)
	}
	return nil
}
