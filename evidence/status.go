package evidence

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
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
// Spaces in the scenario name are written as '_' so that the first field
// stays one word; #<repeat> is present when the scenario ran more than once.
// The reason is one line.
type StatusLine struct {
	// Scenario is the scenario name with spaces replaced by '_'.
	Scenario string `json:"scenario"`
	// Repeat is the 1-based repeat, 0 when the line carries none.
	Repeat int `json:"repeat"`
	// Status is Pass, Fail or NotRun.
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// NewStatusLine builds the line of a scenario run; repeat 0 omits #<repeat>.
// Whitespace runs in reason become one space.
func NewStatusLine(name string, repeat int, status, reason string) StatusLine {
	return StatusLine{Scenario: strings.ReplaceAll(name, " ", "_"), Repeat: repeat, Status: status,
		Reason: strings.Join(strings.Fields(reason), " ")}
}

// String formats the line without its newline.
func (l StatusLine) String() string {
	name := l.Scenario
	if l.Repeat > 0 {
		name += "#" + strconv.Itoa(l.Repeat)
	}
	return name + " " + l.Status + " " + l.Reason
}

// ParseStatusLine parses one line of status.txt (without newline).
func ParseStatusLine(s string) (StatusLine, error) {
	name, rest, ok1 := strings.Cut(s, " ")
	status, reason, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 && status == "" || name == "" {
		return StatusLine{}, fmt.Errorf("status line %q: want \"<scenario> <PASS|FAIL|NOT_RUN> <reason>\"", s)
	}
	if status != Pass && status != Fail && status != NotRun {
		return StatusLine{}, fmt.Errorf("status line %q: status %q is not PASS, FAIL or NOT_RUN", s, status)
	}
	l := StatusLine{Scenario: name, Status: status, Reason: reason}
	if i := strings.LastIndexByte(name, '#'); i > 0 {
		if n, err := strconv.Atoi(name[i+1:]); err == nil && n > 0 {
			l.Scenario, l.Repeat = name[:i], n
		}
	}
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
// ("<name>:<line>: ..."). Blank lines are skipped.
func ReadStatus(r io.Reader, name string) ([]StatusLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []StatusLine
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		l, err := ParseStatusLine(sc.Text())
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
