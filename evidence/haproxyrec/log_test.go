package haproxyrec

import (
	"errors"
	"strings"
	"testing"
)

// Lines as HAProxy 2.6.12 wrote them with rlbench's log-format: a denied request, an admitted one.
const (
	deniedLine = `{"id":"r11","accept_s":"1796533539","accept_ms":"489","decide_us":"1796533539489990","rate":"11","key":"127.0.0.1","status":"429","term":"PR","th":"0","ti":"0","treq":"0","tw":"-1","tc":"-1","tr":"-1","ta":"0","tt":"0","backend":"fe","server":"<NOSRV>","method":"GET","rt":"10","cp":"47746"}`
	passedLine = `{"id":"a\"b","accept_s":"1796533539","accept_ms":"07","decide_us":"1796533539007120","rate":"3","key":"127.0.0.1","status":"200","term":"--","th":"0","ti":"1","treq":"2","tw":"0","tc":"1","tr":"4","ta":"7","tt":"8","backend":"be","server":"s0","method":"GET","rt":"2","cp":"47700"}`
	untracked  = `{"id":"-","accept_s":"1796533539","accept_ms":"500","decide_us":"1796533539500001","rate":"-","key":"-","status":"200","term":"--","th":"0","ti":"0","treq":"0","tw":"0","tc":"0","tr":"1","ta":"1","tt":"1","backend":"be","server":"s0","method":"GET","rt":"3","cp":"1"}`
)

func TestParseLog(t *testing.T) {
	recs, err := ParseLog(strings.NewReader(deniedLine+"\n\n"+passedLine+"\n"+untracked+"\nProxy fe stopped (cumulated conns: FE: 30, BE: 0).\n"), "haproxy.log")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	d, p, u := recs[0], recs[1], recs[2]
	if d.Line != 1 || p.Line != 3 || u.Line != 4 {
		t.Errorf("lines %d %d %d, want 1 3 4", d.Line, p.Line, u.Line)
	}
	if d.ID != "r11" || d.AcceptMs != 1796533539489 || d.DecideUs != 1796533539489990 || d.Rate == nil || *d.Rate != 11 ||
		d.Status != 429 || d.Term != "PR" || d.Tw != -1 || d.Tc != -1 || d.Server != NoServer || d.ClientPort != 47746 {
		t.Errorf("denied record %+v", d)
	}
	if !d.Denied() || p.Denied() || u.Denied() || !d.DeniedBy(10) || d.DeniedBy(11) || d.Forwarded() {
		t.Errorf("denied record: DeniedBy(10) %v, DeniedBy(11) %v, Forwarded %v", d.DeniedBy(10), d.DeniedBy(11), d.Forwarded())
	}
	if ms, ok := d.DecideMs(); !ok || ms != 1796533539489 {
		t.Errorf("DecideMs %d %v", ms, ok)
	}
	if _, ok := d.ForwardMs(); ok {
		t.Error("a denied request has a forward time")
	}
	if p.ID != `a"b` || p.AcceptMs != 1796533539007 || !p.Forwarded() || p.DeniedBy(2) {
		t.Errorf("passed record %+v", p)
	}
	if f, ok := p.ForwardMs(); !ok || f != 1796533539007+0+1+2+0+1 {
		t.Errorf("ForwardMs %d %v", f, ok)
	}
	if u.ID != "" || u.Rate != nil || u.Tracked() || u.Key != "" || u.DeniedBy(0) {
		t.Errorf("untracked record %+v", u)
	}
	s := Summarize(recs)
	if s.Requests != 3 || s.Tracked != 2 || s.Forwarded != 2 || s.ByStatus[429] != 1 || s.ByStatus[200] != 2 {
		t.Errorf("summary %+v", s)
	}
}

func TestParseLogErrors(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"not json", "[WARNING] something\n", "x.log:1: not a JSON object"},
		{"not a notice", deniedLine + "\nProxy fe started.\n", "x.log:2: not a JSON object"},
		{"bad number", passedLine + "\n" + strings.Replace(passedLine, `"tc":"1"`, `"tc":"x"`, 1), `x.log:2: tc "x": want an integer >= -1`},
		{"negative rate", strings.Replace(deniedLine, `"rate":"11"`, `"rate":"-3"`, 1), `rate "-3"`},
		{"half a date", strings.Replace(deniedLine, `"accept_ms":"489"`, `"accept_ms":"-"`, 1), "accept_s and accept_ms go together"},
		{"ms out of range", strings.Replace(deniedLine, `"accept_ms":"489"`, `"accept_ms":"1489"`, 1), "not a date"},
		{"array value", strings.Replace(deniedLine, `"key":"127.0.0.1"`, `"key":[1]`, 1), "key: want a string or a number"},
		{"long line", "{" + strings.Repeat(" ", maxLine+1) + "}", "x.log:1: line longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLog(strings.NewReader(c.in), "x.log")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
	stop := errors.New("stop")
	if err := ReadLog(strings.NewReader(deniedLine+"\n"+passedLine), "x", func(LogRecord) error { return stop }); err != stop {
		t.Errorf("fn's error: got %v", err)
	}
}

// FuzzParseLog: any input parses or fails with an error naming the source and a line; a parsed record keeps
// the invariants the analysis relies on (timers >= -1, a status below 1000, a plausible accept date).
func FuzzParseLog(f *testing.F) {
	for _, s := range []string{deniedLine, passedLine, untracked, deniedLine + "\n" + passedLine, "{}", "{\"rate\":5}", "-", `{"tt":-2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		recs, err := ParseLog(strings.NewReader(in), "f.log")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.log:") {
				t.Fatalf("error without source: %v", err)
			}
			return
		}
		last := 0
		for _, r := range recs {
			if r.Line <= last {
				t.Fatalf("lines not increasing: %d after %d", r.Line, last)
			}
			last = r.Line
			for _, v := range []int64{r.Th, r.Ti, r.TR, r.Tw, r.Tc, r.Tr, r.Ta, r.Tt} {
				if v < -1 {
					t.Fatalf("timer %d < -1 in %+v", v, r)
				}
			}
			if r.Status < 0 || r.Status > 999 || r.AcceptMs < 0 || r.Rate != nil && *r.Rate < 0 {
				t.Fatalf("record out of range: %+v", r)
			}
			if f, ok := r.ForwardMs(); ok && f < r.AcceptMs {
				t.Fatalf("forward %d before accept %d", f, r.AcceptMs)
			}
		}
	})
}
