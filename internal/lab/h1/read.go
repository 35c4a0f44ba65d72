package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
)

// The readers below parse the common shape of an HTTP/1.1 message head
// (CRLF line ends, token header names, visible-ASCII values, no
// Transfer-Encoding, Trailer or Pragma header, at most one Connection
// header that says keep-alive, at most one Content-Length) from what is already buffered, into a request or
// response, header map and body reader that the connection reuses: one
// allocation per message (the head's string), no textproto reader, no
// per-message map. Any other message (a head not fully buffered yet, a
// chunked body, HTTP/1.0, a method or target outside the fast shape,
// obs-fold, a duplicate Content-Length, ...) is parsed by net/http
// (http.ReadRequest, http.ReadResponse) from the same untouched reader, so
// what a reader returns is always what net/http returns for the same bytes
// (TestReadRequestMatchesNetHTTP, FuzzReadRequest, FuzzReadResponse).

// maxFastHeaders is the most header lines the fast path takes.
const maxFastHeaders = 64

var crlfcrlf = []byte("\r\n\r\n")

// RequestReader reads the requests of one connection. The *http.Request a
// Read returns, its Header, URL and Body are reused by the next Read: they
// are valid until then (strings taken from them stay valid).
type RequestReader struct {
	br   *bufio.Reader
	req  http.Request
	url  url.URL
	hdr  http.Header
	vals []string
	body clBody
}

// NewRequestReader returns a RequestReader on br.
func NewRequestReader(br *bufio.Reader) *RequestReader {
	return &RequestReader{br: br, hdr: make(http.Header, 16), vals: make([]string, 0, 16)}
}

// Read reads the next request: what http.ReadRequest(br) returns.
func (r *RequestReader) Read() (*http.Request, error) {
	if r.br.Buffered() == 0 {
		if _, err := r.br.Peek(1); err != nil {
			return nil, err
		}
	}
	buf, _ := r.br.Peek(r.br.Buffered())
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		return http.ReadRequest(r.br)
	}
	// The request line, checked on the bytes before any allocation.
	line := buf[:bytes.IndexByte(buf, '\n')+1]
	sp1 := bytes.IndexByte(line, ' ')
	if sp1 <= 0 || !fastMethod(line[:sp1]) {
		return http.ReadRequest(r.br)
	}
	rest := line[sp1+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 || string(rest[sp2:]) != " HTTP/1.1\r\n" || rest[0] != '/' {
		return http.ReadRequest(r.br)
	}
	head := string(buf[:end+4])
	method := head[:sp1]
	target := head[sp1+1 : sp1+1+sp2]
	path, query, hasQuery := target, "", false
	for i := 0; i < len(target); i++ {
		if target[i] == '?' {
			path, query, hasQuery = target[:i], target[i+1:], true
			break
		}
	}
	if !fastPath(path) || !fastQuery(query) {
		return http.ReadRequest(r.br)
	}
	h := headerScan{hdr: r.hdr, vals: r.vals}
	if !h.parse(head[len(line) : len(head)-2]) {
		r.vals = h.vals
		return http.ReadRequest(r.br)
	}
	r.vals = h.vals
	if len(r.hdr["Host"]) > 1 {
		return http.ReadRequest(r.br) // net/http's error
	}
	_, _ = r.br.Discard(len(head))
	h.contentLength = max(h.contentLength, 0) // a request without one has none
	// url.ParseRequestURI of an origin-form target without '%' whose path
	// escapes to itself: Path is the path, RawPath empty, and a lone '?'
	// at the end is ForceQuery.
	r.url = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
	r.req = http.Request{Method: method, URL: &r.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: r.hdr,
		RequestURI: target, Body: http.NoBody, ContentLength: h.contentLength}
	if vs := r.hdr["Host"]; len(vs) > 0 {
		r.req.Host = vs[0]
		delete(r.hdr, "Host") // as http.ReadRequest: the Host field holds it
	}
	if h.contentLength > 0 {
		r.body = clBody{br: r.br, n: h.contentLength}
		r.req.Body = &r.body
	}
	return &r.req, nil
}

// ResponseReader reads the responses of one connection. The
// *http.Response a Read returns, its Header and Body are reused by the
// next Read: they are valid until then.
type ResponseReader struct {
	br   *bufio.Reader
	resp http.Response
	hdr  http.Header
	vals []string
	body clBody
}

// NewResponseReader returns a ResponseReader on br.
func NewResponseReader(br *bufio.Reader) *ResponseReader {
	return &ResponseReader{br: br, hdr: make(http.Header, 16), vals: make([]string, 0, 16)}
}

// Read reads the response to req: what http.ReadResponse(br, req) returns.
func (r *ResponseReader) Read(req *http.Request) (*http.Response, error) {
	if r.br.Buffered() == 0 {
		if _, err := r.br.Peek(1); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // as http.ReadResponse
			}
			return nil, err
		}
	}
	if req != nil && req.Method == http.MethodHead {
		return http.ReadResponse(r.br, req)
	}
	buf, _ := r.br.Peek(r.br.Buffered())
	end := bytes.Index(buf, crlfcrlf)
	// "HTTP/1.1 DDD " at least, the code 200..599 but 204 and 304 (no
	// 1xx: net/http returns those as responses of their own).
	if end < 0 || len(buf) < 13 || string(buf[:9]) != "HTTP/1.1 " || buf[12] != ' ' && buf[12] != '\r' ||
		buf[9] < '2' || buf[9] > '5' || !isDigit(buf[10]) || !isDigit(buf[11]) {
		return http.ReadResponse(r.br, req)
	}
	code := int(buf[9]-'0')*100 + int(buf[10]-'0')*10 + int(buf[11]-'0')
	if code == http.StatusNoContent || code == http.StatusNotModified {
		return http.ReadResponse(r.br, req)
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 13 || buf[nl-1] != '\r' || buf[12] == '\r' && nl != 13 {
		return http.ReadResponse(r.br, req)
	}
	for _, c := range buf[13:max(nl-1, 13)] {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return http.ReadResponse(r.br, req)
		}
	}
	head := string(buf[:end+4])
	h := headerScan{hdr: r.hdr, vals: r.vals}
	if !h.parse(head[nl+1:len(head)-2]) || h.contentLength < 0 {
		r.vals = h.vals
		return http.ReadResponse(r.br, req)
	}
	r.vals = h.vals
	_, _ = r.br.Discard(len(head))
	r.resp = http.Response{Status: head[9 : nl-1], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: r.hdr,
		Body: http.NoBody, ContentLength: h.contentLength, Request: req}
	if h.contentLength > 0 {
		r.body = clBody{br: r.br, n: h.contentLength}
		r.resp.Body = &r.body
	}
	return &r.resp, nil
}

func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// fastMethod: upper-case letters, not CONNECT (its authority-form target)
// nor PRI (the HTTP/2 preface).
func fastMethod(m []byte) bool {
	if len(m) > 16 || string(m) == "CONNECT" || string(m) == "PRI" {
		return false
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// fastPath: an origin-form path without '%', '#' or controls that
// url.URL escapes to itself (so Path = the raw path, RawPath = "").
func fastPath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= 0x20 || c >= 0x7f || c == '%' || c == '#' {
			return false
		}
	}
	u := url.URL{Path: p}
	return u.EscapedPath() == p
}

// fastQuery: visible ASCII only (url.Parse refuses controls).
func fastQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if c := q[i]; c <= 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// headerScan parses header lines into a reused map: values are taken
// from the head's string, each map entry a one-element window of vals.
type headerScan struct {
	hdr           http.Header
	vals          []string
	contentLength int64 // -1 when absent
}

// parse parses s, the header lines each ending in CRLF (the head's final
// CRLF excluded); false: not the fast shape (the map is then cleared).
func (h *headerScan) parse(s string) bool {
	clear(h.hdr)
	h.vals = h.vals[:0]
	h.contentLength = -1
	if !h.lines(s) {
		clear(h.hdr)
		return false
	}
	return true
}

func (h *headerScan) lines(s string) bool {
	seenCL, seenConn := false, false
	for n := 0; len(s) > 0; n++ {
		if n == maxFastHeaders {
			return false
		}
		i := 0
		for i < len(s) && s[i] != '\r' {
			i++
		}
		if i+1 >= len(s) || s[i+1] != '\n' {
			return false
		}
		line := s[:i]
		s = s[i+2:]
		colon := -1
		canonical, upper := true, true
		for j := 0; j < len(line); j++ {
			c := line[j]
			if c == ':' {
				colon = j
				break
			}
			switch {
			case c >= 'a' && c <= 'z':
				canonical = canonical && !upper
			case c >= 'A' && c <= 'Z':
				canonical = canonical && upper
			case c >= '0' && c <= '9' || c == '-':
			default:
				return false // a space, obs-fold, a token char outside the fast shape
			}
			upper = c == '-'
		}
		if colon <= 0 {
			return false
		}
		key := line[:colon]
		if !canonical {
			key = textproto.CanonicalMIMEHeaderKey(key)
		}
		v := line[colon+1:]
		for j := 0; j < len(v); j++ {
			if c := v[j]; (c < 0x20 && c != '\t') || c >= 0x7f {
				return false
			}
		}
		for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
			v = v[1:]
		}
		for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
			v = v[:len(v)-1]
		}
		switch key {
		case "Transfer-Encoding", "Trailer", "Pragma":
			return false
		case "Connection":
			// "keep-alive" alone: an HTTP/1.1 message that does not close
			// (net/http's shouldClose), the header kept as it came.
			if seenConn || !asciiEqualFold(v, "keep-alive") {
				return false
			}
			seenConn = true
		case "Content-Length":
			if seenCL || len(v) == 0 || len(v) > 18 {
				return false
			}
			seenCL = true
			var cl int64
			for j := 0; j < len(v); j++ {
				if !isDigit(v[j]) {
					return false
				}
				cl = cl*10 + int64(v[j]-'0')
			}
			h.contentLength = cl
		}
		if vs, ok := h.hdr[key]; ok {
			h.hdr[key] = append(vs, v)
			continue
		}
		h.vals = append(h.vals, v)
		k := len(h.vals)
		h.hdr[key] = h.vals[k-1 : k : k]
	}
	return true
}

// clBody is net/http's body reader for a Content-Length body (transfer.go
// body over an io.LimitedReader): a premature EOF is
// io.ErrUnexpectedEOF, the last bytes come with io.EOF, and Close reads
// the rest unless the message closes the connection.
type clBody struct {
	br      *bufio.Reader
	n       int64
	sawEOF  bool
	closed  bool
	closing bool
}

// Read reads the body.
func (b *clBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.sawEOF || b.n <= 0 {
		b.sawEOF = true
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	if err == io.EOF {
		b.sawEOF = true
		if b.n > 0 {
			err = io.ErrUnexpectedEOF
		}
	}
	if err == nil && n > 0 && b.n == 0 {
		err = io.EOF
		b.sawEOF = true
	}
	return n, err
}

// Close reads what is left of the body (net/http's body.Close).
func (b *clBody) Close() error {
	if b.closed {
		return nil
	}
	var err error
	if !b.sawEOF && !b.closing {
		_, err = io.Copy(io.Discard, struct{ io.Reader }{b})
	}
	b.closed = true
	return err
}
