package attack

import "github.com/rlbench/rlbench/evidence"

// redactCaptured redacts the captured response headers in h (lower-case
// name → value) in place before they are recorded in evidence: the value of
// a header whose name carries a credential (evidence.SecretName:
// set-cookie, x-auth-token, www-authenticate ...) becomes
// evidence.Redacted, and every URL or credential header field quoted in
// another value (a Location with a password or ?token=) is redacted by
// evidence.RedactText. The rate-limit headers (DefaultCaptureHeaders) hold
// none and pass unchanged, without an allocation.
func redactCaptured(h map[string]string) {
	for k, v := range h {
		if r := redactCapturedValue(k, v); r != v {
			h[k] = r
		}
	}
}

// redactCapturedValue is redactCaptured for one header: name (lower
// case) and value.
func redactCapturedValue(name, v string) string {
	if r := evidence.RedactHeader(name, v); r != v {
		return r
	}
	return evidence.RedactText(v)
}

// capMemo is a worker's memory of the captured headers of its last
// responses, per lower-case name: the last value it saw (val: the string
// made for it, reused while the bytes repeat) and the last value it
// redacted with the result (in, out). A server sends the same Server and
// rate-limit policy values on every response: recording them then costs
// neither an allocation nor a redaction scan. At most capMemoMax names
// are remembered (a prefix such as ratelimit-* may match many).
type capMemo map[string]*capSeen

type capSeen struct{ val, in, out string }

const capMemoMax = 64

// value returns b as a string, the one made for name's last value when
// the bytes are the same.
func (m capMemo) value(name string, b []byte) string {
	if e := m[name]; e != nil {
		if e.val != string(b) {
			e.val = string(b)
		}
		return e.val
	}
	s := string(b)
	if len(m) < capMemoMax {
		m[name] = &capSeen{val: s, in: s, out: redactCapturedValue(name, s)}
	}
	return s
}

// redact is redactCaptured, each value's result remembered: a value equal
// to the last one redacted under its name takes the same result.
func (m capMemo) redact(h map[string]string) {
	for k, v := range h {
		e := m[k]
		if e == nil {
			if r := redactCapturedValue(k, v); r != v {
				h[k] = r
			}
			continue
		}
		if e.in != v {
			e.in, e.out = v, redactCapturedValue(k, v)
		}
		if e.out != v {
			h[k] = e.out
		}
	}
}
