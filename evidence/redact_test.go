package evidence

import (
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p@127.0.0.1:80/x":           "http://u:xxxxx@127.0.0.1:80/x",
		"https://ops:s3cr%40t@h/p?q=1":        "https://ops:xxxxx@h/p?q=1",
		"http://u@h/x":                        "http://u@h/x", // no password
		"http://h/x":                          "http://h/x",
		"not a url at all http://a:b@c and d": "not a url at all http://a:xxxxx@c and d",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	msg := `Get "http://a:one@h1/x": refused; then https://b:t@w@o@h2:443/y, and "ftp://c:3@h3"`
	got := RedactText(msg)
	for _, secret := range []string{"one", "t@w@o", ":3@"} {
		if strings.Contains(got, secret) {
			t.Errorf("RedactText left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "http://a:xxxxx@h1/x") || !strings.Contains(got, "https://b:xxxxx@h2:443/y") {
		t.Errorf("RedactText = %q", got)
	}
}

// FuzzRedact: whatever the user, password and path, the URL built from
// them, alone or quoted in a message, comes back with the password
// "xxxxx" and everything else unchanged.
func FuzzRedact(f *testing.F) {
	f.Add("alice", "hunter2", "/x")
	f.Add("u", "p@ss:w/rd", "")
	f.Add("", "pw", "/a b")
	f.Fuzz(func(t *testing.T, user, pass, path string) {
		u := (&url.URL{Scheme: "http", User: url.UserPassword(user, pass), Host: "example.test:8080", Path: path}).String()
		orig, err := url.Parse(u)
		if err != nil || strings.ContainsAny(u, "\"' <>") {
			return // not a URL as messages quote them
		}
		msg := RedactText(`Get "` + u + `": EOF`)
		quoted, ok := strings.CutPrefix(msg, `Get "`)
		quoted, ok2 := strings.CutSuffix(quoted, `": EOF`)
		for what, s := range map[string]string{"RedactURL": RedactURL(u), "RedactText": quoted} {
			got, err := url.Parse(s)
			if what == "RedactText" && (!ok || !ok2) {
				t.Fatalf("RedactText changed the message around the URL: %q", msg)
			}
			if err != nil {
				t.Fatalf("%s(%q) = %q: %v", what, u, s, err)
			}
			pw, _ := got.User.Password()
			want := *orig
			want.User = url.UserPassword(user, "xxxxx")
			if pw != "xxxxx" || got.User.Username() != user || got.Host != orig.Host || got.Path != orig.Path {
				t.Fatalf("%s(%q) = %q (password %q), want %q", what, u, s, pw, want.String())
			}
		}
	})
}
