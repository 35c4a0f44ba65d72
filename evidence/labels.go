package evidence

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Labels are a scenario's place in a conformance matrix (issue 23): the
// limiter under test and the traffic shape it was given. A conformance plan
// expands limiters × shapes into scenarios that carry them; an ordinary
// scenario may carry them too. The report groups the scenarios by them
// (report.Matrix); evidence without them (every release before) has none.
type Labels struct {
	// Limiter names the limiter under test, e.g. "nginx limit_req nodelay".
	Limiter string `json:"limiter"`
	// Shape names the traffic shape, e.g. "burst 1.5x capacity".
	Shape string `json:"shape"`
}

// MaxLabelBytes is the longest label (Labels.Limiter, Labels.Shape).
const MaxLabelBytes = 100

// Check checks both labels: present, at most MaxLabelBytes of UTF-8 and no
// control characters (they are printed in tables and used in scenario
// names). what names the labels in the error ("labels").
func (l *Labels) Check(what string) error {
	for _, f := range []struct{ key, v string }{{"limiter", l.Limiter}, {"shape", l.Shape}} {
		switch {
		case strings.TrimSpace(f.v) == "":
			return fmt.Errorf("%s.%s is required", what, f.key)
		case len(f.v) > MaxLabelBytes:
			return fmt.Errorf("%s.%s %.20q...: longer than %d bytes", what, f.key, f.v, MaxLabelBytes)
		case !utf8.ValidString(f.v) || strings.ContainsFunc(f.v, unicode.IsControl):
			return fmt.Errorf("%s.%s %q: want UTF-8 text without control characters", what, f.key, f.v)
		}
	}
	return nil
}
