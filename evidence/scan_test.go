package evidence

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestIntValueDigitRuns holds intValue, which takes eight digits at a time,
// to strconv.ParseInt with encoding/json's rules (no leading zero, no
// fraction or exponent, within int64) on every length of digit run from 1
// to 22, with and without a sign, and a non-digit byte at every position
// of an eight-byte group.
func TestIntValueDigitRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []string
	for n := 1; n <= 22; n++ {
		for range 20 {
			var sb strings.Builder
			for k := range n {
				c := byte('0' + rng.IntN(10))
				if k == 0 && n > 1 && rng.IntN(4) == 0 {
					c = '0'
				}
				sb.WriteByte(c)
			}
			cases = append(cases, sb.String(), "-"+sb.String())
		}
		cases = append(cases, strings.Repeat("9", n), strings.Repeat("1", n)+".5", strings.Repeat("2", n)+"e3")
	}
	for k := range 9 {
		for _, c := range []byte{'/', ':', ' ', '"', 'a', 0x80, 0xff} {
			b := []byte(strings.Repeat("7", 12))
			b[k] = c
			cases = append(cases, string(b))
		}
	}
	cases = append(cases, "9223372036854775807", "9223372036854775808", "-9223372036854775807", "18446744073709551615", "1796116558654998098")
	for _, s := range cases {
		for _, neg := range []bool{true, false} {
			v, end, ok := intValue([]byte(s+","), 0, neg)
			// the run of digits intValue reads, after an optional '-'
			body := s
			if neg && strings.HasPrefix(s, "-") {
				body = s[1:]
			}
			run := len(body) - len(strings.TrimLeft(body, "0123456789"))
			lit := s[:len(s)-len(body)+run]
			rest := body[run:]
			want, err := strconv.ParseInt(lit, 10, 64)
			wantOK := err == nil && run > 0 && !(run > 1 && body[0] == '0') &&
				!strings.HasPrefix(rest, ".") && !strings.HasPrefix(rest, "e")
			if ok != wantOK || ok && (v != want || end != len(lit)) {
				t.Errorf("intValue(%q, neg %v) = %d, %d, %v; want %d, %d, %v", s, neg, v, end, ok, want, len(lit), wantOK)
			}
		}
	}
}
