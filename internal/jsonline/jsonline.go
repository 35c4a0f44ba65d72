// Package jsonline names the line of a JSON decoding error: the one owner of
// "byte offset to line" for both decoders rlbench uses, encoding/json and
// github.com/goccy/go-json, whose syntax and type errors carry the offset
// of the input they stopped at (json.SyntaxError.Offset,
// json.UnmarshalTypeError.Offset).
package jsonline

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"

	gojson "github.com/goccy/go-json"
)

// Offset returns the byte offset of the input that a syntax or type error
// of either decoder points at; ok is false for any other error, or a type
// error without an offset.
func Offset(err error) (off int64, ok bool) {
	var (
		se  *stdjson.SyntaxError
		te  *stdjson.UnmarshalTypeError
		gse *gojson.SyntaxError
		gte *gojson.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return se.Offset, true
	case errors.As(err, &te):
		return te.Offset, te.Offset > 0
	case errors.As(err, &gse):
		return gse.Offset, true
	case errors.As(err, &gte):
		return gte.Offset, gte.Offset > 0
	}
	return 0, false
}

// Line is the 1-based line of byte offset off in b; an offset before b is
// line 1, one past its end the last line.
func Line(b []byte, off int64) int {
	return 1 + bytes.Count(b[:min(max(off, 0), int64(len(b)))], []byte{'\n'})
}

// ErrBOM is the error of a document that starts with a UTF-8 byte-order
// mark (EF BB BF): JSON texts carry none (RFC 8259 section 8.1), and
// rlbench's readers do not skip one, so the decoders stop at it with
// "invalid character 'ï'".
var ErrBOM = errors.New("a byte-order mark (U+FEFF) starts the file: save it as UTF-8 without one (RFC 8259 section 8.1)")

var bom = []byte("\xef\xbb\xbf")

// Wrap prefixes err, from decoding the whole document b, with "line N: "
// when it carries an offset (Offset); any other error is returned as is.
// A syntax error at a byte-order mark that starts b is ErrBOM.
func Wrap(b []byte, err error) error {
	off, ok := Offset(err)
	if !ok {
		return err
	}
	if bytes.HasPrefix(b, bom) && off <= int64(len(bom)) {
		return fmt.Errorf("line 1: %w", ErrBOM)
	}
	return fmt.Errorf("line %d: %w", Line(b, off), err)
}

// PathLine returns the line of the key at path in the JSON document b
// ("scenarios[0].checks[2].status": object keys joined by dots, array
// items by [i]), the first occurrence when a key repeats; 0 when b has no
// such key or is not JSON up to it.
func PathLine(b []byte, path string) int {
	dec := stdjson.NewDecoder(bytes.NewReader(b))
	found := 0
	var walk func(p string, depth int) bool // false: stop
	walk = func(p string, depth int) bool {
		tok, err := dec.Token()
		if err != nil || depth > 1000 {
			return false
		}
		d, ok := tok.(stdjson.Delim)
		if !ok {
			return true
		}
		switch d {
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				key, ok := kt.(string)
				if err != nil || !ok {
					return false
				}
				kp := key
				if p != "" {
					kp = p + "." + key
				}
				if kp == path {
					found = Line(b, dec.InputOffset())
					return false
				}
				if !walk(kp, depth+1) {
					return false
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if !walk(fmt.Sprintf("%s[%d]", p, i), depth+1) {
					return false
				}
			}
		}
		_, err = dec.Token()
		return err == nil
	}
	walk("", 0)
	return found
}
