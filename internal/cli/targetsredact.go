package cli

import (
	"regexp"
	"strings"

	"github.com/rlbench/rlbench/evidence"
)

// jsonSnippetRE matches the input that a vegeta JSON targets error quotes
// ("parse error: expected [ near offset 124 of 'Bearer AUT...'"): the first
// bytes of a header value or URL, which may be a credential's.
var jsonSnippetRE = regexp.MustCompile(` of '[^']*'`)

// targetsFileError redacts an error of vegeta's targeters (--targets-file):
// the HTTP format's "bad header: LINE" quotes the header line as written,
// "Authorization Bearer ..." without its ':' among them, which
// evidence.RedactText does not see as a header; it is redacted as a header
// field (evidence.RedactHeaderField). The JSON format's parse errors quote
// the bytes where decoding stopped: the quotation is dropped. Everything
// else goes through evidence.RedactText. errors.Is still sees err.
func targetsFileError(err error) error {
	msg := err.Error()
	red := msg
	if pre, line, ok := strings.Cut(msg, "bad header: "); ok {
		red = pre + "bad header: " + evidence.RedactHeaderField(line)
	}
	red = evidence.RedactText(jsonSnippetRE.ReplaceAllString(red, ""))
	if red == msg {
		return err
	}
	return &redactedTargetsError{msg: red, err: err}
}

type redactedTargetsError struct {
	msg string
	err error
}

func (e *redactedTargetsError) Error() string { return e.msg }
func (e *redactedTargetsError) Unwrap() error { return e.err }
