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
		if r := evidence.RedactHeader(k, v); r != v {
			h[k] = r
		} else if r := evidence.RedactText(v); r != v {
			h[k] = r
		}
	}
}
