package nginx

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/nginxrec"
)

// ParseStubStatus parses a stub_status page read from r (name is used in errors, "<name>:<line>: ..."). Lines may
// end in spaces or "\r"; blank lines are skipped. A page that is not the four lines above, or whose numbers are not
// non-negative integers, is an error naming the line.
func ParseStubStatus(r io.Reader, name string) (nginxrec.StubStatus, error) {
	var s nginxrec.StubStatus
	sc := bufio.NewScanner(io.LimitReader(r, 1<<20))
	lineNo, seen := 0, 0
	num := func(field string, v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, lineErr(name, lineNo, "%s %q is not a non-negative integer", field, v)
		}
		return n, nil
	}
	for sc.Scan() {
		lineNo++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		var err error
		switch seen {
		case 0:
			if len(f) != 3 || f[0] != "Active" || f[1] != "connections:" {
				return s, lineErr(name, lineNo, "want \"Active connections: N\", got %q", clip(sc.Text()))
			}
			s.Active, err = num("active connections", f[2])
		case 1:
			if strings.Join(f, " ") != "server accepts handled requests" {
				return s, lineErr(name, lineNo, "want \"server accepts handled requests\", got %q", clip(sc.Text()))
			}
		case 2:
			if len(f) != 3 {
				return s, lineErr(name, lineNo, "want three counters \" accepts handled requests\", got %q", clip(sc.Text()))
			}
			if s.Accepts, err = num("accepts", f[0]); err == nil {
				if s.Handled, err = num("handled", f[1]); err == nil {
					s.Requests, err = num("requests", f[2])
				}
			}
		case 3:
			if len(f) != 6 || f[0] != "Reading:" || f[2] != "Writing:" || f[4] != "Waiting:" {
				return s, lineErr(name, lineNo, "want \"Reading: r Writing: w Waiting: k\", got %q", clip(sc.Text()))
			}
			if s.Reading, err = num("reading", f[1]); err == nil {
				if s.Writing, err = num("writing", f[3]); err == nil {
					s.Waiting, err = num("waiting", f[5])
				}
			}
		default:
			return s, lineErr(name, lineNo, "unexpected line after the four stub_status lines: %q", clip(sc.Text()))
		}
		if err != nil {
			return s, err
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return s, lineErr(name, lineNo+1, "read: %v", err)
	}
	if seen < 4 {
		return s, lineErr(name, lineNo+1, "stub_status page ends after %d of its 4 lines", seen)
	}
	return s, nil
}

// StubStatusDelta is the change of the counters between two snapshots of one nginx instance, and the gauges of
// the later one.
type StubStatusDelta struct {
	Accepts  int64 `json:"accepts"`
	Handled  int64 `json:"handled"`
	Requests int64 `json:"requests"`
	// Dropped is Accepts - Handled: connections accepted but closed at once because worker_connections was
	// reached (the doc page's "handled" note).
	Dropped int64 `json:"dropped"`
	// After holds the gauges of the later snapshot (Active, Reading, Writing, Waiting).
	After nginxrec.StubStatus `json:"after"`
}

// Delta returns after minus before. Both must come from one nginx instance that ran all the time: a counter that
// went down (a restart in between) is an error. Requests counts the later status request too (it is counted
// before its page is written) but not the earlier one's (already counted in before).
func Delta(before, after nginxrec.StubStatus) (StubStatusDelta, error) {
	d := StubStatusDelta{Accepts: after.Accepts - before.Accepts, Handled: after.Handled - before.Handled,
		Requests: after.Requests - before.Requests, After: after}
	if d.Accepts < 0 || d.Handled < 0 || d.Requests < 0 {
		return d, fmt.Errorf("nginx stub_status: counters went down (accepts %d→%d, handled %d→%d, requests %d→%d): not one running instance",
			before.Accepts, after.Accepts, before.Handled, after.Handled, before.Requests, after.Requests)
	}
	d.Dropped = d.Accepts - d.Handled
	return d, nil
}

// FetchStubStatus GETs a stub_status URL with client and returns the raw body and the parsed page. A status other
// than 200, a body over 1 MiB or a page that does not parse is an error naming the URL; the raw body is returned
// whenever it was read, so a caller can keep it as evidence. Errors name the
// URL redacted (evidence.RedactURL).
func FetchStubStatus(ctx context.Context, client *http.Client, rawURL string) ([]byte, nginxrec.StubStatus, error) {
	url := evidence.RedactURL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nginxrec.StubStatus{}, fmt.Errorf("nginx stub_status %s: %w", url, evidence.RedactError(err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nginxrec.StubStatus{}, fmt.Errorf("nginx stub_status: %w", evidence.RedactError(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
	if err != nil {
		return raw, nginxrec.StubStatus{}, fmt.Errorf("nginx stub_status %s: read: %w", url, err)
	}
	if len(raw) > 1<<20 {
		return raw[:1<<20], nginxrec.StubStatus{}, fmt.Errorf("nginx stub_status %s: body over 1 MiB", url)
	}
	if resp.StatusCode != http.StatusOK {
		return raw, nginxrec.StubStatus{}, fmt.Errorf("nginx stub_status %s: HTTP %d", url, resp.StatusCode)
	}
	s, err := ParseStubStatus(strings.NewReader(string(raw)), url)
	return raw, s, err
}

// lineErr is an *evidence.LineError ("<name>:<line>: <message>").
func lineErr(name string, line int, format string, a ...any) error {
	return &evidence.LineError{File: name, Line: line, Err: fmt.Errorf(format, a...)}
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
