package evidence

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/internal/jsonline"
	"github.com/rlbench/rlbench/model"
)

// DecodeScenario reads scenario.json strictly, like a plan: an unknown
// field (a misspelt "admited") is an error naming the field and its line,
// trailing data is an error, and the limiters and classification rules are
// validated (errors name "limiters[i].<field>" or "classify[i]"), as are
// the expectation's class names and count ranges (Expectation.CheckCounts:
// expect.classes.local429 is an error, not a FAIL), a range's min > max
// is named by its path and line, as is a value of a field that decodes
// itself (FieldValueError: "admitted": "modle"), a duplicate key is an error (JSON
// decoders keep one of them silently), and so are more than
// MaxScenarioProxies proxies (CheckScenarioProxies, with the line), and
// labels must pass Labels.Check. It does
// not check the schema ID or the name (see Load).
func DecodeScenario(b []byte) (Scenario, error) {
	var s Scenario
	keys, err := scanKeys(b)
	if err != nil {
		return Scenario{}, err
	}
	if err := CheckScenarioProxies(fmt.Sprintf("line %d: proxies", keys.lines["proxies"]), keys.proxies); err != nil { // before decoding them
		return Scenario{}, err
	}
	dec := stdjson.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, errRangeOrder) && keys.badRangeLine > 0 {
			return Scenario{}, fmt.Errorf("line %d: %s: %w", keys.badRangeLine, keys.badRange, err)
		}
		if te := (*ThresholdError)(nil); errors.As(err, &te) {
			// The line of the threshold's text: a threshold is a string
			// of expect.latency or expect.ratios.
			if line := textLine(b, te.Text); line > 0 {
				return Scenario{}, fmt.Errorf("line %d: %w", line, te)
			}
			return Scenario{}, te
		}
		if fe := (*FieldValueError)(nil); errors.As(err, &fe) {
			if line := keys.lines[fe.Path]; line > 0 {
				return Scenario{}, fmt.Errorf("line %d: %s: %w", line, fe.Path, fe.Err)
			}
			return Scenario{}, fmt.Errorf("%s: %w", fe.Path, fe.Err)
		}
		if lerr := locateSpec(b, keys, err); lerr != nil {
			return Scenario{}, lerr
		}
		return Scenario{}, locate(b, err)
	}
	if dec.More() {
		return Scenario{}, fmt.Errorf("line %d: trailing data after the object", lineAt(b, int(dec.InputOffset())))
	}
	names := map[string]bool{}
	for i := range s.Limiters {
		l := &s.Limiters[i]
		if err := l.Validate(); err != nil {
			return Scenario{}, locateField(b, fmt.Sprintf("limiters[%d].%v", i, err), fieldOf(err))
		}
		if names[l.Name] {
			return Scenario{}, locateField(b, fmt.Sprintf("limiters[%d].name: %q is used twice", i, l.Name), "name")
		}
		names[l.Name] = true
	}
	if _, err := NewClassifier(s.Classify); err != nil {
		return Scenario{}, locateField(b, err.Error(), "classify")
	}
	if s.Labels != nil {
		if err := s.Labels.Check("labels"); err != nil {
			return Scenario{}, locateField(b, err.Error(), "labels")
		}
	}
	if path, err := s.Expect.CheckCounts(); err != nil {
		if line := keys.lines[path]; line > 0 {
			return Scenario{}, fmt.Errorf("line %d: %w", line, err)
		}
		return Scenario{}, err
	}
	return s, nil
}

// FieldValueError is the error of a value that decodes itself and is
// found at one field of scenario.json only (expect.admitted,
// intended_limit): Path is that field's path, and DecodeScenario names
// its line. Error is Err's message alone (a plan names the field itself).
type FieldValueError struct {
	Path string
	Err  error
}

func (e *FieldValueError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *FieldValueError) Unwrap() error { return e.Err }

var (
	unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)
	specFieldRE    = regexp.MustCompile(`limiter spec: ([a-z_]+)(?:\[\d+\])?(?:\.([a-z_]+))?:`)
)

// locate names the line of a decoding error: the offset of a syntax or type
// error, the last line of a file cut short (as JSONError names it for the
// other evidence documents), or the first line with the unknown field as a
// key.
func locate(b []byte, err error) error {
	var se *stdjson.SyntaxError
	var te *stdjson.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("line %d: unexpected end of JSON input", lineAt(b, len(b)))
	case errors.As(err, &se):
		return jsonline.Wrap(b, err)
	case errors.As(err, &te) && te.Field == "":
		return fmt.Errorf("line %d: %w", lineAt(b, int(te.Offset)), err)
	case errors.As(err, &te):
		return fmt.Errorf("line %d: %s: %w", lineAt(b, int(te.Offset)), te.Field, err)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		return locateField(b, msg, m[1])
	}
	if m := specFieldRE.FindStringSubmatch(msg); m != nil {
		f := m[1]
		if m[2] != "" {
			f = m[2]
		}
		return locateField(b, msg, f)
	}
	return errors.New(msg)
}

// locateSpec names the line of an error inside a limiter's model
// (model.Spec decodes itself, so a type error's offset counts from the
// spec's start, not the file's, and a duration's error has none): the
// limiter is the first whose model fails to decode with the same error,
// the field the type error's or the first that fails alongside the kind
// alone ("window": "ten"), the line that of the field
// ("limiters[1].model.burst"), or of its "model" key. Nil for any other
// error, and for the spec's own field errors (locate names them).
func locateSpec(b []byte, keys *jsonKeys, err error) error {
	var te *stdjson.UnmarshalTypeError
	isType := errors.As(err, &te)
	if !strings.HasPrefix(err.Error(), "limiter spec: ") || !isType && errors.As(err, new(*model.FieldError)) {
		return nil
	}
	var doc struct {
		Limiters []struct {
			Model stdjson.RawMessage `json:"model"`
		} `json:"limiters"`
	}
	if stdjson.Unmarshal(b, &doc) != nil {
		return nil
	}
	for i, l := range doc.Limiters {
		var sp model.Spec
		if len(l.Model) == 0 {
			continue
		}
		if e := stdjson.Unmarshal(l.Model, &sp); e == nil || e.Error() != err.Error() {
			continue
		}
		path := fmt.Sprintf("limiters[%d].model", i)
		field := ""
		if isType {
			field = te.Field
		} else {
			field = failingSpecField(l.Model)
		}
		if line := keys.lines[path+"."+field]; field != "" && line > 0 {
			return fmt.Errorf("line %d: %s.%s: %w", line, path, field, err)
		}
		if line := keys.lines[path]; line > 0 {
			return fmt.Errorf("line %d: %s: %w", line, path, err)
		}
		return nil
	}
	return nil
}

// failingSpecField returns the first field of the limiter model raw (in
// name order) that does not decode with its kind alone; "" when none.
func failingSpecField(raw []byte) string {
	var fields map[string]stdjson.RawMessage
	if stdjson.Unmarshal(raw, &fields) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k == "kind" {
			continue
		}
		one, err := stdjson.Marshal(map[string]stdjson.RawMessage{"kind": fields["kind"], k: fields[k]})
		var sp model.Spec
		if err == nil && stdjson.Unmarshal(one, &sp) != nil {
			return k
		}
	}
	return ""
}

// locateField prefixes msg with the line of the first `"field":` in b.
func locateField(b []byte, msg, field string) error {
	if field != "" {
		re := regexp.MustCompile(`"` + regexp.QuoteMeta(field) + `"\s*:`)
		if loc := re.FindIndex(b); loc != nil {
			return fmt.Errorf("line %d: %s", lineAt(b, loc[0]), msg)
		}
	}
	return errors.New(msg)
}

// fieldOf returns the JSON field a validation error starts with ("name: ...").
func fieldOf(err error) string {
	s := err.Error()
	if m := specFieldRE.FindStringSubmatch(s); m != nil {
		if m[2] != "" {
			return m[2]
		}
		return m[1]
	}
	f, _, _ := strings.Cut(s, ":")
	f, _, _ = strings.Cut(f, ",")
	f, _, _ = strings.Cut(f, "[")
	if i := strings.LastIndexByte(f, '.'); i >= 0 {
		f = f[i+1:]
	}
	return strings.TrimSpace(f)
}

// lineAt is the 1-based line of byte offset off in b (jsonline.Line).
func lineAt(b []byte, off int) int { return jsonline.Line(b, int64(off)) }

// lineCounter is lineAt for offsets asked in increasing order (a token
// scan): it counts each byte of b once, where lineAt per key would count
// the whole prefix again (quadratic in the number of keys).
type lineCounter struct {
	b         []byte
	off, line int
}

// at returns the 1-based line of offset off; an offset before the last
// one asked is counted from the start.
func (c *lineCounter) at(off int) int {
	off = min(max(off, 0), len(c.b))
	if c.line == 0 || off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.b[c.off:off], []byte{'\n'})
	c.off = off
	return c.line
}

// textLine is the line of the first JSON string in b whose value is s,
// written with or without HTML escapes (encoding/json writes "<" as
// \u003c); 0 when there is none.
func textLine(b []byte, s string) int {
	var plain bytes.Buffer
	enc := stdjson.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return 0
	}
	escaped, _ := stdjson.Marshal(s)
	for _, q := range [][]byte{bytes.TrimSuffix(plain.Bytes(), []byte("\n")), escaped} {
		if i := bytes.Index(b, q); i >= 0 {
			return lineAt(b, i)
		}
	}
	return 0
}
