package attack

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
)

// fastResp is the head of an HTTP/1.1 response read by readFastHead
// without allocating: the common case of every limiter under test (a
// status line, a few headers, a Content-Length body). Anything else is read
// by net/http's ReadResponse, from the same unconsumed bytes.
type fastResp struct {
	code   int
	status []byte // after the protocol, as http.Response.Status
	close  bool   // as http.Response.Close
	length int64  // the body's Content-Length
	head   []byte // a copy of the head (reused): status and captured values point into it
	// last is the head headIn read last, as received (head has its
	// captured names lower-cased): a head with the same bytes is not read
	// again, f holds it already. Empty when f holds anything else.
	last []byte
	// captured headers: lower-case name and value, indexes into head.
	caps []capHdr
}

type capHdr struct{ name, value []byte }

// maxFastHead is the longest head the fast path reads: the reader's
// buffer (engine.go dials with 4096 bytes); longer heads go to net/http.
const maxFastHead = 4096

// readFastHead reads a response head from br when it is in the common form
// (see fastResp) and returns true. Otherwise it consumes nothing and
// returns false, and the caller reads the response with http.ReadResponse,
// which then sees the same bytes. err is a read error before any byte of
// the response arrived, mapped as http.ReadResponse maps it (io.EOF is
// io.ErrUnexpectedEOF); after a partial head it returns false, nil and
// net/http meets the error itself.
//
// The common form, checked byte by byte against what net/http would
// accept and decide (net/http/response.go ReadResponse, transfer.go
// readTransfer and shouldClose; FuzzFastHead compares the two): "HTTP/1.1"
// SP three digits (not 1xx, 204 or 304) [SP reason] CRLF; header lines
// "Name:" value CRLF with a token name and no control bytes but HTAB in the
// value (no folded lines); one Content-Length of decimal digits; no
// Transfer-Encoding; then CRLF; the whole head within maxFastHead bytes.
// The request must not be HEAD (canFast). captures says which lower-case
// names to keep in f.caps.
func (f *fastResp) readFastHead(br *bufio.Reader, captures func(lower []byte) bool) (bool, error) {
	end := -1
	for {
		n := br.Buffered()
		if n > 0 {
			b, _ := br.Peek(n)
			if i := bytes.Index(b, crlfcrlf); i >= 0 {
				end = i + len(crlfcrlf)
				f.head = append(f.head[:0], b[:end]...)
				break
			}
			// Wait for more only while the lines so far are in the common
			// form: net/http decides a head ended by a bare LF (RFC 9112
			// section 2.2 lets a recipient take LF as a line end), or a
			// malformed line, without more bytes, and the server may send
			// none until it has the next request.
			if ok, _ := f.scan(b); !ok {
				return false, nil
			}
		}
		if n >= min(maxFastHead, br.Size()) {
			return false, nil
		}
		if _, err := br.Peek(n + 1); err != nil {
			if n > 0 || br.Buffered() > 0 {
				return false, nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
	}
	if !f.parse() {
		return false, nil
	}
	_, _ = br.Discard(end)
	if captures != nil {
		f.capture(captures)
	}
	return true, nil
}

var crlfcrlf = []byte("\r\n\r\n")

// headIn is readFastHead over b, the bytes of a response received so far
// (the event loop's buffer, evloop_linux.go), deciding as readFastHead
// decides over a reader holding them: end > 0 is the length of a head in
// the common form, read into f; more means b may still begin one (wait for
// more bytes); neither means net/http reads the response (as for
// readFastHead's false).
func (f *fastResp) headIn(b []byte, captures func(lower []byte) bool) (end int, more bool) {
	// A server's heads repeat (nginx's change with its Date, once a
	// second): the same bytes are the same head, already in f. Its first
	// CRLFCRLF is its end, so b's is there too.
	if n := len(f.last); n > 0 && len(b) >= n && bytes.Equal(b[:n], f.last) {
		return n, false
	}
	h := b[:min(len(b), maxFastHead)]
	if i := bytes.Index(h, crlfcrlf); i >= 0 {
		end = i + len(crlfcrlf)
		f.head = append(f.head[:0], b[:end]...)
		if !f.parse() {
			return 0, false
		}
		if captures != nil {
			f.capture(captures)
		}
		f.last = append(f.last[:0], b[:end]...)
		return end, false
	}
	if len(h) > 0 {
		if ok, _ := f.scan(h); !ok {
			return 0, false
		}
	}
	return 0, len(b) < maxFastHead
}

// parse checks and reads f.head; false when it is not in the common form.
func (f *fastResp) parse() bool {
	ok, complete := f.scan(f.head)
	return ok && complete
}

// scan checks h, a head or the start of one, and reads what it holds into
// f: ok reports whether h is in the common form (so far, when h holds
// only the start of a head: a last line without its LF is not checked
// beyond the protocol), complete whether it held the blank line ending the
// head.
func (f *fastResp) scan(h []byte) (ok, complete bool) {
	f.last = f.last[:0]
	f.caps = f.caps[:0]
	f.length = -1
	f.close = false
	const proto = "HTTP/1.1 "
	line, rest := cutLine(h)
	if line == nil {
		if bytes.IndexByte(h, '\n') >= 0 {
			return false, false // a bare LF or CR
		}
		k := min(len(h), len(proto))
		return string(h[:k]) == proto[:k], false
	}
	if len(line) < len(proto)+3 || string(line[:len(proto)]) != proto {
		return false, false
	}
	st := line[len(proto):]
	// net/http: Status is the line after the first space, spaces trimmed on
	// the left; the code is what precedes the next space, three digits.
	if len(st) < 3 || !digit(st[0]) || !digit(st[1]) || !digit(st[2]) || (len(st) > 3 && st[3] != ' ') {
		return false, false
	}
	for _, c := range st {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false, false
		}
	}
	f.code = int(st[0]-'0')*100 + int(st[1]-'0')*10 + int(st[2]-'0')
	if f.code < 200 || f.code == 204 || f.code == 304 {
		return false, false
	}
	f.status = st
	sawLength := false
	for {
		next := rest
		line, rest = cutLine(next)
		if line == nil {
			return bytes.IndexByte(next, '\n') < 0, false // incomplete, or a bare LF or CR
		}
		if len(line) == 0 {
			return sawLength && len(rest) == 0, true // the blank line ending the head
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return false, false
		}
		name := line[:colon]
		for _, c := range name {
			if !tokenByte(c) {
				return false, false
			}
		}
		value := trimOWS(line[colon+1:])
		for _, c := range value {
			if c < ' ' && c != '\t' || c == 0x7f {
				return false, false
			}
		}
		switch {
		case asciiEqualFold(name, "content-length"):
			if sawLength || len(value) == 0 || len(value) > 18 {
				return false, false
			}
			var n int64
			for _, c := range value {
				if !digit(c) {
					return false, false
				}
				n = n*10 + int64(c-'0')
			}
			f.length, sawLength = n, true
		case asciiEqualFold(name, "transfer-encoding"):
			return false, false
		case asciiEqualFold(name, "connection"):
			if hasToken(value, "close") {
				f.close = true
			}
		}
	}
}

// capture records the headers captures keeps, names lower-cased in place.
func (f *fastResp) capture(captures func(lower []byte) bool) {
	rest := f.head
	_, rest = cutLine(rest)
	for {
		var line []byte
		line, rest = cutLine(rest)
		if len(line) == 0 {
			return
		}
		colon := bytes.IndexByte(line, ':')
		name := line[:colon]
		for i, c := range name {
			if 'A' <= c && c <= 'Z' {
				name[i] = c + 'a' - 'A'
			}
		}
		// net/http deletes Connection when it says close (shouldClose).
		if (!f.close || string(name) != "connection") && captures(name) {
			f.caps = append(f.caps, capHdr{name: name, value: trimOWS(line[colon+1:])})
		}
	}
}

// cutLine splits b at its first CRLF; line is nil when there is none, or
// when the line holds a bare CR or LF (which net/http reads differently).
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 1 || b[i-1] != '\r' {
		return nil, nil
	}
	line = b[:i-1]
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, nil
	}
	return line, b[i+1:]
}

func digit(c byte) bool { return '0' <= c && c <= '9' }

// tokenByte reports whether c may appear in a header name (RFC 9110
// section 5.6.2, tchar).
func tokenByte(c byte) bool { return tokenBytes[c] }

// tokenBytes is tokenByte's table.
var tokenBytes = func() (t [256]bool) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = true
		}
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		t[c] = true
	}
	return t
}()

// trimOWS trims spaces and tabs at both ends (textproto.TrimBytes also
// trims other ASCII white space, which parse refuses in values anyway).
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated value lists token (ASCII
// case-insensitive), as httpguts.HeaderValuesContainsToken does.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var t []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			t, v = v[:i], v[i+1:]
		} else {
			t, v = v, nil
		}
		if asciiEqualFold(trimOWS(t), token) {
			return true
		}
	}
	return false
}

// readFastBody reads f's body from br: the first len(keep) bytes into
// keep, the rest discarded; it returns the bytes kept and read. A body
// cut short is io.ErrUnexpectedEOF, as net/http's body reader reports it.
func (f *fastResp) readFastBody(br *bufio.Reader, keep []byte) (kept int, n uint64, err error) {
	k := int(min(int64(len(keep)), f.length))
	got, err := io.ReadFull(br, keep[:k])
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return got, uint64(got), err
	}
	d, err := br.Discard(int(f.length - int64(k)))
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return k, uint64(k + d), err
}

// canFast reports whether a response to req may take the fast path (not
// HEAD: its response has no body whatever Content-Length says).
func canFast(req *http.Request) bool { return req.Method != http.MethodHead }
