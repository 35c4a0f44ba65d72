// Package h1 holds what the lab's own HTTP/1.1 servers (the proxy's
// downstream side and the backend's endpoints) share: the accept loop and
// the set of open connections that closing a server closes (Conns), and
// helpers that write a response head into a bufio.Writer without
// allocating, in the form net/http's server writes it (RFC 9112 section 4
// status line, RFC 9110 section 6.6.1 Date). Messages are parsed by
// RequestReader and ResponseReader: net/http's result for the same bytes
// (http.ReadRequest, http.ReadResponse), its common shape parsed without a
// per-message map or reader (read.go).
package h1

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// dateCache holds the Date value of the current second.
var dateCache atomic.Pointer[dateValue]

type dateValue struct {
	sec int64
	s   string
}

// Date returns now's HTTP date (http.TimeFormat, UTC), formatted once per
// second.
func Date(now time.Time) string {
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.sec == sec {
		return d.s
	}
	d := &dateValue{sec: sec, s: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.s
}

// StatusLine writes "HTTP/1.1 <code> <reason>\r\n"; a code without a
// registered reason gets "status code <code>", as net/http writes it.
func StatusLine(w *bufio.Writer, code int) {
	_, _ = w.WriteString("HTTP/1.1 ")
	_, _ = w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(code), 10))
	_ = w.WriteByte(' ')
	if text := http.StatusText(code); text != "" {
		_, _ = w.WriteString(text)
	} else {
		_, _ = w.WriteString("status code ")
		_, _ = w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(code), 10))
	}
	_, _ = w.WriteString("\r\n")
}

// Header writes "k: v\r\n" (one append into the writer's free space when
// the line fits there).
func Header(w *bufio.Writer, k, v string) {
	if n := len(k) + len(v) + 4; n <= w.Available() {
		b := w.AvailableBuffer()
		b = append(b, k...)
		b = append(b, ": "...)
		b = append(b, v...)
		b = append(b, "\r\n"...)
		_, _ = w.Write(b)
		return
	}
	_, _ = w.WriteString(k)
	_, _ = w.WriteString(": ")
	_, _ = w.WriteString(v)
	_, _ = w.WriteString("\r\n")
}

// HeaderInt writes "k: n\r\n" without allocating (bufio.Writer's
// AvailableBuffer).
func HeaderInt(w *bufio.Writer, k string, n int64) {
	if len(k)+24 <= w.Available() {
		b := w.AvailableBuffer()
		b = append(b, k...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, "\r\n"...)
		_, _ = w.Write(b)
		return
	}
	_, _ = w.WriteString(k)
	_, _ = w.WriteString(": ")
	_, _ = w.Write(strconv.AppendInt(w.AvailableBuffer(), n, 10))
	_, _ = w.WriteString("\r\n")
}

// BodyAllowed reports whether a response with this status carries a body
// (RFC 9110 section 6.4.1: not 1xx, 204 or 304).
func BodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// ConnGone reports whether err is the peer resetting or closing the
// connection (ECONNRESET, EPIPE): a client that left, not a malformed
// request.
func ConnGone(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}

// CloseReply writes a bodiless answer that ends the connection: the status
// line, "Content-Length: 0" and "Connection: close" (how net/http's server
// answers a request it refuses before any handler).
func CloseReply(w *bufio.Writer, code int) {
	StatusLine(w, code)
	_, _ = w.WriteString("Content-Length: 0\r\nConnection: close\r\n\r\n")
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4096) }}
)

// Buffers returns a connection's pooled 4 KB reader on r and writer on w;
// release returns them to the pool (call it once the connection is done).
func Buffers(r io.Reader, w io.Writer) (br *bufio.Reader, bw *bufio.Writer, release func()) {
	br = readers.Get().(*bufio.Reader)
	br.Reset(r)
	bw = writers.Get().(*bufio.Writer)
	bw.Reset(w)
	return br, bw, func() {
		br.Reset(nil)
		readers.Put(br)
		bw.Reset(nil)
		writers.Put(bw)
	}
}
