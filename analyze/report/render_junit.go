package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// JUnit XML, in the shape CI systems read (Jenkins' JUnit plugin, GitLab's
// unit test reports): <testsuites> holding one <testsuite> per run, one
// <testcase> per scenario run with name, classname and time (seconds); a
// FAIL has a <failure> whose message is the first reason and whose text is
// every reason; a NOT_RUN has a <skipped> with the reason as message.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit renders the report as JUnit XML: one testsuite for the run
// (named after the evidence directory), one testcase per scenario run
// (classname "rlbench.<run>"), FAIL as failure with the reasons, NOT_RUN as
// skipped with the reason; each testcase's system-out lists its checks.
func WriteJUnit(w io.Writer, rep *Report) error {
	repeats := repeatsByName(rep)
	run := filepath.Base(filepath.Clean(rep.Dir))
	suite := junitSuite{Name: run, Timestamp: rep.GeneratedAt}
	var total time.Duration
	for _, s := range rep.Scenarios {
		d := time.Duration(max(s.EndNs-s.StartNs, 0))
		total += d
		c := junitCase{Name: scenarioLabel(s, repeats), Classname: "rlbench." + run, Time: seconds(d)}
		var out strings.Builder
		if s.Expectation != "" {
			fmt.Fprintf(&out, "expect: %s\n", s.Expectation)
		}
		for _, ch := range s.Checks {
			fmt.Fprintf(&out, "%s %s: want %s, got %s\n", ch.Status, ch.Name, ch.Want, ch.Got)
		}
		c.SystemOut = out.String()
		first := ""
		if len(s.Reasons) > 0 {
			first = s.Reasons[0]
		}
		switch s.Status {
		case evidence.Fail:
			suite.Failures++
			c.Failure = &junitMessage{Message: first, Type: evidence.Fail, Text: strings.Join(s.Reasons, "\n")}
		case evidence.NotRun:
			suite.Skipped++
			c.Skipped = &junitMessage{Message: strings.Join(s.Reasons, "; ")}
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests, suite.Time = len(suite.Cases), seconds(total)
	doc := junitSuites{Name: "rlbench", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds formats d in seconds with millisecond precision, as JUnit's time.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }
