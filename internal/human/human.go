// Package human writes attack figures as text for a person: status code
// counts and live progress lines (never Go's map syntax). The CLI and the
// plan runner use it for their stderr lines.
package human

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/attack"
)

// Codes writes counts per target and status code, targets and codes in
// order, e.g. "proxy-a: 5 × 200, 5 × 429; proxy-b: 10 × 200"; a target
// without requests is left out; no requests at all is "none". Code "0"
// (no status) counts both requests without a response and, notSent of
// them, requests that never left the client (README: not sent is not "no
// response"): it is written "no response" when notSent is 0 and "not sent"
// when every code 0 is one. When both are among them and one target has
// all the code-0 requests, they are split ("2 × no response, 1 × not
// sent"); otherwise (the counts per target do not tell them apart) they
// are "no response or not sent", followed by how many of all were not sent.
func Codes(byTarget map[string]map[string]int, notSent int) string {
	targets := make([]string, 0, len(byTarget))
	zero, zeroTargets := 0, 0
	for t, m := range byTarget {
		if len(m) > 0 {
			targets = append(targets, t)
		}
		zero += m["0"]
		if m["0"] > 0 {
			zeroTargets++
		}
	}
	sort.Strings(targets)
	none := "no response"
	split, suffix := false, ""
	switch {
	case notSent > 0 && notSent >= zero:
		none = "not sent"
	case notSent > 0 && zeroTargets == 1:
		split = true
	case notSent > 0:
		none = "no response or not sent"
		suffix = fmt.Sprintf(" (%d of the %d without a status not sent)", notSent, zero)
	}
	var parts []string
	for _, t := range targets {
		zeroText := func(n int) string { return fmt.Sprintf("%d × %s", n, none) }
		if split {
			zeroText = func(n int) string { return fmt.Sprintf("%d × no response, %d × not sent", n-notSent, notSent) }
		}
		parts = append(parts, t+": "+codeList(byTarget[t], zeroText))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ") + suffix
}

func codeList(m map[string]int, zeroText func(n int) string) string {
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		a, _ := strconv.Atoi(codes[i])
		b, _ := strconv.Atoi(codes[j])
		return a < b
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		if c == "0" {
			parts[i] = zeroText(m[c])
		} else {
			parts[i] = fmt.Sprintf("%d × %s", m[c], c)
		}
	}
	return strings.Join(parts, ", ")
}

// Progress writes a snapshot as one line without a newline, e.g.
// "120/500 sent, 118 answered (200: 100, 429: 18), 40/s, 9.5s left", or
// "warming connections for 500 requests" before the start.
func Progress(s attack.ProgressSnapshot) string {
	if !s.Started {
		return fmt.Sprintf("warming connections for %d requests", s.Total)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d sent, %d answered", s.Sent, s.Total, s.Answered)
	if len(s.Codes) > 0 {
		parts := make([]string, len(s.Codes))
		for i, c := range s.Codes {
			parts[i] = fmt.Sprintf("%d: %d", c.Code, c.N)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if s.NoResponse > 0 {
		fmt.Fprintf(&b, ", %d without response", s.NoResponse)
	}
	if s.NotSent > 0 {
		fmt.Fprintf(&b, ", %d not sent", s.NotSent)
	}
	fmt.Fprintf(&b, ", %s/s", rate(s.PerSec))
	switch {
	case s.Done:
		fmt.Fprintf(&b, ", done in %s", Duration(s.Elapsed))
	case s.Left > 0:
		fmt.Fprintf(&b, ", %s left", Duration(s.Left))
	}
	return b.String()
}

func rate(r float64) string {
	if r >= 100 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

// Duration rounds d for reading: to 0.1 s below a minute, to the second
// above.
func Duration(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
