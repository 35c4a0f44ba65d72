package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/model"
)

// IntendedLimit is Scenario.IntendedLimit: the admissions the operator
// meant for the whole backend, Requests per Per.
//
// Per zero means the whole run, the meaning of every intended limit before
// limits had a unit: over-admission is the run's admitted count minus
// Requests. With a Per, admissions are counted in fixed windows of that
// length aligned to the unix epoch, the window of an admission at unix
// time t being [floor(t/Per)·Per, floor(t/Per)·Per + Per), as
// envoyproxy/ratelimit aligns its counters (src/limiter/cache_key.go
// GenerateCacheKey: now / divider * divider; src/utils/utilities.go
// CalculateReset: a window ends at the next multiple of the unit), and no
// window may hold more than Requests. "5 per minute" is then 5 in each
// calendar minute, not 5 in the run, and not 5 in every sliding minute.
//
// JSON and plan YAML take three forms:
//
//	5                               per run (as before units)
//	{"requests": 5, "per": "1m"}    5 per window of 1m, the canonical form
//	"5/1m"                          the same, short: N/DURATION as an
//	                                attack's rate, the unit may omit its 1 ("5/m")
//
// It is written as the number when Per is zero (older readers load it) and
// as the object otherwise. Requests must be >= 0 in the two new forms and
// Per within MinIntendedPer .. MaxIntendedPer; a plain number is read as it
// always was (a plan refuses a negative one).
type IntendedLimit struct {
	// Requests is the most admissions meant per window (or per run).
	Requests int `json:"requests"`
	// Per is the window's length; absent (zero) means the whole run.
	Per model.Duration `json:"per,omitempty"`
}

// Bounds of IntendedLimit.Per.
const (
	MinIntendedPer = time.Millisecond
	MaxIntendedPer = 366 * 24 * time.Hour
)

// IntendedPerRun returns the intended limit of n admissions per run.
func IntendedPerRun(n int) *IntendedLimit { return &IntendedLimit{Requests: n} }

// Windowed reports whether the limit is per window (Per > 0).
func (l IntendedLimit) Windowed() bool { return l.Per > 0 }

// String returns "5" for a limit per run and "5/1m" per window.
func (l IntendedLimit) String() string {
	if !l.Windowed() {
		return strconv.Itoa(l.Requests)
	}
	return strconv.Itoa(l.Requests) + "/" + ShortDuration(time.Duration(l.Per))
}

// ShortDuration is d as time.Duration.String writes it without the zero
// units it ends with: "1m" for 1m0s, "1h" for 1h0m0s, "1h30m" for 1h30m0s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalJSON writes a number for a limit per run, else the object.
func (l IntendedLimit) MarshalJSON() ([]byte, error) {
	if !l.Windowed() {
		return json.Marshal(l.Requests)
	}
	type plain IntendedLimit
	return json.Marshal(plain(l))
}

// errIntendedForm is an intended limit of none of the three forms.
var errIntendedForm = errors.New(`want N (per run), {requests: N, per: DURATION} or "N/DURATION"`)

// UnmarshalJSON reads the three forms (see IntendedLimit). The object form
// is strict: an unknown field is an error naming it. Errors are
// *FieldValueError at "intended_limit": DecodeScenario names the line.
func (l *IntendedLimit) UnmarshalJSON(b []byte) error {
	v, err := parseIntended(bytes.TrimSpace(b))
	if err != nil {
		return &FieldValueError{Path: "intended_limit", Err: err}
	}
	*l = v
	return nil
}

func parseIntended(b []byte) (IntendedLimit, error) {
	var n int
	if json.Unmarshal(b, &n) == nil {
		return IntendedLimit{Requests: n}, nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		return ParseIntendedLimit(s)
	}
	if len(b) == 0 || b[0] != '{' {
		return IntendedLimit{}, fmt.Errorf("%w, not %s", errIntendedForm, compactJSON(b))
	}
	var o struct {
		Requests *int            `json:"requests"`
		Per      *model.Duration `json:"per"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return IntendedLimit{}, fmt.Errorf("%w, not %s: %v", errIntendedForm, compactJSON(b), strings.TrimPrefix(err.Error(), "json: "))
	}
	if o.Requests == nil {
		return IntendedLimit{}, fmt.Errorf("%s: requests is required", compactJSON(b))
	}
	l := IntendedLimit{Requests: *o.Requests}
	if o.Per != nil {
		l.Per = *o.Per
		if err := l.checkPer(); err != nil {
			return IntendedLimit{}, err
		}
	}
	return l, l.checkRequests()
}

// ParseIntendedLimit parses the short form "N/DURATION" ("5/1m",
// "100/1s", "5/m": a unit without a number is 1 of it, as attack.ParseRate
// reads a rate). N must be >= 0 and DURATION within MinIntendedPer ..
// MaxIntendedPer; anything else is an error quoting s.
func ParseIntendedLimit(s string) (IntendedLimit, error) {
	num, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil {
		return IntendedLimit{}, fmt.Errorf("%w, not %q", errIntendedForm, s)
	}
	per = strings.TrimSpace(per)
	if !strings.ContainsAny(per, "0123456789") {
		per = "1" + per
	}
	d, err := time.ParseDuration(per)
	if err != nil {
		return IntendedLimit{}, fmt.Errorf("intended limit %q: bad duration %q", s, per)
	}
	l := IntendedLimit{Requests: n, Per: model.Duration(d)}
	if err := l.checkPer(); err != nil {
		return IntendedLimit{}, err
	}
	return l, l.checkRequests()
}

func (l IntendedLimit) checkPer() error {
	if d := time.Duration(l.Per); d < MinIntendedPer || d > MaxIntendedPer {
		return fmt.Errorf("intended limit per %v: want %s .. %s (omit per for the whole run)", d, ShortDuration(MinIntendedPer), ShortDuration(MaxIntendedPer))
	}
	return nil
}

func (l IntendedLimit) checkRequests() error {
	if l.Requests < 0 {
		return fmt.Errorf("intended limit requests %d: must be >= 0", l.Requests)
	}
	return nil
}
