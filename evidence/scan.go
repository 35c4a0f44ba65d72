package evidence

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// A field scanner for the two big evidence files. It reads one JSON line and
// picks out only the fields Load keeps, validating the rest of the line as it
// skips it. It accepts a subset of JSON that it decodes exactly as
// encoding/json would: an object whose keys are plain ASCII, whose known
// fields have the Go field's type, whose kept strings have no escapes and are
// valid UTF-8, and whose integers are plain decimal literals that fit. On
// anything else it reports false and the caller decodes the line in full
// (FuzzScanRequest and FuzzScanReceipt check the agreement).

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stopMask has the high bit set in each byte of w that is '"', '\\' or a
// control character (< 0x20); it may also flag bytes >= 0x80 next to a flagged
// byte, which the byte loop then looks at.
func stopMask(w uint64) uint64 {
	q := w ^ (lsb * '"')
	s := w ^ (lsb * '\\')
	return ((q-lsb) & ^q | (s-lsb) & ^s | (w-lsb*0x20) & ^w) & msb
}

// scanString scans the JSON string starting after its opening quote at b[i:].
// It returns the index after the closing quote, whether the string had
// escapes, whether it had bytes >= 0x80, and false if the string is not valid
// JSON (unterminated, control character, bad escape).
func scanString(b []byte, i int) (end int, esc, high bool, ok bool) {
	for {
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if w&msb != 0 {
				high = true
			}
			m := stopMask(w)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
			break
		}
		if i >= len(b) {
			return 0, false, false, false
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, esc, high, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return 0, false, false, false
				}
				i += 6
			default:
				return 0, false, false, false
			}
		case c < 0x20:
			return 0, false, false, false
		default:
			if c >= 0x80 {
				high = true
			}
			i++
		}
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// skipWS returns the index of the first byte at or after i that is not
// JSON whitespace. Every whitespace byte is <= ' ', so one comparison
// passes the usual case, a value or punctuation right there.
func skipWS(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// keptString scans a string value at b[i] that is kept: it must be a string
// without escapes and be valid UTF-8. It returns the content and the index after it.
func keptString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	end, esc, high, ok := scanString(b, i+1)
	if !ok || esc {
		return nil, 0, false
	}
	s := b[i+1 : end-1]
	if high && !utf8.Valid(s) {
		return nil, 0, false
	}
	return s, end, true
}

// stringValue skips a string value of a known string field (null is accepted:
// it leaves the field unchanged).
func stringValue(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '"' {
		end, _, _, ok := scanString(b, i+1)
		return end, ok
	}
	return literal(b, i, "null")
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// intValue parses a plain decimal integer (no fraction nor exponent) that
// fits an int64, optionally negative, as encoding/json accepts for an int64.
func intValue(b []byte, i int, neg bool) (int64, int, bool) {
	negative := false
	if neg && i < len(b) && b[i] == '-' {
		negative = true
		i++
	}
	start := i
	var v uint64
	// eight digits at a time while there are (sent_ns has 19): v takes
	// the same value as digit by digit for up to 19 digits, and more are
	// refused below
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		if !eightDigits(w) {
			break
		}
		v = v*100000000 + parseEight(w)
		i += 8
	}
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + uint64(b[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || n > 19 || (n > 1 && b[start] == '0') {
		return 0, 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, 0, false
	}
	// 19 digits fit in a uint64 without wrapping; the int64 range is checked here.
	if v > 1<<63-1 {
		return 0, 0, false
	}
	if negative {
		return -int64(v), i, true
	}
	return int64(v), i, true
}

// eightDigits reports whether the 8 bytes of w (little endian: the first
// byte lowest) are all ASCII digits: each byte's high nibble is 3 and adding
// 6 to it does not carry into the high nibble (bytes '0'..'9' only).
func eightDigits(w uint64) bool {
	return w&(lsb*0xF0) == lsb*0x30 && (w+lsb*0x06)&(lsb*0xF0) == lsb*0x30
}

// parseEight returns the decimal value of eight ASCII digits in w (the first
// digit in the lowest byte): pairs, then fours, then the eight, each step
// multiplying the higher-order half by its power of ten.
func parseEight(w uint64) uint64 {
	w -= lsb * '0'
	// bytes 0, 2, 4 and 6 hold the 2-digit values
	w = w*10 + w>>8
	// bits 32..63 hold the 8-digit value
	return (w&0x000000FF000000FF*(100+1000000<<32) + w>>16&0x000000FF000000FF*(1+10000<<32)) >> 32
}

// skipValue skips any JSON value at b[i], validating it; depth bounds nesting.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > 64 {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, _, ok := scanString(b, i+1)
		return end, ok
	case c == '{' || c == '[':
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == close {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return 0, false
				}
				end, _, _, ok := scanString(b, i+1)
				if !ok {
					return 0, false
				}
				i = skipWS(b, end)
				if i >= len(b) || b[i] != ':' {
					return 0, false
				}
				i = skipWS(b, i+1)
			}
			var ok bool
			if i, ok = skipValue(b, i, depth+1); !ok {
				return 0, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, false
			}
			if b[i] == close {
				return i + 1, true
			}
			if b[i] != ',' {
				return 0, false
			}
			i = skipWS(b, i+1)
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	default:
		return skipNumber(b, i)
	}
}

// skipNumber skips a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return 0, false
		}
	}
	return i, true
}

// objectLoop iterates the members of the object at b[i] (after leading
// whitespace): for each plain-ASCII key without escapes it calls member with
// the key and the index of the value, which returns the index after the
// value. It returns the index after the object, or false.
func objectLoop(b []byte, i int, member func(key []byte, i int) (int, bool)) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, esc, high, ok := scanString(b, i+1)
		if !ok || esc || high {
			return 0, false
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		if i, ok = member(key, skipWS(b, i+1)); !ok {
			return 0, false
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, false
		}
		if b[i] == '}' {
			return i + 1, true
		}
		if b[i] != ',' {
			return 0, false
		}
		i = skipWS(b, i+1)
	}
}

// foldsTo reports whether key equals one of names ignoring ASCII case
// (encoding/json matches field names case-insensitively).
func foldsTo(key []byte, names []string) bool {
	for _, n := range names {
		if len(n) != len(key) {
			continue
		}
		eq := true
		for j := 0; j < len(n); j++ {
			if key[j]|0x20 != n[j]|0x20 {
				eq = false
				break
			}
		}
		if eq {
			return true
		}
	}
	return false
}

// finish checks that only whitespace follows the object.
func finish(b []byte, i int) bool { return skipWS(b, i) == len(b) }

// reqScan holds what scanRequest keeps of a request line. wanted (set by
// the caller, kept across lines) names extra response headers to keep, the
// ones classification rules read.
type reqScan struct {
	id, target, phase, flow, body, url, conn []byte
	bodyEsc, hasBody, notSent                bool
	sent, latency, code                      int64
	bytesIn                                  uint64
	rateLimited, ust, contentType, overload  []byte
	hasRL, hasUST, hasCT, hasOverload        bool
	hasHeader                                bool
	rate                                     [numRateHeaders][]byte
	hasRate                                  [numRateHeaders]bool
	wanted                                   []string
	extra                                    [][]byte
	hasExtra                                 []bool
}

var requestFields = []string{"id", "target", "url", "method", "sent_ns", "latency_ns", "code", "error", "bytes_in", "headers", "body",
	"phase", "conn", "flow", "not_sent", "intended_ns", "proto"}

// scanRequest scans a requests.jsonl line into f; false means "decode in full".
func scanRequest(b []byte, f *reqScan) bool {
	wanted, extra, hasExtra := f.wanted, f.extra[:0], f.hasExtra[:0]
	*f = reqScan{wanted: wanted}
	for range wanted {
		extra, hasExtra = append(extra, nil), append(hasExtra, false)
	}
	f.extra, f.hasExtra = extra, hasExtra
	end, ok := objectLoop(b, skipWS(b, 0), func(key []byte, i int) (int, bool) {
		var ok bool
		switch string(key) {
		case "id":
			f.id, i, ok = keptString(b, i)
		case "target":
			f.target, i, ok = keptString(b, i)
		case "phase":
			f.phase, i, ok = keptString(b, i)
		case "url":
			f.url, i, ok = keptString(b, i)
		case "conn":
			f.conn, i, ok = keptString(b, i)
		case "flow":
			f.flow, i, ok = keptString(b, i)
		case "method", "error", "proto":
			i, ok = stringValue(b, i)
		case "intended_ns":
			_, i, ok = intValue(b, i, true)
		case "sent_ns":
			f.sent, i, ok = intValue(b, i, true)
		case "latency_ns":
			f.latency, i, ok = intValue(b, i, true)
		case "code":
			f.code, i, ok = intValue(b, i, true)
		case "not_sent":
			j := i
			if i, ok = literal(b, j, "true"); ok {
				f.notSent = true
			} else if i, ok = literal(b, j, "false"); !ok {
				i, ok = literal(b, j, "null")
			}
		case "bytes_in":
			var v int64
			v, i, ok = intValue(b, i, false)
			f.bytesIn = uint64(v)
		case "body":
			if i < len(b) && b[i] == '"' {
				var end int
				var high bool
				if end, f.bodyEsc, high, ok = scanString(b, i+1); !ok {
					return 0, false
				}
				f.body, i, f.hasBody = b[i+1:end-1], end, true
				// Invalid UTF-8 would be replaced by the decoder: decode such bodies in full.
				if high && !utf8.Valid(f.body) {
					return 0, false
				}
			}
		case "headers":
			f.hasHeader = true
			i, ok = objectLoop(b, i, func(hk []byte, j int) (int, bool) {
				var ok bool
				switch string(hk) {
				case "x-envoy-ratelimited":
					f.rateLimited, j, ok = keptString(b, j)
					f.hasRL = true
				case "x-envoy-upstream-service-time":
					f.ust, j, ok = keptString(b, j)
					f.hasUST = true
				case "content-type":
					f.contentType, j, ok = keptString(b, j)
					f.hasCT = true
				case "x-envoy-overloaded":
					f.overload, j, ok = keptString(b, j)
					f.hasOverload = true
				default:
					if k := rateHeaderIndex(hk); k >= 0 {
						f.rate[k], j, ok = keptString(b, j)
						f.hasRate[k] = true
						break
					}
					for w, name := range f.wanted {
						if string(hk) == name {
							f.extra[w], j, ok = keptString(b, j)
							f.hasExtra[w] = true
							return j, ok
						}
					}
					if j < len(b) && b[j] == '"' {
						j, _, _, ok = scanString(b, j+1)
					}
				}
				return j, ok
			})
		default:
			if foldsTo(key, requestFields) {
				return 0, false
			}
			i, ok = skipValue(b, i, 0)
		}
		return i, ok
	})
	return ok && finish(b, end)
}

// marks are the scanned parts Classify reads (the body only when it has
// no escapes: a line whose body has escapes is decoded in full when the
// body matters, see needsBody).
func (f *reqScan) marks() Marks {
	return Marks{Code: int(f.code), Body: string(f.body), BytesIn: f.bytesIn, RateLimited: string(f.rateLimited),
		UpstreamServiceTime: string(f.ust), HasUpstreamServiceTime: f.hasUST, ContentType: string(f.contentType),
		Overloaded: string(f.overload)}
}

// header returns a kept response header by lower-case name.
func (f *reqScan) header(name string) (string, bool) {
	for w, n := range f.wanted {
		if n == name {
			return string(f.extra[w]), f.hasExtra[w]
		}
	}
	return "", false
}

// rateHeaderByName returns a kept rate-limit header by lower-case name.
func (f *reqScan) rateHeaderByName(name string) (string, bool) {
	if k := rateHeaderIndex([]byte(name)); k >= 0 {
		return string(f.rate[k]), f.hasRate[k]
	}
	return "", false
}

// needsBody reports whether the class of a response with this code can
// depend on its body: every non-2xx response (limiter bodies, the
// backend's own body), and any response when rules read bodies.
func needsBody(code int64, rules bool) bool { return rules || code < 200 || code >= 300 }

// recScan holds what scanReceipt keeps of a receipt line.
type recScan struct {
	id         []byte
	hasID      bool // false: "id" absent or null
	recv       int64
	xrid       []byte
	hasXRID    bool
	wantHeader bool
	endpoint   []byte
	attempt    uint16
	hasAttempt bool
}

var receiptFields = []string{"id", "recv_ns", "recv_time", "method", "path", "query", "remote", "headers", "endpoint", "status", "fault",
	"delay_ns", "replica"}

// scanReceipt scans a receipts.jsonl line into f; false means "decode in
// full". The x-request-id header is kept when f.wantHeader is set; the
// endpoint and the x-envoy-attempt-count header always are.
func scanReceipt(b []byte, f *recScan) bool {
	want := f.wantHeader
	*f = recScan{wantHeader: want}
	end, ok := objectLoop(b, skipWS(b, 0), func(key []byte, i int) (int, bool) {
		var ok bool
		switch string(key) {
		case "id":
			if i < len(b) && b[i] == 'n' {
				i, ok = literal(b, i, "null")
				f.id, f.hasID = nil, false
			} else {
				f.id, i, ok = keptString(b, i)
				f.hasID = true
			}
		case "recv_ns":
			f.recv, i, ok = intValue(b, i, true)
		case "recv_time", "method", "path", "query", "remote", "fault", "replica":
			i, ok = stringValue(b, i)
		case "status", "delay_ns":
			_, i, ok = intValue(b, i, true)
		case "endpoint":
			f.endpoint, i, ok = keptString(b, i)
		case "headers":
			i, ok = objectLoop(b, i, func(hk []byte, j int) (int, bool) {
				if foldsTo(hk, []string{AttemptCountHeader}) {
					if string(hk) != AttemptCountHeader || f.hasAttempt {
						return 0, false // several spellings: decode in full
					}
					v, end, ok := keptString(b, j)
					if !ok {
						return 0, false
					}
					f.attempt, f.hasAttempt = ParseAttemptCount(string(v)), true
					return end, true
				}
				if want && foldsTo(hk, []string{"x-request-id"}) {
					if string(hk) != "x-request-id" || f.hasXRID {
						return 0, false // several spellings: decode in full
					}
					var ok bool
					f.xrid, j, ok = keptString(b, j)
					f.hasXRID = true
					return j, ok
				}
				if j < len(b) && b[j] == '"' {
					end, _, _, ok := scanString(b, j+1)
					return end, ok
				}
				return 0, false
			})
		default:
			if foldsTo(key, receiptFields) {
				return 0, false
			}
			i, ok = skipValue(b, i, 0)
		}
		return i, ok
	})
	return ok && finish(b, end)
}
