package evidence

import (
	"bytes"
	"errors"
	"fmt"

	json "github.com/goccy/go-json"
)

// AdmittedModel is the value of Expectation.Admitted that stands for the
// limiter model's bounds ("admitted: model").
const AdmittedModel = "model"

// AdmittedExpectation is Expectation.Admitted: the admitted count a
// scenario expects, either the fixed Range or, with Model, the bounds the
// scenario's limiter models put on this run (analyze's end-to-end model
// bound, ScenarioReport.Model: what the last limiter of each target's path
// may admit over every arrival schedule the recorded send, response and
// receipt times allow, so a token bucket that refilled while a burst
// arrived late is allowed its refills). A model expectation needs declared
// limiters; without a model it is inconclusive (NOT_RUN), never PASS.
//
// JSON and plan YAML: a range in any form Range reads (N, "N",
// "MIN..MAX", {"min": MIN, "max": MAX}) or the string "model". It is
// written as before models existed ({"min": MIN, "max": MAX}) or "model".
type AdmittedExpectation struct {
	// Range is the fixed range; unused when Model is set.
	Range Range
	// Model: the expected range is the limiter model's bounds for the run.
	Model bool
}

// AdmittedIn returns the expectation of a fixed range r.
func AdmittedIn(r Range) *AdmittedExpectation { return &AdmittedExpectation{Range: r} }

// AdmittedByModel returns the expectation of the limiter model's bounds.
func AdmittedByModel() *AdmittedExpectation { return &AdmittedExpectation{Model: true} }

// String returns "model" or the range (Range.String: "N", "MIN..MAX").
func (a AdmittedExpectation) String() string {
	if a.Model {
		return AdmittedModel
	}
	return a.Range.String()
}

// MarshalJSON writes "model", or the range as an object {"min", "max"},
// as scenario.json held it before the model form existed.
func (a AdmittedExpectation) MarshalJSON() ([]byte, error) {
	if a.Model {
		return json.Marshal(AdmittedModel)
	}
	return json.Marshal(a.Range)
}

// errAdmittedForm is an admitted value that is neither a range nor "model".
var errAdmittedForm = errors.New(`want N, "MIN..MAX", {min, max} or "model"`)

// UnmarshalJSON accepts "model" or any form of Range (Range.UnmarshalJSON,
// whose errors about a range's numbers it keeps: "range \"9..3\": min >
// max"). A value of another form is an error quoting it. Its errors are
// *FieldValueError at "expect.admitted": DecodeScenario names the line.
func (a *AdmittedExpectation) UnmarshalJSON(b []byte) error {
	var s string
	isString := json.Unmarshal(b, &s) == nil
	if isString && s == AdmittedModel {
		*a = AdmittedExpectation{Model: true}
		return nil
	}
	var r Range
	if err := r.UnmarshalJSON(b); err != nil {
		if !errors.Is(err, errRangeOrder) && !(isString && rangeRE.MatchString(s)) {
			err = fmt.Errorf("%w, not %s", errAdmittedForm, compactJSON(bytes.TrimSpace(b)))
		}
		return &FieldValueError{Path: "expect.admitted", Err: err}
	}
	*a = AdmittedExpectation{Range: r}
	return nil
}
