package attack

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"
)

// slot is the per-ID state shared between the transport and the result
// pipeline. sentNs and bytesIn are written by the vegeta worker that runs the
// request before vegeta emits its Result (and read after the Result arrives),
// so the results channel orders the accesses; attempts is written from the
// net/http write loop and is therefore atomic.
type slot struct {
	sent     time.Time // when RoundTrip was entered (wall + monotonic)
	bytesIn  atomic.Uint64
	attempts atomic.Int32 // times the transport wrote the request headers
}

// onceTransport wraps an *http.Transport so that every request goes on the
// wire at most once (see the package doc, "No replays"): it sends a copy of
// the request with GetBody nil and, when there is no body, a non-nil empty
// body (noReplayBody), and counts header writes per request via httptrace
// (Run refuses the method/header combinations checkReplaySafe rejects).
//
// It also applies the per-request timeout (covering the body read, like
// http.Client.Timeout) and counts response body bytes, because vegeta's
// Result.BytesIn only counts the MaxBody bytes it kept.
type onceTransport struct {
	base    *http.Transport
	slots   []slot
	timeout time.Duration
	// allowReplay skips the no-replay copy; only tests set it.
	allowReplay bool
	// abort, when done, cancels every request still in flight (an
	// interrupted attack that waited InterruptGrace).
	abort context.Context
}

// errNoSlot is returned for a request that does not carry a slot fragment;
// it can only happen if a request was not built by Run's targeter.
var errNoSlot = errors.New("rlbench attack: request without slot fragment")

func (t *onceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	i, err := strconv.Atoi(req.URL.Fragment)
	if err != nil || i < 0 || i >= len(t.slots) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errNoSlot
	}
	s := &t.slots[i]
	s.sent = time.Now()

	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	if t.abort != nil {
		stop := context.AfterFunc(t.abort, cancel)
		inner := cancel
		cancel = func() { stop(); inner() }
	}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { s.attempts.Add(1) },
	})
	r2 := req.WithContext(ctx) // shallow copy; the caller's request is not modified
	if !t.allowReplay {
		r2.GetBody = nil
		if r2.Body == nil || r2.Body == http.NoBody {
			r2.Body = noReplayBody{}
			r2.ContentLength = 0
		}
	}
	resp, err := t.base.RoundTrip(r2)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &countingBody{rc: resp.Body, n: &s.bytesIn, cancel: cancel}
	return resp, nil
}

// noReplayBody is an empty request body that net/http cannot rewind (it is
// neither nil nor http.NoBody, and GetBody is nil), which makes the request
// non-replayable.
type noReplayBody struct{}

func (noReplayBody) Read([]byte) (int, error) { return 0, io.EOF }
func (noReplayBody) Close() error             { return nil }

// countingBody counts the bytes read from a response body and releases the
// request's timeout context when closed.
type countingBody struct {
	rc     io.ReadCloser
	n      *atomic.Uint64
	cancel context.CancelFunc
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n.Add(uint64(n))
	return n, err
}

func (b *countingBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}
