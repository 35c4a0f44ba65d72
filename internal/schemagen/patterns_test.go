package schemagen

import (
	"regexp"
	"testing"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
)

var (
	rangeRE     = regexp.MustCompile(rangePattern)
	planRangeRE = regexp.MustCompile(planRangePattern)
	durationRE  = regexp.MustCompile(durationPattern)
	rateRE      = regexp.MustCompile(ratePattern)
	latencyRE   = regexp.MustCompile(latencyPattern)
	intendedRE  = regexp.MustCompile(intendedPattern)
	latBoundRE  = regexp.MustCompile(latencyBoundPattern)
	ratioRE     = regexp.MustCompile(ratioBoundPattern)
)

// ascii reports whether s is printable ASCII, space or tab: the patterns'
// \s does not cover the Unicode spaces strings.TrimSpace removes, which no
// one writes in a plan.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return false
		}
	}
	return true
}

// checkPatterns: every string a Go parser accepts matches its schema
// pattern (a schema must never reject what rlbench reads).
func checkPatterns(t *testing.T, s string) {
	if r, err := evidence.ParseRange(s); err == nil && ascii(s) {
		if !rangeRE.MatchString(s) {
			t.Errorf("ParseRange accepts %q, rangePattern does not", s)
		}
		if r.Min >= 0 && !planRangeRE.MatchString(s) {
			t.Errorf("ParseRange accepts %q (min >= 0), planRangePattern does not", s)
		}
	}
	if _, err := time.ParseDuration(s); err == nil && !durationRE.MatchString(s) {
		t.Errorf("time.ParseDuration accepts %q, durationPattern does not", s)
	}
	if _, err := attack.ParseRate(s); err == nil && ascii(s) && !rateRE.MatchString(s) {
		t.Errorf("attack.ParseRate accepts %q, ratePattern does not", s)
	}
	if _, err := backend.ParseLatency(s); err == nil && ascii(s) && !latencyRE.MatchString(s) {
		t.Errorf("backend.ParseLatency accepts %q, latencyPattern does not", s)
	}
	if _, err := evidence.ParseIntendedLimit(s); err == nil && ascii(s) && !intendedRE.MatchString(s) {
		t.Errorf("evidence.ParseIntendedLimit accepts %q, intendedPattern does not", s)
	}
	if _, err := evidence.ParseLatencyBound(s); err == nil && ascii(s) && !latBoundRE.MatchString(s) {
		t.Errorf("evidence.ParseLatencyBound accepts %q, latencyBoundPattern does not", s)
	}
	if _, err := evidence.ParseRatioBound(s); err == nil && ascii(s) && !ratioRE.MatchString(s) {
		t.Errorf("evidence.ParseRatioBound accepts %q, ratioBoundPattern does not", s)
	}
}

var patternSeeds = []string{
	"", "0", "5", "+5", "-5", "-0", "007", " 5 ", "5..10", " 5 .. 10 ", "-3..-1", "0..0", "10..5",
	"1h", "20ms", "1h30m", "1.5s", ".5s", "1.s", "-1s", "+0", "300µs", "2μs", "1us", "1ns",
	"100/1s", "10/100ms", "60/m", "60/.m", "100", "infinity", " 100/1s ", "+5/s", "5/+1s", "1/1h30m",
	"uniform:10ms..50ms", " uniform: 1s .. 2s ", "exp:20ms", "normal:50ms,10ms", "normal: 50ms , 10ms", "uniform:2s..1s", "exp:",
	"5/1m", " 5 / 1m ", "0/1h", "-0/1s", "5/.m", "5/+1m", "5 per minute", "5/1d",
	"5/0s", "5/", "5/-1s", "0/1s", "x", "1..", "..1", "1 h", "1/1 s", "/1s", "5/s.", "1e3",
	"<= 50ms", "<1s", " >= -0s ", "< 0.1%", "<=0.001", ">= 1e-3 %", "< +.5", "<= -0%", "== 5ms",
}

func FuzzPatterns(f *testing.F) {
	for _, s := range patternSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPatterns(t, s) })
}

// TestPatternsReject: the patterns are not so loose that they accept
// anything: each of these is refused by the parser and by the pattern.
func TestPatternsReject(t *testing.T) {
	cases := []struct {
		re    *regexp.Regexp
		parse func(string) error
		bad   []string
	}{
		{rangeRE, func(s string) error { _, err := evidence.ParseRange(s); return err }, []string{"x", "1..", "..1", "1...2", "1.5", "1 2"}},
		{planRangeRE, nil, []string{"-5", "-1..3", "x"}},
		{durationRE, func(s string) error { _, err := time.ParseDuration(s); return err }, []string{"", "1", "1 h", "h", "1d", "1.5", "--1s"}},
		{rateRE, func(s string) error { _, err := attack.ParseRate(s); return err }, []string{"x", "1/1 s", "/1s", "-5/1s", "5/1d", "5/s.", "1.5"}},
		{latencyRE, func(s string) error { _, err := backend.ParseLatency(s); return err }, []string{"x", "gamma:1s", "uniform:1s", "normal:1s", "exp:", "1d"}},
		{intendedRE, func(s string) error { _, err := evidence.ParseIntendedLimit(s); return err }, []string{"5", "x/1m", "5/1d", "5 per minute", "/1m", "5/", "1.5/1m"}},
		{latBoundRE, func(s string) error { _, err := evidence.ParseLatencyBound(s); return err }, []string{"50ms", "== 5ms", "<=", "<= 5", "=< 5ms", "<= 1d"}},
		{ratioRE, func(s string) error { _, err := evidence.ParseRatioBound(s); return err }, []string{"0.1%", "== 1%", "<", "< x", "< 1%%", "< 0x1p-3", "< -5%"}},
	}
	for _, c := range cases {
		for _, s := range c.bad {
			if c.re.MatchString(s) {
				t.Errorf("%s matches %q", c.re, s)
			}
			if c.parse != nil && c.parse(s) == nil {
				t.Errorf("the parser accepts %q: not a bad example", s)
			}
		}
	}
}
