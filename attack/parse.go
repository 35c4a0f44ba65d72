package attack

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/net/http/httpguts"

	"github.com/rlbench/rlbench/evidence"
)

// ParseRate parses the rate syntax of `rlbench attack --rate` and of a plan's
// attack.rate into Options.Rate: "N/DURATION" ("100/1s", "10/100ms"; a unit
// without a number means one of it, "60/m" = 60 per minute), or "N" (per
// second). "", "0" and "infinity" are the zero Rate: no pacing, every ID as
// soon as a worker is free. N must be a positive integer and DURATION a
// positive Go duration (time.ParseDuration); anything else is an error
// naming the input. The syntax is vegeta's -rate flag (tsenart/vegeta
// flags.go rateFlag), except that the unit may omit its 1.
func ParseRate(s string) (vegeta.Rate, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" || s == "infinity" {
		return vegeta.Rate{}, nil
	}
	freq, per, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(freq)
	if err != nil || n <= 0 {
		return vegeta.Rate{}, fmt.Errorf("rate %q: want N/duration such as 100/1s", s)
	}
	d := time.Second
	if ok {
		if !strings.ContainsAny(per, "0123456789") {
			per = "1" + per
		}
		if d, err = time.ParseDuration(per); err != nil || d <= 0 {
			return vegeta.Rate{}, fmt.Errorf("rate %q: bad duration %q", s, per)
		}
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
