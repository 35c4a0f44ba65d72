package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
)

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

// Covers reports whether every value of o lies in r. A check that a count
// lies in r cannot fail when the count can only take the values of o (an
// expectation "admitted: 0..1000000000" of 20 requests sent covers 0..20).
func (r Range) Covers(o Range) bool { return r.Min <= o.Min && r.Max >= o.Max }

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
		return fmt.Errorf("range must be N, \"MIN..MAX\" or {min, max}, not %s", compactJSON(b))
	}
	if *m.Min > *m.Max {
		return fmt.Errorf("range {min: %d, max: %d}: %w", *m.Min, *m.Max, errRangeOrder)
	}
	*r = Range{Min: *m.Min, Max: *m.Max}
	return nil
}

// errRangeOrder is a range whose min is above its max.
var errRangeOrder = errors.New("min > max")

// compactJSON is b on one line and at most 80 bytes, for messages.
func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		buf.Reset()
		buf.Write(b)
	}
	s := strings.Join(strings.Fields(buf.String()), " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}
