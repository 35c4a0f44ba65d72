package rls

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// TimerTotals summarises the `|ms` samples of one timer.
type TimerTotals struct {
	Count int     `json:"count"`
	Sum   float64 `json:"sum"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
}

// StatsdTotals is what a stream of statsd lines adds up to. gostats (the RLS
// stats library) flushes counters as deltas since the previous flush and
// skips zero deltas, so counters are summed; gauges are sent on every flush,
// so the last value is kept; each `|ms` line is one timer sample.
type StatsdTotals struct {
	Name string `json:"name"`
	// Lines counts metric lines; Conns counts "accepted" connection events of
	// a TSV capture.
	Lines int `json:"lines"`
	Conns int `json:"conns,omitempty"`
	// Counters maps a stat name to the sum of its deltas; CounterFlushes to
	// the number of lines (non-zero flushes) that carried it.
	Counters       map[string]float64      `json:"counters"`
	CounterFlushes map[string]int          `json:"counter_flushes"`
	Gauges         map[string]float64      `json:"gauges"`
	Timers         map[string]*TimerTotals `json:"timers"`
	// FirstNs and LastNs are the first and last receive times (unix ns) when
	// the input carried them (TSV or ListenStatsd JSONL), else 0.
	FirstNs int64 `json:"first_ns,omitempty"`
	LastNs  int64 `json:"last_ns,omitempty"`
	// Malformed counts received lines (ListenStatsd captures) that are not
	// statsd; MalformedLines names the first ten by line.
	Malformed      int      `json:"malformed,omitempty"`
	MalformedLines []string `json:"malformed_lines,omitempty"`
	// Rejected counts statsd lines whose value cannot be summed: NaN or an
	// infinity, a sample rate outside [MinSampleRate, 1], or a value that
	// would make a sum overflow to infinity. They are left out of the
	// totals, which stay valid; RejectedLines names the first ten by line.
	Rejected      int      `json:"rejected,omitempty"`
	RejectedLines []string `json:"rejected_lines,omitempty"`
}

// MinSampleRate is the smallest statsd sample rate (`|@rate`) accepted: a
// counter line sampled at rate r stands for 1/r events, so a rate like
// 1e-320 would turn one line into +Inf. gostats never samples (it writes
// `%s:%d|c`); statsd clients that do use rates like 0.1 or 0.001.
const MinSampleRate = 1e-6

// maxRejectedLines bounds MalformedLines and RejectedLines.
const maxRejectedLines = 10

func (t *StatsdTotals) reject(where string, err error) {
	t.Rejected++
	if len(t.RejectedLines) < maxRejectedLines {
		t.RejectedLines = append(t.RejectedLines, fmt.Sprintf("%s: %v", where, err))
	}
}

func newStatsdTotals(name string) *StatsdTotals {
	return &StatsdTotals{Name: name, Counters: map[string]float64{}, CounterFlushes: map[string]int{},
		Gauges: map[string]float64{}, Timers: map[string]*TimerTotals{}}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// add sums one sample into t. It returns an error, and changes nothing,
// when v is not finite or the sum it joins would overflow.
func (t *StatsdTotals) add(name string, v float64, kind string, ns int64) error {
	if !finite(v) {
		return fmt.Errorf("%s: value %v is not a finite number", name, v)
	}
	var sum float64
	switch kind {
	case "c":
		sum = t.Counters[name] + v
	case "g+":
		sum = t.Gauges[name] + v
	case "ms", "h", "d":
		if tt := t.Timers[name]; tt != nil {
			sum = tt.Sum + v
		}
	}
	if !finite(sum) {
		return fmt.Errorf("%s: adding %v overflows the sum", name, v)
	}
	t.Lines++
	if ns != 0 {
		if t.FirstNs == 0 || ns < t.FirstNs {
			t.FirstNs = ns
		}
		if ns > t.LastNs {
			t.LastNs = ns
		}
	}
	switch kind {
	case "c":
		t.Counters[name] += v
		t.CounterFlushes[name]++
	case "g":
		t.Gauges[name] = v
	case "g+":
		t.Gauges[name] += v
	case "ms", "h", "d":
		tt := t.Timers[name]
		if tt == nil {
			tt = &TimerTotals{Min: v, Max: v}
			t.Timers[name] = tt
		}
		tt.Count++
		tt.Sum += v
		if v < tt.Min {
			tt.Min = v
		}
		if v > tt.Max {
			tt.Max = v
		}
	}
	return nil
}

// valueError is a well-formed statsd line whose value cannot be summed.
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }

// parseStatsdLine parses `name:value|type[|@rate]` (statsd wire format as
// gostats writes it, tcp_sink/udp sink: `%s:%d|c`, `|g`, `|ms`). A sampled
// counter (`|@0.1`) is scaled by 1/rate. A NaN or infinite value and a rate
// outside [MinSampleRate, 1] are *valueError.
func parseStatsdLine(s string) (name string, v float64, kind string, err error) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return "", 0, "", fmt.Errorf("statsd line %q: no name:value", s)
	}
	name = s[:i]
	parts := strings.Split(s[i+1:], "|")
	if len(parts) < 2 {
		return "", 0, "", fmt.Errorf("statsd line %q: no |type", s)
	}
	v, err = strconv.ParseFloat(parts[0], 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", 0, "", fmt.Errorf("statsd line %q: value: %w", s, err)
	}
	if err != nil || !finite(v) {
		return "", 0, "", &valueError{fmt.Sprintf("statsd line %q: value %s is not a finite number", s, parts[0])}
	}
	kind = parts[1]
	// statsd gauges: a leading sign makes the value a change of the gauge,
	// not a new value (etsy statsd "gauge deltas").
	if kind == "g" && (strings.HasPrefix(parts[0], "+") || strings.HasPrefix(parts[0], "-")) {
		kind = "g+"
	}
	switch kind {
	case "c", "g", "g+", "ms", "h", "d", "s":
	default:
		return "", 0, "", fmt.Errorf("statsd line %q: unknown type %q", s, kind)
	}
	for _, extra := range parts[2:] {
		if strings.HasPrefix(extra, "@") {
			rate, rerr := strconv.ParseFloat(extra[1:], 64)
			if rerr != nil && !errors.Is(rerr, strconv.ErrRange) {
				return "", 0, "", fmt.Errorf("statsd line %q: bad sample rate", s)
			}
			if rerr != nil || !(rate >= MinSampleRate && rate <= 1) {
				return "", 0, "", &valueError{fmt.Sprintf("statsd line %q: sample rate %s is outside [%g, 1]", s, extra[1:], MinSampleRate)}
			}
			if kind == "c" {
				v /= rate
			}
		}
	}
	return name, v, kind, nil
}

// StatsdRecord is one line of the JSONL that ListenStatsd writes.
type StatsdRecord struct {
	// RecvNs is when the line was read from the socket, unix ns.
	RecvNs int64 `json:"recv_ns"`
	// Proto is "tcp" or "udp".
	Proto string `json:"proto"`
	Line  string `json:"line"`
}

// ParseStatsd sums statsd lines. It accepts, line by line and mixed:
//   - raw statsd lines `name:value|c` (`|g`, `|ms`, optional `|@rate`);
//   - the TSV capture layout `<recv_unix_ns>\t<tcp|udp>\t<statsd line>` with
//     `<ns>\ttcp-conn\taccepted|closed <addr>` connection events (a capture
//     of the statsd TCP stream with receive times);
//   - the JSONL records that ListenStatsd writes (StatsdRecord).
//
// Blank lines and lines starting with '#' are skipped. A line that is not
// statsd is an error naming name and the line number (in a ListenStatsd
// capture it is counted in Malformed instead). A statsd line whose value
// cannot be summed (see StatsdTotals.Rejected) is left out and named in
// RejectedLines: the other lines' totals are kept.
func ParseStatsd(r io.Reader, name string) (*StatsdTotals, error) {
	t := newStatsdTotals(name)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		var ns int64
		payload := s
		captured := false
		switch {
		case strings.HasPrefix(s, "{"):
			captured = true
			var rec StatsdRecord
			if err := json.Unmarshal([]byte(s), &rec); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			ns, payload = rec.RecvNs, rec.Line
		case strings.Contains(s, "\t"):
			f := strings.SplitN(s, "\t", 3)
			if len(f) != 3 {
				return nil, fmt.Errorf("%s:%d: want 3 tab-separated fields (recv_ns, proto, line), got %d", name, n, len(f))
			}
			v, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: recv_ns %q: %w", name, n, f[0], err)
			}
			ns = v
			switch f[1] {
			case "tcp", "udp":
				payload = f[2]
			case "tcp-conn":
				if strings.HasPrefix(f[2], "accepted") {
					t.Conns++
				}
				continue
			default:
				return nil, fmt.Errorf("%s:%d: unknown proto %q", name, n, f[1])
			}
		}
		payload = strings.TrimSpace(payload)
		if payload == "" {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, n)
		mn, v, kind, err := parseStatsdLine(payload)
		var ve *valueError
		switch {
		case errors.As(err, &ve):
			t.reject(where, err)
			continue
		case err != nil && captured:
			// A line received by ListenStatsd that is not statsd: whatever
			// else wrote to the port. Counted, never summed, never fatal.
			t.Malformed++
			if len(t.MalformedLines) < maxRejectedLines {
				t.MalformedLines = append(t.MalformedLines, fmt.Sprintf("%s: %v", where, err))
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if err := t.add(mn, v, kind, ns); err != nil {
			t.reject(where, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	return t, nil
}

// nopCloser hides w's Close from evidence.Writer: the caller owns w.
type nopCloser struct{ io.Writer }

// ListenStatsd accepts statsd lines over TCP (gostats' default) and UDP
// (STATSD_PROTOCOL=udp) on the same host:port. addr must name a host, e.g.
// "127.0.0.1:0"; with port 0 a port free for both protocols is chosen. Each
// received line is written to w as one StatsdRecord JSON line (flushed at
// least every evidence.FlushEvery) until ctx is done.
//
// It returns the TCP address (the UDP socket has the same IP and port) and a
// channel that receives the first serving error, or nil, once everything has
// stopped and w has been flushed; the channel is then closed.
func ListenStatsd(ctx context.Context, addr string, w io.Writer) (net.Addr, <-chan error, error) {
	tl, ul, err := listenBoth(addr)
	if err != nil {
		return nil, nil, err
	}
	jw := evidence.NewWriter(nopCloser{w})
	done := make(chan error, 1)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		conns    = map[net.Conn]struct{}{}
		firstErr error
		stopping bool
	)
	setErr := func(e error) {
		mu.Lock()
		if firstErr == nil && !stopping {
			firstErr = e
		}
		mu.Unlock()
	}
	write := func(proto, line string) {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			return
		}
		if err := jw.Write(StatsdRecord{RecvNs: time.Now().UnixNano(), Proto: proto, Line: line}); err != nil {
			setErr(err)
		}
	}
	wg.Add(2)
	go func() { // TCP accept loop
		defer wg.Done()
		for {
			c, err := tl.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					setErr(err)
				}
				return
			}
			mu.Lock()
			if stopping {
				mu.Unlock()
				c.Close()
				return
			}
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				sc := bufio.NewScanner(c)
				sc.Buffer(make([]byte, 64<<10), 1<<20)
				for sc.Scan() {
					write("tcp", sc.Text())
				}
			}()
		}
	}()
	go func() { // UDP read loop
		defer wg.Done()
		buf := make([]byte, 65536)
		for {
			n, _, err := ul.ReadFrom(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					setErr(err)
				}
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				write("udp", line)
			}
		}
	}()
	go func() {
		<-ctx.Done()
		mu.Lock()
		stopping = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		tl.Close()
		ul.Close()
		wg.Wait()
		err := jw.Close()
		mu.Lock()
		if firstErr != nil {
			err = firstErr
		}
		mu.Unlock()
		done <- err
		close(done)
	}()
	return tl.Addr(), done, nil
}

// listenBoth binds TCP on addr and UDP on the same IP and port. With port 0
// it retries a few times when the kernel's TCP choice is taken for UDP.
func listenBoth(addr string) (net.Listener, net.PacketConn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("statsd listen %q: %w", addr, err)
	}
	tries := 1
	if port == "0" {
		tries = 20
	}
	var lastErr error
	for i := 0; i < tries; i++ {
		tl, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("statsd listen tcp %s: %w", addr, err)
		}
		_, p, _ := net.SplitHostPort(tl.Addr().String())
		ul, err := net.ListenPacket("udp", net.JoinHostPort(host, p))
		if err == nil {
			return tl, ul, nil
		}
		tl.Close()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("statsd listen udp %s: %w", addr, lastErr)
}
