// Package remotewrite pushes rlbench's series to a Prometheus remote write
// receiver (protocol 1.0: https://prometheus.io/docs/specs/prw/remote_write_spec/):
// a snappy-compressed protobuf prometheus.WriteRequest per POST, encoded by
// the Prometheus project's own packages (github.com/prometheus/prometheus/prompb,
// github.com/golang/snappy, as Prometheus' storage/remote/client.go does).
//
// Client writes one request with bounded retries. Pusher runs while `run`
// or `attack` goes: a goroutine reads the live counters (attack.Progress.Snapshot,
// atomics only) every interval and pushes them, and at the end the
// end-of-run families (FromFamilies of analyze/report.PrometheusFamilies).
// The attack never waits for it: a slow or failing receiver only delays or
// drops pushes, which Pusher counts (Stats) for the caller to report; a
// failed remote write never fails a run. The library never prints; errors
// quote the URL redacted (evidence.RedactURL).
package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/buildinfo"
)

// Headers of a remote write 1.0 request (the spec's "Protocol" section).
const (
	ContentType     = "application/x-protobuf"
	ContentEncoding = "snappy"
	VersionHeader   = "X-Prometheus-Remote-Write-Version"
	Version         = "0.1.0"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// URL is the receiver's endpoint, absolute http or https (Prometheus:
	// http://HOST:9090/api/v1/write with --web.enable-remote-write-receiver).
	URL string
	// HTTPClient sends the requests; nil uses a client without a timeout
	// of its own (Timeout bounds each try).
	HTTPClient *http.Client
	// Timeout bounds each try; default 5s.
	Timeout time.Duration
	// Retries is how many times a failed try is repeated (a network error,
	// a 5xx or a 429: the spec's retryable answers; never a 4xx): default
	// 2; negative: none.
	Retries int
	// MinBackoff is the wait before the first retry, doubled per retry up
	// to MaxBackoff; defaults 100ms and 1s.
	MinBackoff, MaxBackoff time.Duration
	// sleep waits d or until ctx is done (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// Client writes WriteRequests to one URL. It is safe for concurrent use.
type Client struct {
	o      ClientOptions
	u      string // the URL, redacted, for errors
	client *http.Client
}

// ErrInvalidURL is wrapped by NewClient's error for a URL that is not an
// absolute http(s) URL.
var ErrInvalidURL = errors.New("remote write: invalid URL")

// NewClient returns a Client for o.URL; an invalid URL is an error
// wrapping ErrInvalidURL that quotes it redacted.
func NewClient(o ClientOptions) (*Client, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w %q: want http(s)://host[:port]/path", ErrInvalidURL, evidence.RedactURL(o.URL))
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 2
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Second
	}
	if o.sleep == nil {
		o.sleep = sleepCtx
	}
	c := &Client{o: o, u: evidence.RedactURL(o.URL), client: o.HTTPClient}
	if c.client == nil {
		c.client = &http.Client{}
	}
	return c, nil
}

// URL returns the client's URL, redacted (evidence.RedactURL): for messages.
func (c *Client) URL() string { return c.u }

// WriteError is Write's error: the last try's HTTP status (0 for a
// network error) and message, after Tries tries.
type WriteError struct {
	URL    string // redacted
	Status int
	Msg    string
	Tries  int
}

func (e *WriteError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("remote write to %s: HTTP %d: %s (%d tries)", e.URL, e.Status, e.Msg, e.Tries)
	}
	return fmt.Sprintf("remote write to %s: %s (%d tries)", e.URL, e.Msg, e.Tries)
}

// Encode returns the body of a remote write request of series: the
// protobuf WriteRequest, snappy block-compressed.
func Encode(series []prompb.TimeSeries) ([]byte, error) {
	req := &prompb.WriteRequest{Timeseries: series}
	b, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, b), nil
}

// Decode is Encode's inverse, for receivers and tests: an invalid snappy
// block or protobuf message is an error.
func Decode(body []byte) (*prompb.WriteRequest, error) {
	b, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("protobuf: %w", err)
	}
	return &req, nil
}

// Write sends series in one request, retrying a retryable failure up to
// Retries times with backoff; it returns nil on a 2xx, else a *WriteError
// (or ctx's error once ctx is done). Empty series send nothing.
func (c *Client) Write(ctx context.Context, series []prompb.TimeSeries) error {
	if len(series) == 0 {
		return nil
	}
	body, err := Encode(series)
	if err != nil {
		return fmt.Errorf("remote write: encoding: %w", err)
	}
	backoff := c.o.MinBackoff
	for try := 1; ; try++ {
		status, msg, retry := c.try(ctx, body, try)
		if status >= 200 && status < 300 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retry || try > c.o.Retries {
			return &WriteError{URL: c.u, Status: status, Msg: msg, Tries: try}
		}
		if err := c.o.sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, c.o.MaxBackoff)
	}
}

// try POSTs body once: the status (0 on a network error), a message for
// a failure, and whether the failure is retryable (the spec: 5xx and 429
// are, other 4xx are not; a network error is).
func (c *Client) try(ctx context.Context, body []byte, try int) (status int, msg string, retry bool) {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.o.URL, bytes.NewReader(body))
	if err != nil {
		return 0, evidence.RedactText(err.Error()), false
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Content-Encoding", ContentEncoding)
	req.Header.Set(VersionHeader, Version)
	req.Header.Set("User-Agent", "rlbench/"+buildinfo.Version())
	if try > 1 {
		req.Header.Set("Retry-Attempt", fmt.Sprint(try-1)) // as Prometheus' own client
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, evidence.RedactText(err.Error()), true
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, "", false
	}
	msg = strings.TrimSpace(evidence.RedactText(string(b)))
	if msg == "" {
		msg = resp.Status
	}
	return resp.StatusCode, msg, resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
