package evidence

import (
	"strconv"
	"unicode/utf8"
)

// AppendRequestJSON appends r as one JSON object (no newline) to dst and
// returns the extended slice. The bytes are exactly what encoding/json's
// Marshal produces for *Request (same field order, omitempty rules, sorted
// header keys, HTML-safe escaping of <, > and &, \u2028/\u2029 escaped,
// invalid UTF-8 replaced by U+FFFD), which TestAppendRequestJSONMatches and
// FuzzAppendRequestJSON check. It allocates nothing when dst has room (more
// than 8 headers cost one sort buffer). Writers of requests.jsonl use it with
// Writer.WriteRaw on a reused buffer.
func AppendRequestJSON(dst []byte, r *Request) []byte {
	dst = append(dst, `{"id":`...)
	dst = AppendJSONString(dst, r.ID)
	dst = append(dst, `,"target":`...)
	dst = AppendJSONString(dst, r.Target)
	dst = append(dst, `,"url":`...)
	dst = AppendJSONString(dst, r.URL)
	dst = append(dst, `,"method":`...)
	dst = AppendJSONString(dst, r.Method)
	dst = append(dst, `,"sent_ns":`...)
	dst = strconv.AppendInt(dst, r.SentNs, 10)
	dst = append(dst, `,"latency_ns":`...)
	dst = strconv.AppendInt(dst, r.LatencyNs, 10)
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(r.Code), 10)
	if r.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = AppendJSONString(dst, r.Error)
	}
	dst = append(dst, `,"bytes_in":`...)
	dst = strconv.AppendUint(dst, r.BytesIn, 10)
	dst = appendHeaders(dst, r.Headers)
	if r.Body != "" {
		dst = append(dst, `,"body":`...)
		dst = AppendJSONString(dst, r.Body)
	}
	if r.Phase != "" {
		dst = append(dst, `,"phase":`...)
		dst = AppendJSONString(dst, r.Phase)
	}
	if r.IntendedNs != 0 {
		dst = append(dst, `,"intended_ns":`...)
		dst = strconv.AppendInt(dst, r.IntendedNs, 10)
	}
	if r.NotSent {
		dst = append(dst, `,"not_sent":true`...)
	}
	if r.Flow != "" {
		dst = append(dst, `,"flow":`...)
		dst = AppendJSONString(dst, r.Flow)
	}
	if r.Proto != "" {
		dst = append(dst, `,"proto":`...)
		dst = AppendJSONString(dst, r.Proto)
	}
	if r.Conn != "" {
		dst = append(dst, `,"conn":`...)
		dst = AppendJSONString(dst, r.Conn)
	}
	return append(dst, '}')
}

// AppendReceiptJSON appends rc as one JSON object (no newline) to dst and
// returns the extended slice: exactly encoding/json's Marshal of *Receipt,
// as AppendRequestJSON is for *Request (TestAppendReceiptJSONMatches and
// FuzzAppendReceiptJSON check it). It allocates nothing when dst has room
// (more than 8 headers cost one sort buffer). The backend writes
// receipts.jsonl with it.
func AppendReceiptJSON(dst []byte, rc *Receipt) []byte {
	dst = append(dst, `{"id":`...)
	if rc.ID == nil {
		dst = append(dst, "null"...)
	} else {
		dst = AppendJSONString(dst, *rc.ID)
	}
	dst = append(dst, `,"recv_ns":`...)
	dst = strconv.AppendInt(dst, rc.RecvNs, 10)
	dst = append(dst, `,"recv_time":`...)
	dst = AppendJSONString(dst, rc.RecvTime)
	dst = append(dst, `,"method":`...)
	dst = AppendJSONString(dst, rc.Method)
	dst = append(dst, `,"path":`...)
	dst = AppendJSONString(dst, rc.Path)
	if rc.Query != "" {
		dst = append(dst, `,"query":`...)
		dst = AppendJSONString(dst, rc.Query)
	}
	dst = append(dst, `,"remote":`...)
	dst = AppendJSONString(dst, rc.Remote)
	dst = appendHeaders(dst, rc.Headers)
	if rc.Endpoint != "" {
		dst = append(dst, `,"endpoint":`...)
		dst = AppendJSONString(dst, rc.Endpoint)
	}
	if rc.Status != 0 {
		dst = append(dst, `,"status":`...)
		dst = strconv.AppendInt(dst, int64(rc.Status), 10)
	}
	if rc.Fault != "" {
		dst = append(dst, `,"fault":`...)
		dst = AppendJSONString(dst, rc.Fault)
	}
	if rc.DelayNs != 0 {
		dst = append(dst, `,"delay_ns":`...)
		dst = strconv.AppendInt(dst, rc.DelayNs, 10)
	}
	if rc.Replica != "" {
		dst = append(dst, `,"replica":`...)
		dst = AppendJSONString(dst, rc.Replica)
	}
	return append(dst, '}')
}

// appendHeaders appends `,"headers":{...}` with sorted keys, or nothing for
// an empty map (omitempty).
func appendHeaders(dst []byte, h map[string]string) []byte {
	if len(h) == 0 {
		return dst
	}
	dst = append(dst, `,"headers":{`...)
	var small [8]string
	keys := small[:0]
	for k := range h {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, k)
		dst = append(dst, ':')
		dst = AppendJSONString(dst, h[k])
	}
	return append(dst, '}')
}

// sortStrings is an allocation-free insertion sort (header maps are small);
// encoding/json orders map keys by byte-wise string comparison, as here.
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

const hexDigits = "0123456789abcdef"

// jsonSafe[b] is true for the ASCII bytes encoding/json copies unescaped
// when it escapes HTML (its htmlSafeSet): printable, not '"', '\\', '<',
// '>' or '&'.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// AppendJSONString appends s as a JSON string with encoding/json's escaping
// (encode.go appendString with escapeHTML true): <, > and & as \u003c
// \u003e \u0026, U+2028 and U+2029 escaped, control bytes as \b \f \n \r
// \t or \u00XX, invalid UTF-8 as \ufffd. It is the one JSON string encoder
// of the allocation-free line writers (requests.jsonl here, the lab proxy's
// access log).
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
