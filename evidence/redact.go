package evidence

import (
	"net/url"
	"regexp"
)

// Evidence never holds a password. A URL with userinfo (RFC 3986 section
// 3.2.1, "user:password@host"; deprecated there, still used for basic auth)
// is sent as given, but every URL written to evidence (requests.jsonl,
// attack.json, manifest.json, faults.jsonl, stats snapshots, NOT_RUN
// reasons) and every message quoting one goes through RedactURL or
// RedactText first.

// RedactURL returns u with the password of its userinfo replaced by
// "xxxxx", as net/url's URL.Redacted does ("https://user:xxxxx@host/p"); a
// URL without a password is returned unchanged. A string that does not
// parse as a URL is redacted as text (RedactText).
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return RedactText(u)
	}
	if _, has := p.User.Password(); !has {
		return u
	}
	return p.Redacted()
}

// userinfoRE matches "scheme://user:password@" in free text; the password
// runs to the last '@' before the end of the authority.
var userinfoRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@:"'<>]*):([^\s/?#"'<>]*)@`)

// RedactText replaces the password of every "scheme://user:password@" in s
// (an error message, a command's output) with "xxxxx".
func RedactText(s string) string {
	if !userinfoRE.MatchString(s) {
		return s
	}
	return userinfoRE.ReplaceAllString(s, "${1}${2}:xxxxx@")
}
