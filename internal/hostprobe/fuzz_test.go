package hostprobe

import (
	"bytes"
	"math"
	"strconv"
	"testing"
)

// FuzzParseStatSteal: the /proc/stat parser never panics, and what it
// accepts is the 8th value of a "cpu" line of the input.
func FuzzParseStatSteal(f *testing.F) {
	f.Add([]byte("cpu  4705 150 1120 16250 520 20 5 81 0 0\ncpu0 2352 75 560 8125 260 10 2 40 0 0\nintr 1 2\n"))
	f.Add([]byte("cpu 1 2 3 4 5 6 7\n"))
	f.Add([]byte("cpu0 1 2 3 4 5 6 7 8\ncpu\t1\t2\t3\t4\t5\t6\t7\t18446744073709551615"))
	f.Fuzz(func(t *testing.T, b []byte) {
		steal, err := ParseStatSteal(b)
		if err != nil {
			return
		}
		for _, line := range bytes.Split(b, []byte{'\n'}) {
			if fs := bytes.Fields(line); len(fs) > 0 && string(fs[0]) == "cpu" {
				if len(fs) < 9 {
					t.Fatalf("steal %d accepted from a cpu line of %d values: %q", steal, len(fs)-1, line)
				}
				if v, perr := strconv.ParseUint(string(fs[8]), 10, 64); perr != nil || v != steal {
					t.Fatalf("steal %d, the first cpu line is %q", steal, line)
				}
				return
			}
		}
		t.Fatalf("steal %d accepted from input without a cpu line: %q", steal, b)
	})
}

// FuzzParseLoadavg: the /proc/loadavg parser never panics and accepts only
// a finite load >= 0 written as the first field.
func FuzzParseLoadavg(f *testing.F) {
	f.Add([]byte("0.52 0.58 0.59 2/1234 5678\n"))
	f.Add([]byte("31.07 20.01 9.50 18/611 4242"))
	f.Add([]byte("NaN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseLoadavg(b)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("load %v accepted from %q", v, b)
		}
		if w, perr := strconv.ParseFloat(string(bytes.Fields(b)[0]), 64); perr != nil || w != v {
			t.Fatalf("load %v, first field %q", v, bytes.Fields(b)[0])
		}
	})
}

// FuzzParseAuxvClockTicks: the auxiliary vector parser never panics and
// gives only a positive USER_HZ.
func FuzzParseAuxvClockTicks(f *testing.F) {
	f.Add(auxv(6, 4096, atClkTck, 100, 0, 0))
	f.Add(auxv(atClkTck, 0))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if hz, ok := ParseAuxvClockTicks(b); ok && (hz <= 0 || hz > math.MaxInt32) {
			t.Fatalf("hz %d accepted", hz)
		}
	})
}
