package evidence

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// Verdicts of a scenario, as in StatusLine.Status. NOT_RUN covers both a
// scenario that did not execute and one whose evidence is missing,
// truncated or inconclusive: nothing incomplete is PASS.
const (
	Pass   = "PASS"
	Fail   = "FAIL"
	NotRun = "NOT_RUN"
)

// StatusLine is one line of status.txt:
//
//	<scenario>[#<repeat>] <PASS|FAIL|NOT_RUN> <reason>
//
// A scenario name that is not one plain word (it holds whitespace, '"' or
// '#', or is empty) is written as a Go quoted string, so that the first
// field stays one field: "two local buckets" PASS ... ; #<repeat> is present
// when the scenario ran more than once. The reason is one line. Files
// written before names were quoted (spaces written as '_') still read, the
// '_' kept.
type StatusLine struct {
	// Scenario is the scenario name as given.
	Scenario string `json:"scenario"`
	// Repeat is the 1-based repeat, 0 when the line carries none.
	Repeat int `json:"repeat"`
	// Status is Pass, Fail or NotRun.
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// NewStatusLine builds the line of a scenario run; repeat 0 omits #<repeat>.
// Whitespace runs in reason become one space, and a credential quoted in it
// (from evidence an older release wrote) is redacted (RedactText).
func NewStatusLine(name string, repeat int, status, reason string) StatusLine {
	return StatusLine{Scenario: name, Repeat: repeat, Status: status, Reason: RedactText(strings.Join(strings.Fields(reason), " "))}
}

// plainName reports whether name can be written unquoted.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r == '"' || r == '#' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// String formats the line without its newline.
func (l StatusLine) String() string {
	name := l.Scenario
	if !plainName(name) {
		name = strconv.Quote(name)
	}
	if l.Repeat > 0 {
		name += "#" + strconv.Itoa(l.Repeat)
	}
	return name + " " + l.Status + " " + l.Reason
}

// ParseStatusLine parses one line of status.txt (without newline).
func ParseStatusLine(s string) (StatusLine, error) {
	bad := func() (StatusLine, error) {
		return StatusLine{}, fmt.Errorf("status line %q: want \"<scenario> <PASS|FAIL|NOT_RUN> <reason>\"", s)
	}
	var l StatusLine
	var rest string
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return StatusLine{}, fmt.Errorf("status line %q: scenario name: %v", s, err)
		}
		l.Scenario, _ = strconv.Unquote(q)
		tail, r, ok := strings.Cut(s[len(q):], " ")
		if !ok {
			return bad()
		}
		if tail != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(tail, "#"))
			if !strings.HasPrefix(tail, "#") || err != nil || n <= 0 {
				return StatusLine{}, fmt.Errorf("status line %q: %q after the quoted scenario name is not #<repeat>", s, tail)
			}
			l.Repeat = n
		}
		rest = r
	} else {
		name, r, ok := strings.Cut(s, " ")
		if !ok || name == "" {
			return bad()
		}
		l.Scenario, rest = name, r
		if i := strings.LastIndexByte(name, '#'); i > 0 {
			if n, err := strconv.Atoi(name[i+1:]); err == nil && n > 0 {
				l.Scenario, l.Repeat = name[:i], n
			}
		}
	}
	status, reason, ok := strings.Cut(rest, " ")
	if !ok && status == "" {
		return bad()
	}
	if status != Pass && status != Fail && status != NotRun {
		return StatusLine{}, fmt.Errorf("status line %q: status %q is not PASS, FAIL or NOT_RUN", s, status)
	}
	l.Status, l.Reason = status, reason
	return l, nil
}

// WriteStatus writes the lines to w, one per line.
func WriteStatus(w io.Writer, lines []StatusLine) error {
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.WriteString(l.String())
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ReadStatus parses status.txt read from r; name is used in errors
// ("<name>:<line>: ..."). Blank lines are skipped; every carriage return
// at a line's end is dropped (a file edited on Windows, or saved twice
// through a CRLF conversion, reads as the lines WriteStatus wrote).
func ReadStatus(r io.Reader, name string) ([]StatusLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []StatusLine
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		l, err := ParseStatusLine(text)
		if err != nil {
			return out, &LineError{File: name, Line: n, Err: err}
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
