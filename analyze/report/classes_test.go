package report

import (
	"encoding/json"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// namedClasses is the form Classes had before its counts were keyed by
// evidence.Class: one named field per class. Its JSON is what reports of
// earlier releases hold.
type namedClasses struct {
	Sent           int `json:"sent"`
	Admitted       int `json:"admitted"`
	Local429       int `json:"local_429"`
	Global429      int `json:"global_429"`
	RLSError       int `json:"rls_error"`
	Other4xx       int `json:"other_4xx"`
	Other5xx       int `json:"other_5xx"`
	Other          int `json:"other"`
	NoResponse     int `json:"no_response"`
	Backend4xx     int `json:"backend_4xx,omitempty"`
	Backend429     int `json:"backend_429,omitempty"`
	Backend5xx     int `json:"backend_5xx,omitempty"`
	CircuitBreaker int `json:"circuit_breaker,omitempty"`
	Passed         int `json:"passed"`
}

func (n namedClasses) classes() Classes {
	var c Classes
	c.Sent, c.Passed = n.Sent, n.Passed
	for cl, v := range map[evidence.Class]int{evidence.ClassAdmitted: n.Admitted, evidence.ClassLocal429: n.Local429,
		evidence.ClassGlobal429: n.Global429, evidence.ClassRLSError: n.RLSError, evidence.ClassOther4xx: n.Other4xx,
		evidence.ClassOther5xx: n.Other5xx, evidence.ClassOther: n.Other, evidence.ClassNoResponse: n.NoResponse,
		evidence.ClassBackend4xx: n.Backend4xx, evidence.ClassBackend429: n.Backend429, evidence.ClassBackend5xx: n.Backend5xx,
		evidence.ClassCircuitBreaker: n.CircuitBreaker} {
		c.N[cl] = v
	}
	return c
}

var namedCases = []namedClasses{
	{},
	{Sent: 20, Admitted: 10, Local429: 10, Passed: 10},
	{Sent: 91, Admitted: 1, Local429: 2, Global429: 3, RLSError: 4, Other4xx: 5, Other5xx: 6, Other: 7, NoResponse: 8,
		Backend4xx: 9, Backend429: 10, Backend5xx: 11, CircuitBreaker: 12, Passed: 43},
	{Sent: 5, Backend429: 2, CircuitBreaker: 3, Passed: 5},
}

// TestClassesJSONIsTheNamedFields: Classes encodes byte for byte as the
// struct of named fields did (keys, order, omitempty of the v1.1 classes),
// alone and indented inside a report, and decodes what that struct wrote.
func TestClassesJSONIsTheNamedFields(t *testing.T) {
	for _, n := range namedCases {
		want, err := json.Marshal(n)
		must(t, err)
		got, err := json.Marshal(n.classes())
		must(t, err)
		if string(got) != string(want) {
			t.Errorf("Marshal:\n got %s\nwant %s", got, want)
		}
		wantIndent, err := json.MarshalIndent(struct{ T namedClasses }{n}, "", "  ")
		must(t, err)
		gotIndent, err := json.MarshalIndent(struct{ T Classes }{n.classes()}, "", "  ")
		must(t, err)
		if string(gotIndent) != string(wantIndent) {
			t.Errorf("MarshalIndent:\n got %s\nwant %s", gotIndent, wantIndent)
		}
		var back Classes
		must(t, json.Unmarshal(want, &back))
		if back != n.classes() {
			t.Errorf("Unmarshal(%s) = %+v, want %+v", want, back, n.classes())
		}
	}
}

// TestClassesDecodesAsAStruct: Classes reads JSON as encoding/json read
// the struct of named fields: a report of v1.0 (no v1.1 class) leaves those
// counts zero, keys match case-insensitively, unknown keys and null values
// are ignored, null keeps the value, and a count that is not an integer is
// an error.
func TestClassesDecodesAsAStruct(t *testing.T) {
	for _, in := range []string{
		`{"sent":20,"admitted":10,"local_429":10,"global_429":0,"rls_error":0,"other_4xx":0,"other_5xx":0,"other":0,"no_response":0,"passed":10}`,
		`{"Sent":3,"ADMITTED":1,"no_response":2,"future_class":7,"rls_error":null,"passed":1}`,
		`null`,
		`{}`,
	} {
		var want namedClasses
		want.RLSError = 9 // a null value or a missing key keeps what was there
		must(t, json.Unmarshal([]byte(in), &want))
		got := Classes{}
		got.N[evidence.ClassRLSError] = 9
		must(t, json.Unmarshal([]byte(in), &got))
		if got != want.classes() {
			t.Errorf("Unmarshal(%s) = %+v, want %+v", in, got, want.classes())
		}
	}
	for _, in := range []string{`{"admitted":1.5}`, `{"sent":"3"}`, `[1]`, `3`} {
		var c Classes
		if err := json.Unmarshal([]byte(in), &c); err == nil {
			t.Errorf("Unmarshal(%s): no error", in)
		}
	}
}

// TestClassesGet: Get names every class, "sent" and "passed", and nothing
// else.
func TestClassesGet(t *testing.T) {
	c := namedCases[2].classes()
	for cl := evidence.Class(0); cl < evidence.NumClasses; cl++ {
		if n, ok := c.Get(cl.String()); !ok || n != c.N[cl] {
			t.Errorf("Get(%s) = %d, %v; want %d", cl, n, ok, c.N[cl])
		}
	}
	if n, ok := c.Get("sent"); !ok || n != 91 {
		t.Errorf("Get(sent) = %d, %v", n, ok)
	}
	if n, ok := c.Get("passed"); !ok || n != 43 {
		t.Errorf("Get(passed) = %d, %v", n, ok)
	}
	if _, ok := c.Get("admited"); ok {
		t.Error("Get(admited) is known")
	}
}

// TestClassesOrderHasEveryClass: the JSON order names every class once (a
// class added to evidence must be added to classesOrder too).
func TestClassesOrderHasEveryClass(t *testing.T) {
	var seen [evidence.NumClasses]bool
	for _, cl := range classesOrder {
		if seen[cl] {
			t.Errorf("classesOrder names %s twice", cl)
		}
		seen[cl] = true
	}
}

// TestClassCountInTheTemplate: the HTML template's class function reads
// Get and fails the render on a name that is no class.
func TestClassCountInTheTemplate(t *testing.T) {
	c := namedCases[1].classes()
	if n, err := classCount(c, "local_429"); err != nil || n != 10 {
		t.Errorf("class local_429 = %d, %v", n, err)
	}
	if _, err := classCount(c, "Local429"); err == nil {
		t.Error("class Local429: no error")
	}
}
