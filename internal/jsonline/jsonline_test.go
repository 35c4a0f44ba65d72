package jsonline

import (
	stdjson "encoding/json"
	"errors"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"
)

func TestWrapBothDecoders(t *testing.T) {
	doc := []byte("{\n  \"a\": 1,\n  \"b\": \"x\"\n}\n")
	var v struct{ A, B int }
	for name, err := range map[string]error{
		"encoding/json": stdjson.Unmarshal(doc, &v),
		"goccy/go-json": gojson.Unmarshal(doc, &v),
	} {
		if err == nil {
			t.Fatalf("%s: no type error", name)
		}
		if got := Wrap(doc, err).Error(); !strings.HasPrefix(got, "line 3: ") {
			t.Errorf("%s: %q, want line 3", name, got)
		}
	}
	bad := []byte("{\n\n  \"a\": 1,,\n}")
	for name, err := range map[string]error{
		"encoding/json": stdjson.Unmarshal(bad, &v),
		"goccy/go-json": gojson.Unmarshal(bad, &v),
	} {
		if got := Wrap(bad, err).Error(); !strings.HasPrefix(got, "line 3: ") {
			t.Errorf("%s syntax: %q, want line 3", name, got)
		}
	}
	plain := errors.New("other")
	if Wrap(doc, plain) != plain {
		t.Errorf("an error without an offset changed")
	}
}

func TestLineClamps(t *testing.T) {
	b := []byte("a\nb\nc")
	for off, want := range map[int64]int{-5: 1, 0: 1, 2: 2, 4: 3, 99: 3} {
		if got := Line(b, off); got != want {
			t.Errorf("Line(%d) = %d, want %d", off, got, want)
		}
	}
}

func TestPathLine(t *testing.T) {
	b := []byte("{\n \"a\": {\"x\": 1},\n \"s\": [\n  {\"status\": \"PASS\"},\n  {\"checks\": [{}, {\n   \"status\": \"bogus\"}]}]}")
	for path, want := range map[string]int{"a": 2, "a.x": 2, "s[0].status": 4, "s[1].checks[1].status": 6, "s[2]": 0, "nope": 0} {
		if got := PathLine(b, path); got != want {
			t.Errorf("PathLine(%q) = %d, want %d", path, got, want)
		}
	}
}

// TestWrapBOM: a document that starts with a byte-order mark was reported
// as "invalid character 'ï'"; it is ErrBOM on line 1, from either decoder.
func TestWrapBOM(t *testing.T) {
	doc := []byte("\xef\xbb\xbf{\"a\": 1}")
	var v struct{ A int }
	for name, err := range map[string]error{
		"encoding/json": stdjson.Unmarshal(doc, &v),
		"goccy/go-json": gojson.Unmarshal(doc, &v),
	} {
		got := Wrap(doc, err)
		if !errors.Is(got, ErrBOM) || !strings.HasPrefix(got.Error(), "line 1: a byte-order mark") {
			t.Errorf("%s: %v", name, got)
		}
	}
	later := []byte("{\"a\":\n\xef\xbb\xbf1}")
	if err := Wrap(later, stdjson.Unmarshal(later, &v)); errors.Is(err, ErrBOM) {
		t.Errorf("a mark past the start: %v", err)
	}
}
