package evidence

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/model"
)

// TestIntendedLimitForms (issue 21): an intended limit carries a time
// unit: {"requests": 5, "per": "1m"}, or "5/1m" for short; a plain number
// keeps its meaning (per run) and is written as a number, so scenario.json
// of earlier releases loads and a limit per run reads in them as before.
func TestIntendedLimitForms(t *testing.T) {
	minute := model.Duration(time.Minute)
	for in, want := range map[string]IntendedLimit{
		`5`:                               {Requests: 5},
		`0`:                               {Requests: 0},
		`{"requests": 5, "per": "1m"}`:    {Requests: 5, Per: minute},
		`{"requests": 5}`:                 {Requests: 5},
		`"5/1m"`:                          {Requests: 5, Per: minute},
		`" 5 / 60s "`:                     {Requests: 5, Per: minute},
		`"5/m"`:                           {Requests: 5, Per: minute},
		`"100/1s"`:                        {Requests: 100, Per: model.Duration(time.Second)},
		`{"per": "1h", "requests": 3600}`: {Requests: 3600, Per: model.Duration(time.Hour)},
	} {
		var l IntendedLimit
		if err := json.Unmarshal([]byte(in), &l); err != nil || l != want {
			t.Errorf("%s: got %+v, %v; want %+v", in, l, err, want)
		}
	}
	for in, want := range map[string]string{
		`"5"`:                             `want N (per run), {requests: N, per: DURATION} or "N/DURATION", not "5"`,
		`"5 per minute"`:                  `not "5 per minute"`,
		`"5/1d"`:                          `intended limit "5/1d": bad duration "1d"`,
		`"5/0s"`:                          `intended limit per 0s: want 1ms .. 8784h (omit per for the whole run)`,
		`"-5/1m"`:                         `intended limit requests -5: must be >= 0`,
		`{"requests": 5, "per": "1us"}`:   `intended limit per 1µs: want 1ms`,
		`{"requests": 5, "window": "1m"}`: `unknown field "window"`,
		`{"per": "1m"}`:                   `requests is required`,
		`{"requests": 5, "per": 60}`:      `want a duration string`,
		`{"requests": -1, "per": "1m"}`:   `must be >= 0`,
		`true`:                            `not true`,
		`5.5`:                             `not 5.5`,
	} {
		var l IntendedLimit
		err := json.Unmarshal([]byte(in), &l)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %+v, %v; want an error with %q", in, l, err, want)
		}
	}
	for _, c := range []struct {
		l    IntendedLimit
		json string
		text string
	}{
		{IntendedLimit{Requests: 5}, `5`, "5"},
		{IntendedLimit{Requests: 5, Per: minute}, `{"requests":5,"per":"1m0s"}`, "5/1m"},
		{IntendedLimit{Requests: 7, Per: model.Duration(90 * time.Minute)}, `{"requests":7,"per":"1h30m0s"}`, "7/1h30m"},
	} {
		b, err := json.Marshal(c.l)
		if err != nil || string(b) != c.json || c.l.String() != c.text {
			t.Errorf("%+v: written %s (%v), text %q; want %s, %q", c.l, b, err, c.l.String(), c.json, c.text)
		}
		var back IntendedLimit
		if err := json.Unmarshal(b, &back); err != nil || back != c.l {
			t.Errorf("%s read back as %+v, %v", b, back, err)
		}
	}
	// The previous release's type reads a limit per run as it was written.
	b, _ := json.Marshal(Scenario{Name: "x", IntendedLimit: IntendedPerRun(5)})
	var old struct {
		IntendedLimit *int `json:"intended_limit"`
	}
	if err := json.Unmarshal(b, &old); err != nil || old.IntendedLimit == nil || *old.IntendedLimit != 5 {
		t.Errorf("%s: the previous release reads %v, %v", b, old.IntendedLimit, err)
	}
}

// TestDecodeScenarioIntendedLimitLine: a bad intended limit in
// scenario.json names its line and field.
func TestDecodeScenarioIntendedLimitLine(t *testing.T) {
	const head = "{\"schema\":\"rlbench.scenario/v1\",\"name\":\"x\",\n"
	for doc, want := range map[string]string{
		head + "\"expect\": {},\n\"intended_limit\": \"5 per minute\"}":                          `line 3: intended_limit: want N (per run), {requests: N, per: DURATION} or "N/DURATION", not "5 per minute"`,
		head + "\"intended_limit\": {\n  \"requests\": 5,\n  \"per\": \"0s\"},\n\"expect\": {}}": `line 2: intended_limit: intended limit per 0s: want 1ms`,
	} {
		_, err := DecodeScenario([]byte(doc))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant %s", doc, err, want)
		}
	}
	s, err := DecodeScenario([]byte(head + "\"intended_limit\": \"5/1m\", \"expect\": {}}"))
	if err != nil || s.IntendedLimit == nil || *s.IntendedLimit != (IntendedLimit{Requests: 5, Per: model.Duration(time.Minute)}) {
		t.Fatalf("%+v, %v", s.IntendedLimit, err)
	}
}

// FuzzIntendedLimit: what UnmarshalJSON accepts is a plain number or a
// limit with requests >= 0 and per within the bounds, and it reads back
// the same after MarshalJSON.
func FuzzIntendedLimit(f *testing.F) {
	for _, s := range []string{`5`, `"5/1m"`, `{"requests":5,"per":"1m"}`, `"5/m"`, `"5 / 1h30m"`, `{"requests":5}`, `"-0/1s"`, `-3`, `"5/0s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var l IntendedLimit
		if l.UnmarshalJSON(b) != nil {
			return
		}
		if l.Windowed() && (l.Requests < 0 || time.Duration(l.Per) < MinIntendedPer || time.Duration(l.Per) > MaxIntendedPer) {
			t.Fatalf("%q accepted as %+v", b, l)
		}
		out, err := l.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back IntendedLimit
		if err := back.UnmarshalJSON(out); err != nil || back != l {
			t.Fatalf("%q -> %+v -> %s -> %+v, %v", b, l, out, back, err)
		}
	})
}
