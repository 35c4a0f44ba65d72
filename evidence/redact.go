package evidence

import (
	"bufio"
	"io"
	"net/url"
	"regexp"
	"strings"
)

// Evidence never holds a secret. A URL with userinfo (RFC 3986 section
// 3.2.1, "user:password@host"; deprecated there, still used for basic
// auth), a query parameter that carries a credential ("?token=...",
// "&X-Amz-Signature=...") or a credential header given to an attack
// ("Authorization: Bearer ...") is sent as given, but every URL written to
// evidence (requests.jsonl, attack.json, manifest.json, faults.jsonl, stats
// and metrics snapshots, NOT_RUN reasons), every line a command prints and
// every message quoting one goes through this file first: RedactURL for a
// URL or a path with its query, RedactHeader for a header value, RedactText
// (and RedactError) for free text. What stays identifies the target: the
// scheme, host, port and path, the user name beside a password, and the
// names of the query parameters and headers.

// Redacted replaces a secret in a redacted URL, header value or message.
const Redacted = "xxxxx"

// RedactURL returns u (an absolute URL, or a path with a query such as an
// attack's "/x?token=...") with its secrets replaced by Redacted: the
// password of its userinfo ("https://user:xxxxx@host/p", as net/url's
// URL.Redacted does), a user name given without a password (commonly a
// token itself: "https://xxxxx@host/p"), and the value of every query or
// fragment parameter whose name looks like a credential (SecretName:
// "?token=xxxxx&page=2"). Everything else is kept byte for byte; a URL
// without secrets is returned unchanged. Nothing is parsed beyond RFC 3986's
// delimiters, so a string that is not a valid URL is redacted the same way;
// one with white space in it is text (RedactText).
func RedactURL(u string) string {
	if strings.ContainsAny(u, " \t\r\n") {
		return RedactText(u)
	}
	return redactRef(u)
}

// redactRef is RedactURL on one URL reference.
func redactRef(u string) string {
	rest, frag, hasFrag := strings.Cut(u, "#")
	if hasFrag {
		frag = redactParams(frag)
	}
	if i := strings.Index(rest, "?"); i >= 0 {
		if q := redactParams(rest[i+1:]); q != rest[i+1:] {
			rest = rest[:i+1] + q
		}
	}
	rest = redactUserinfo(rest)
	if hasFrag {
		return rest + "#" + frag
	}
	return rest
}

// redactUserinfo redacts the userinfo of "scheme://userinfo@host...": the
// authority runs to the first '/', '?' or '#', and the userinfo to its last
// '@' (a password holding a raw '@' stays inside it).
func redactUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i <= 0 || !isScheme(s[:i]) {
		return s
	}
	auth := s[i+3:]
	end := strings.IndexAny(auth, "/?#")
	if end < 0 {
		end = len(auth)
	}
	at := strings.LastIndexByte(auth[:end], '@')
	if at < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(auth[:at], ":")
	if !hasPass {
		user = Redacted // a user name alone is often the token itself
	} else {
		user += ":" + Redacted
	}
	return s[:i+3] + user + auth[at:]
}

func isScheme(s string) bool {
	for k, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case k > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// redactParams redacts the values of the "name=value" parameters of a query
// or fragment (separated by '&' or ';') whose names are SecretName.
func redactParams(q string) string {
	if q == "" {
		return q
	}
	var b strings.Builder
	start, changed := 0, false
	for k := 0; k <= len(q); k++ {
		if k < len(q) && q[k] != '&' && q[k] != ';' {
			continue
		}
		part := q[start:k]
		if name, _, ok := strings.Cut(part, "="); ok && SecretName(unescapeName(name)) {
			if !changed {
				// The first secret: copy what came before it once;
				// a query without one is returned as is (no copy per
				// receipt or access-log line).
				changed = true
				b.Grow(len(q))
				b.WriteString(q[:start])
			}
			part = name + "=" + Redacted
		}
		if changed {
			b.WriteString(part)
			if k < len(q) {
				b.WriteByte(q[k])
			}
		}
		start = k + 1
	}
	if !changed {
		return q
	}
	return b.String()
}

func unescapeName(n string) string {
	if u, err := url.QueryUnescape(n); err == nil {
		return u
	}
	return n
}

// secretWords are the parts of a query parameter's or header's name that
// mark its value as a credential: OAuth's access_token, AWS SigV4's
// X-Amz-Signature and X-Amz-Credential, api_key, password, session ids,
// Authorization and Cookie.
var secretWords = []string{"token", "key", "pass", "pwd", "secret", "sig", "auth", "cred", "session", "cookie", "jwt", "bearer"}

// SecretName reports whether a query parameter or header named name
// (case-insensitive) carries a credential, so that its value is redacted:
// the name contains one of token, key, pass, pwd, secret, sig, auth, cred,
// session, cookie, jwt or bearer (Authorization, Proxy-Authorization,
// Cookie, X-Api-Key, access_token, X-Amz-Signature, password ...).
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactHeader returns value, or Redacted when the header name carries a
// credential (SecretName: Authorization, Proxy-Authorization, Cookie,
// X-Api-Key ...). An empty value stays empty.
func RedactHeader(name, value string) string {
	if value == "" || !SecretName(name) {
		return value
	}
	return Redacted
}

// RedactHeaderField redacts a "Name: value" header field as given on a
// command line (attack --header, a flow spec's header=Name:value): the
// value when the name carries a credential (RedactHeader). Without a ':'
// the string is not a field and may hold a value alone: its first word is
// kept ("Authorization xxxxx" for "Authorization Bearer abc"), the rest is
// Redacted.
func RedactHeaderField(s string) string {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		if first, _, more := strings.Cut(strings.TrimSpace(s), " "); more {
			return first + " " + Redacted
		}
		if s == "" {
			return s
		}
		return Redacted
	}
	if v := RedactHeader(strings.TrimSpace(name), strings.TrimSpace(value)); v != strings.TrimSpace(value) {
		return name + ": " + v
	}
	return s
}

// isURLDelim ends a URL quoted in free text: white space, a quote, '<' or
// '>'.
func isURLDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '"', '\'', '<', '>', '`':
		return true
	}
	return false
}

func isSchemeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// redactURLs redacts every URL quoted in s: a scheme (a letter, then
// letters, digits, '+', '-' or '.'), "://" and everything up to a
// delimiter (isURLDelim). It scans for "://" rather than running a regular
// expression, so that a command's whole output can afford it.
func redactURLs(s string) string {
	var b strings.Builder
	last, i := 0, 0
	for {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			break
		}
		k += i
		st := k
		for st > last && isSchemeChar(s[st-1]) {
			st--
		}
		for st < k && !(s[st] >= 'a' && s[st] <= 'z' || s[st] >= 'A' && s[st] <= 'Z') {
			st++
		}
		en := k + 3
		for en < len(s) && !isURLDelim(s[en]) {
			en++
		}
		if st < k {
			if red := redactRef(s[st:en]); red != s[st:en] {
				b.WriteString(s[last:st])
				b.WriteString(red)
				last = en
			}
		}
		i = en
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// queryRE matches a path with a query in free text ("/x?token=..."), not
// preceded by a scheme's authority (redactURLs covers those).
var queryRE = regexp.MustCompile("(?:^|[\\s\"'(=])(/[^\\s\"'<>`?#]*[?#][^\\s\"'<>`]+)")

// headerRE matches a credential header field quoted in free text
// ("Authorization: Bearer ...", as net/http or a proxy may echo it), up to
// a quote or the end of the line.
var headerRE = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization|(?:set-)?cookie|x-api-key|x-auth-token|api-key)(\s*:\s*)([^"'\r\n]+)`)

// jsonHeaderRE matches a credential header logged as a JSON field: an
// Envoy JSON access log's "authorization": "%REQ(AUTHORIZATION)%", an
// nginx log_format's "http_authorization": "$http_authorization" or
// "http_cookie", "x-api-key", "http_x_auth_token": a field name ending in
// one of credentialHeaderNames ('_' for '-'), then its string value, which
// is redacted (escapes included).
var jsonHeaderRE = regexp.MustCompile(`(?i)("(?:[a-z0-9_-]*[_-])?(?:authorization|cookie|api[_-]key|auth[_-]token)"\s*:\s*")((?:[^"\\]|\\.)*)"`)

// credentialHeaderNames end the names headerRE matches.
var credentialHeaderNames = []string{"authorization", "cookie", "api-key", "x-auth-token"}

// hasCredentialHeader reports whether some ':' in s follows (after blanks)
// a name ending in one of credentialHeaderNames, case-insensitively: the
// cheap test before headerRE runs.
func hasCredentialHeader(s string) bool {
	for i := 0; ; {
		k := strings.IndexByte(s[i:], ':')
		if k < 0 {
			return false
		}
		k += i
		e := k
		for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') {
			e--
		}
		if e > 0 && s[e-1] == '"' {
			e-- // a JSON field name: "authorization": "..."
		}
		if e == 0 || (s[e-1]|0x20 != 'n' && s[e-1]|0x20 != 'e' && s[e-1]|0x20 != 'y') {
			i = k + 1
			continue // every credentialHeaderNames ends in n, e or y
		}
		name := s[max(0, e-40):e]
		for _, n := range credentialHeaderNames {
			if len(name) >= len(n) && equalFoldDash(name[len(name)-len(n):], n) {
				return true
			}
		}
		i = k + 1
	}
}

// equalFoldDash is strings.EqualFold with '_' in a equal to '-' in b (an
// nginx variable's http_x_api_key for the header X-Api-Key).
func equalFoldDash(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for k := 0; k < len(a); k++ {
		c := a[k]
		if c == '_' {
			c = '-'
		}
		if c|0x20 != b[k]|0x20 {
			return false
		}
	}
	return true
}

// RedactText redacts every URL (RedactURL) and every path with a query
// quoted in s (an error message, a command's output), and the value of every
// "Authorization: ..." style header field in it (Authorization,
// Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key, X-Auth-Token,
// Api-Key), also as a JSON field of a structured log line
// ("http_authorization": "...", jsonHeaderRE). Text without any of them is returned unchanged.
func RedactText(s string) string {
	if strings.Contains(s, "://") {
		s = redactURLs(s)
	}
	if strings.ContainsAny(s, "?#") {
		s = queryRE.ReplaceAllStringFunc(s, redactRef)
	}
	if hasCredentialHeader(s) {
		s = headerRE.ReplaceAllString(s, "${1}${2}"+Redacted)
		s = jsonHeaderRE.ReplaceAllString(s, `${1}`+Redacted+`"`)
	}
	return s
}

// RedactError returns err with its message redacted (RedactText), or nil
// for nil; errors.Is and errors.As still see err and everything it wraps.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := RedactText(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactQuery returns a raw query ("a=1&token=...", without the '?') with
// the value of every parameter whose name is SecretName replaced by
// Redacted, as RedactURL does to a URL's query.
func RedactQuery(q string) string { return redactParams(q) }

// maxRedactLine is the longest line RedactReader redacts whole; a longer
// one is redacted in pieces of this size.
const maxRedactLine = 1 << 20

// RedactReader returns a reader of r's bytes with every line redacted
// (RedactText): a log copied into evidence (an nginx or Envoy access log
// quoting request paths with their queries) and parsed from it holds no
// credential. A line without a secret passes unchanged, so line numbers
// and bytes elsewhere stay those of r. Lines longer than 1 MiB are
// redacted in 1 MiB pieces (memory stays bounded).
func RedactReader(r io.Reader) io.Reader {
	return &redactReader{br: bufio.NewReaderSize(r, maxRedactLine)}
}

type redactReader struct {
	br  *bufio.Reader
	buf []byte // redacted bytes not yet returned
	err error
}

func (r *redactReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil
		}
		r.err = err
		r.buf = append(r.buf[:0], RedactText(string(line))...)
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
