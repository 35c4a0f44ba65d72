package attack

import (
	"fmt"
	"net/http"
	"strings"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/net/http/httpguts"

	"github.com/rlbench/rlbench/evidence"
)

// ParseRate parses the rate syntax of `rlbench attack --rate` and of a plan's
// attack.rate into Options.Rate (evidence.ParseAttackRate owns the syntax:
// "N/DURATION", "N" per second, and "", "0" or "infinity" for no pacing).
// The syntax is vegeta's -rate flag (tsenart/vegeta flags.go rateFlag),
// except that the unit may omit its 1.
func ParseRate(s string) (vegeta.Rate, error) {
	n, d, err := evidence.ParseAttackRate(s)
	if err != nil {
		return vegeta.Rate{}, err
	}
	return vegeta.Rate{Freq: n, Per: d}, nil
}

// FormatRate writes r in ParseRate's syntax: "N/DURATION" ("100/1s"), or
// "" for the zero Rate (no pacing); ParseRate(FormatRate(r)) == r.
func FormatRate(r vegeta.Rate) string {
	if r.Freq == 0 && r.Per == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%s", r.Freq, r.Per)
}

// ParseHeader parses one request header written "Name: value" (the syntax
// of curl -H and vegeta -header) for Options.Header. Blanks (SP, HTAB)
// around the name and the value are dropped; what remains is checked with
// CheckHeader, so a header that would not go on the wire as written is an
// error here, before anything is sent.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", fmt.Errorf("header %q: want \"Name: value\"", evidence.RedactHeaderField(s))
	}
	name, value = strings.Trim(name, " \t"), strings.Trim(value, " \t")
	if err := CheckHeader(name, value); err != nil {
		return "", "", fmt.Errorf("header %q: %w", evidence.RedactHeaderField(s), err)
	}
	return name, value, nil
}

// CheckHeader reports whether name and value form a valid HTTP field: the
// name a non-empty token and the value free of control characters other
// than HTAB, so no CR or LF (RFC 9110 section 5.1 and 5.5; checked with
// golang.org/x/net/http/httpguts, as net/http's transport does before it
// refuses such a request).
func CheckHeader(name, value string) error {
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Errorf("invalid header name %q: want a token (letters, digits and !#$%%&'*+-.^_`|~)", name)
	}
	if !httpguts.ValidHeaderFieldValue(value) {
		return fmt.Errorf("the value of %s holds a control character (CR, LF, NUL...)", name)
	}
	return nil
}

// CheckRequest reports, wrapping ErrInvalidOptions, what Run would refuse
// in a request's method, path and headers before sending anything (the
// method is upper-cased first, as Run does): the method must be an RFC 9110
// token (section 9.1) other than CONNECT; the path empty or starting with
// '/', without '#', spaces or control characters; every header as
// CheckHeader wants it. A plan checks its attacks with it when loaded.
func CheckRequest(method, path string, header http.Header) error {
	_, err := checkRequest("", method, path, header)
	return err
}
