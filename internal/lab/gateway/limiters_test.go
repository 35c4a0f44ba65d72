package gateway

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestXRate(t *testing.T) {
	x, err := NewXRate(1, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	ctx := context.Background()
	steps := []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, true}, {"a", 0, true}, {"a", 0, false}, // burst 2
		{"b", 0, true},                       // its own bucket
		{"a", 999 * time.Millisecond, false}, // 0.999 tokens
		{"a", time.Second, true},             // 1 token
		{"a", 500 * time.Millisecond, false}, // an earlier time is decided at the latest (1s): no token is counted twice
		{"a", 2 * time.Second, true},
	}
	for i, s := range steps {
		d, err := x.Allow(ctx, s.key, t0.Add(s.at))
		if err != nil || d.Allowed != s.want {
			t.Fatalf("step %d (%s at %s): %+v %v, want allowed=%v", i, s.key, s.at, d, err, s.want)
		}
		if i == 6 && !d.At.Equal(t0.Add(time.Second)) {
			t.Errorf("step 6 decided at %v, want the latest time %v", d.At, t0.Add(time.Second))
		}
	}
	g, _ := NewXRate(1, 1, false)
	if d, _ := g.Allow(ctx, "a", t0); !d.Allowed {
		t.Fatal("global: first request denied")
	}
	if d, _ := g.Allow(ctx, "b", t0); d.Allowed {
		t.Fatal("global: a second key shares the one bucket, want denied")
	}
	for _, bad := range [][2]float64{{0, 1}, {-1, 1}, {1, 0}} {
		if _, err := NewXRate(bad[0], int(bad[1]), false); err == nil {
			t.Errorf("NewXRate(%v, %v): no error", bad[0], bad[1])
		}
	}
}

func TestNowFormat(t *testing.T) {
	at := time.Unix(1733475600, 123456789)
	for _, tc := range []struct {
		unit string
		dec  int
		want string
	}{
		{"s", 0, "1733475600"},
		{"s", 3, "1733475600.123"},
		{"s", 9, "1733475600.123456789"},
		{"ms", 0, "1733475600123"},
		{"ms", 2, "1733475600123.45"},
		{"us", 0, "1733475600123456"},
		{"ns", 0, "1733475600123456789"},
		{"ns", 2, "1733475600123456789.00"},
	} {
		f := NowFormat{Unit: tc.unit, Decimals: tc.dec}
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := f.Format(at); got != tc.want {
			t.Errorf("%s/%d: %q, want %q", tc.unit, tc.dec, got, tc.want)
		}
	}
	small := time.Unix(5, 7_000_000) // leading zeros of the fraction kept
	if got := (NowFormat{Unit: "s", Decimals: 3}).Format(small); got != "5.007" {
		t.Errorf("5.007 s: %q", got)
	}
	for _, f := range []NowFormat{{Unit: "m"}, {Unit: "s", Decimals: -1}, {Unit: "s", Decimals: 10}} {
		if f.Validate() == nil {
			t.Errorf("%+v: no error", f)
		}
	}
}

// TestLuaAdmitWhen: the script's answer is read strictly: with the
// default (nonzero) or an integer admit_when only an integer decides, with
// a string admit_when only a string; any other answer (a string, nil, a
// table where an integer is wanted) is a limiter error naming its type.
func TestLuaAdmitWhen(t *testing.T) {
	for _, tc := range []struct {
		v     any
		admit string
		want  bool
		err   string
	}{
		{int64(1), "", true, ""},
		{int64(0), "", false, ""},
		{int64(-1), AdmitNonZero, true, ""},
		{int64(1), "1", true, ""},
		{int64(2), "1", false, ""},
		{int64(0), "0", true, ""},
		{"OK", "OK", true, ""},
		{"DENY", "OK", false, ""},
		{nil, "", false, `answered nil (Lua nil or false) "nil", but admit_when nonzero wants an integer`},
		{"OK", "", false, `answered a string "OK", but admit_when nonzero wants an integer`},
		{"1", "1", false, `answered a string "1", but admit_when 1 wants an integer`},
		{[]any{int64(1), int64(5)}, "", false, `answered an array (Lua table) "1", but admit_when nonzero wants an integer`},
		{int64(1), "OK", false, `answered an integer "1", but admit_when "OK" wants a string`},
		{nil, "OK", false, `answered nil (Lua nil or false)`},
	} {
		rule, err := parseAdmitWhen(tc.admit)
		if err != nil {
			t.Fatalf("%q: %v", tc.admit, err)
		}
		got, err := rule.decide(tc.v)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%#v admit_when %q: %v %v, want error %q", tc.v, tc.admit, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%#v admit_when %q: %v %v, want %v", tc.v, tc.admit, got, err, tc.want)
		}
	}
	for _, bad := range []string{"true", "false", "nil", " OK", "OK\n", "a\x00b", strings.Repeat("x", MaxAdmitWhenBytes+1)} {
		if ParseAdmitWhen(bad) == nil {
			t.Errorf("admit_when %q: no error", bad)
		}
	}
	if LuaAnswer([]any{int64(7)}) != "7" || LuaAnswer(nil) != "nil" || LuaAnswer("OK") != "OK" {
		t.Error("LuaAnswer")
	}
	for _, ok := range []string{"{key}", "rl:{key}:{now}", "2000", ""} {
		if err := CheckTemplate(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{"{{key}}": `"{{key}" at byte 0`, "{now": "has no }", "{now}}": "the } at byte 5", "{user}": `"{user}" at byte 0`} {
		if err := CheckTemplate(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
	if _, err := NewLua(context.Background(), nil, LuaOptions{Keys: []string{"{user}"}, Now: NowFormat{Unit: "s"}}); err == nil {
		t.Error("NewLua with a {user} template: no error")
	}
	if got := expand([]string{"rl:{key}", "{now}", "2000"}, "u1", "17.5"); got[0] != "rl:u1" || got[1] != "17.5" || got[2] != "2000" {
		t.Errorf("expand: %v", got)
	}
}
