package evidence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p@127.0.0.1:80/x":           "http://u:xxxxx@127.0.0.1:80/x",
		"https://ops:s3cr%40t@h/p?q=1":        "https://ops:xxxxx@h/p?q=1",
		"http://u@h/x":                        "http://xxxxx@h/x", // a user alone may be the token
		"http://u:@h/x":                       "http://u:xxxxx@h/x",
		"https://h:8443/p?token=abc&page=2":   "https://h:8443/p?token=xxxxx&page=2",
		"/x?access_token=a;X-Amz-Signature=b": "/x?access_token=xxxxx;X-Amz-Signature=xxxxx",
		"/x?api%5Fkey=a&q=token":              "/x?api%5Fkey=xxxxx&q=token", // names unescaped; values are not names
		"http://h/cb#id_token=a&state=s":      "http://h/cb#id_token=xxxxx&state=s",
		"http://h/x?Password=a&auth":          "http://h/x?Password=xxxxx&auth",
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

// TestRedactTextQueryAndHeaders: free text loses query secrets (in URLs
// and in bare paths) and credential header values, and keeps the rest.
func TestRedactTextQueryAndHeaders(t *testing.T) {
	for in, want := range map[string]string{
		`Get "http://h:1/m?token=S1&x=1": dial tcp: refused`:   `Get "http://h:1/m?token=xxxxx&x=1": dial tcp: refused`,
		`building the request for /x?sig=S2 failed`:            `building the request for /x?sig=xxxxx failed`,
		`path=/p?apikey=S3,ids=5`:                              `path=/p?apikey=xxxxx`, // a value runs to '&' or ';'
		"sent Authorization: Bearer S4\nnext line":             "sent Authorization: xxxxx\nnext line",
		`header "Cookie: a=S5; b=S6": bad`:                     `header "Cookie: xxxxx": bad`,
		`descriptor key=tenant value=lab, /ping?user=alice ok`: `descriptor key=tenant value=lab, /ping?user=alice ok`,
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// TestRedactHeader: credential headers lose their values, others keep them.
func TestRedactHeader(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"Authorization", "Bearer abc", Redacted},
		{"proxy-authorization", "Basic abc", Redacted},
		{"Cookie", "s=1", Redacted},
		{"X-Api-Key", "k", Redacted},
		{"x-user", "alice", "alice"},
		{"Authorization", "", ""},
	} {
		if got := RedactHeader(c.name, c.in); got != c.want {
			t.Errorf("RedactHeader(%q, %q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	for in, want := range map[string]string{
		"Authorization: Bearer abc": "Authorization: xxxxx",
		"x-user: alice":             "x-user: alice",
		"Bearer abc":                "Bearer xxxxx", // no name: maybe a value alone
		"abc":                       Redacted,
		"Authorization Bearer abc":  "Authorization xxxxx",
	} {
		if got := RedactHeaderField(in); got != want {
			t.Errorf("RedactHeaderField(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedactError: the message is redacted and the chain is kept.
func TestRedactError(t *testing.T) {
	if RedactError(nil) != nil {
		t.Fatal("RedactError(nil) != nil")
	}
	plain := errors.New("no secret here")
	if RedactError(plain) != plain {
		t.Error("an error without a secret is returned as is")
	}
	inner := &url.Error{Op: "Get", URL: "http://u:S@h/?token=T", Err: context.Canceled}
	err := RedactError(fmt.Errorf("fetch: %w", inner))
	var ue *url.Error
	if strings.Contains(err.Error(), "S@") || strings.Contains(err.Error(), "=T") || !errors.Is(err, context.Canceled) || !errors.As(err, &ue) {
		t.Errorf("RedactError = %q (Is Canceled %v, As *url.Error %v)", err, errors.Is(err, context.Canceled), errors.As(err, &ue))
	}
}

// TestRedactReader: a log read through RedactReader keeps its lines and
// bytes where there is no secret, and loses the secrets where there are.
func TestRedactReader(t *testing.T) {
	in := "plain line\n" + `{"uri":"/x?token=S1&a=1"}` + "\n" + "GET http://u:S2@h/ 200\n" + "last no newline"
	want := "plain line\n" + `{"uri":"/x?token=xxxxx&a=1"}` + "\n" + "GET http://u:xxxxx@h/ 200\n" + "last no newline"
	var b strings.Builder
	if _, err := io.Copy(&b, iotest.OneByteReader(RedactReader(strings.NewReader(in)))); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("RedactReader:\n%q\nwant\n%q", b.String(), want)
	}
	long := strings.Repeat("a", maxRedactLine+10) + "\n"
	n, err := io.Copy(io.Discard, RedactReader(strings.NewReader(long)))
	if err != nil || n != int64(len(long)) {
		t.Errorf("a line over the buffer: %d bytes, %v; want %d", n, err, len(long))
	}
	if got := RedactQuery("a=1&api_key=k&b"); got != "a=1&api_key=xxxxx&b" {
		t.Errorf("RedactQuery = %q", got)
	}
}

// FuzzRedactQuery: whatever the value of a credential query parameter (in
// a URL or a bare path, alone or quoted in a message), it does not survive
// RedactURL or RedactText, the parameter's name and the other parameters
// stay, and a message without a secret comes back unchanged.
func FuzzRedactQuery(f *testing.F) {
	f.Add("token", "abc123", "/x", "page=2")
	f.Add("X-Amz-Signature", "a/b+c=", "", "a=1;b=2")
	f.Add("api_key", "k#frag", "/p/q", "")
	f.Fuzz(func(t *testing.T, name, value, path, other string) {
		v := url.QueryEscape(value)
		n := url.QueryEscape(name)
		if !SecretName(name) || len(v) < 4 || strings.Contains(n+path+other, v) || strings.ContainsAny(path+other, "?#&;= \"'<>`\t\r\n") {
			return
		}
		if path != "" && !strings.HasPrefix(path, "/") || strings.IndexFunc(path+other, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return // not a path as a URL writes it (no blank or control character)
		}
		q := n + "=" + v
		if other != "" {
			q += "&" + other + "=1"
		}
		for _, u := range []string{"http://example.test:8080" + path + "?" + q, "/r" + path + "?" + q} {
			for what, got := range map[string]string{"RedactURL": RedactURL(u), "RedactText": RedactText(`Get "` + u + `": EOF`)} {
				if strings.Contains(got, v) {
					t.Fatalf("%s(%q) = %q: the value is still there", what, u, got)
				}
				if !strings.Contains(got, n+"="+Redacted) || (other != "" && !strings.Contains(got, "&"+other+"=1")) {
					t.Fatalf("%s(%q) = %q: a name or another parameter is lost", what, u, got)
				}
			}
		}
		plain := "GET /x" + path + " answered 429"
		if RedactText(plain) != plain {
			t.Fatalf("RedactText(%q) = %q: no secret, yet changed", plain, RedactText(plain))
		}
	})
}

// BenchmarkRedactText: one line of `rlbench export vegeta` (a URL, JSON
// keys, no secret), the volume a command's whole output goes through.
func BenchmarkRedactText(b *testing.B) {
	line := `{"attack":"","seq":7,"code":429,"timestamp":"2026-12-06T02:34:45.642Z","latency":1200000,"bytes_out":0,"bytes_in":18,"error":"429 Too Many Requests","body":null,"method":"GET","url":"http://127.0.0.1:10000/inventory","headers":{"X-Rlbench-Id":["req-0007"]}}` + "\n"
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if RedactText(line) != line {
			b.Fatal("changed")
		}
	}
}

// TestRedactJSONLogFields (issue 27): a structured access log logs request
// headers as JSON fields (nginx's "http_authorization": "$http_authorization",
// an Envoy json_format "authorization": "%REQ(AUTHORIZATION)%"); the copy
// rlbench keeps of such a log held the credential in clear, since only
// "Authorization: value" was matched. The value is redacted, escapes
// included; other fields, and fields merely named like a key (an RLS
// decision's "key"), are kept.
func TestRedactJSONLogFields(t *testing.T) {
	for in, want := range map[string]string{
		`{"status":503,"http_authorization":"Bearer S1","uri":"/"}`:        `{"status":503,"http_authorization":"xxxxx","uri":"/"}`,
		`{"authorization": "Basic S2\"x", "code": 200}`:                    `{"authorization": "xxxxx", "code": 200}`,
		`{"http_cookie":"a=S3; b=S4","x":"1"}`:                             `{"http_cookie":"xxxxx","x":"1"}`,
		`{"HTTP_X_API_KEY":"S5","http_x_auth_token":"S6"}`:                 `{"HTTP_X_API_KEY":"xxxxx","http_x_auth_token":"xxxxx"}`,
		`{"key":"domain_tenant_lab_1796527000","cache_key":"k","token":1}`: `{"key":"domain_tenant_lab_1796527000","cache_key":"k","token":1}`,
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%s)\n = %s\nwant %s", in, got, want)
		}
	}
	var b strings.Builder
	if _, err := io.Copy(&b, RedactReader(strings.NewReader(`{"http_authorization":"Bearer S7"}`+"\n"))); err != nil || strings.Contains(b.String(), "S7") {
		t.Errorf("RedactReader: %q %v", b.String(), err)
	}
}
