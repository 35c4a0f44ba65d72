package hostprobe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// maxProcFile bounds a /proc file read (/proc/stat of a host with thousands
// of CPUs is well below it).
const maxProcFile = 4 << 20

// DefaultUserHZ is USER_HZ, the unit of /proc/stat's times, when
// /proc/self/auxv does not give AT_CLKTCK: 100 on every architecture Go
// runs Linux on but alpha (proc_stat(5), sysconf(_SC_CLK_TCK)).
const DefaultUserHZ = 100

// atClkTck is AT_CLKTCK, the auxiliary vector entry holding USER_HZ
// (getauxval(3), linux/auxvec.h).
const atClkTck = 17

func readProc(root, name string) ([]byte, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProcFile+1))
	if err == nil && len(b) > maxProcFile {
		err = fmt.Errorf("%s: longer than %d bytes", name, maxProcFile)
	}
	return b, err
}

// stealTicks is the aggregate steal time of /proc/stat in USER_HZ ticks.
type stealTicks struct {
	ticks uint64
	hz    int64
	ok    bool
}

// readSteal reads <root>/stat's steal time and USER_HZ (AT_CLKTCK of
// <root>/self/auxv, else DefaultUserHZ); ok is false when the steal time
// cannot be read or parsed.
func readSteal(root string) stealTicks {
	b, err := readProc(root, "stat")
	if err != nil {
		return stealTicks{}
	}
	ticks, err := ParseStatSteal(b)
	if err != nil {
		return stealTicks{}
	}
	hz := int64(DefaultUserHZ)
	if a, err := readProc(root, "self/auxv"); err == nil {
		if v, ok := ParseAuxvClockTicks(a); ok {
			hz = v
		}
	}
	return stealTicks{ticks: ticks, hz: hz, ok: true}
}

// stealNs is the steal time between two readings in ns, -1 when either is
// unknown, they disagree on USER_HZ, the counter went down (a CPU taken
// offline leaves the aggregate) or the result overflows.
func stealNs(a, b stealTicks) int64 {
	if !a.ok || !b.ok || a.hz != b.hz || b.ticks < a.ticks {
		return -1
	}
	d := b.ticks - a.ticks
	if d > math.MaxInt64/uint64(1e9) {
		return -1
	}
	return int64(d) * 1e9 / a.hz
}

// readLoad1 returns <root>/loadavg's 1-minute load average, -1 when it
// cannot be read or parsed.
func readLoad1(root string) float64 {
	b, err := readProc(root, "loadavg")
	if err != nil {
		return -1
	}
	v, err := ParseLoadavg(b)
	if err != nil {
		return -1
	}
	return v
}

// ParseStatSteal returns the steal time, in USER_HZ ticks, of the
// aggregate "cpu" line of /proc/stat (proc_stat(5): "cpu user nice system
// idle iowait irq softirq steal guest guest_nice", steal since Linux
// 2.6.11). It fails when there is no "cpu" line, the line has fewer than
// eight values, or one of its first eight is not an unsigned integer.
func ParseStatSteal(b []byte) (uint64, error) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		f := bytes.Fields(line)
		if len(f) == 0 || string(f[0]) != "cpu" {
			continue
		}
		if len(f) < 9 {
			return 0, fmt.Errorf("/proc/stat: the cpu line has %d values, steal is the 8th", len(f)-1)
		}
		var steal uint64
		for i := 1; i <= 8; i++ {
			v, err := strconv.ParseUint(string(f[i]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat: cpu value %d %q is not an unsigned integer", i, f[i])
			}
			steal = v
		}
		return steal, nil
	}
	return 0, errors.New(`/proc/stat: no "cpu" line`)
}

// ParseLoadavg returns the 1-minute load average, the first field of
// /proc/loadavg (proc_loadavg(5): "0.52 0.58 0.59 2/1234 5678"). It fails
// when the field is missing or not a finite number >= 0.
func ParseLoadavg(b []byte) (float64, error) {
	f := bytes.Fields(b)
	if len(f) == 0 {
		return 0, errors.New("/proc/loadavg: empty")
	}
	v, err := strconv.ParseFloat(string(f[0]), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("/proc/loadavg: load %q is not a number >= 0", f[0])
	}
	return v, nil
}

// ParseAuxvClockTicks returns AT_CLKTCK of an auxiliary vector
// (/proc/self/auxv: pairs of native-endian words, type then value, ended
// by AT_NULL); ok is false when the vector has no positive AT_CLKTCK.
func ParseAuxvClockTicks(b []byte) (hz int64, ok bool) {
	word := strconv.IntSize / 8
	for len(b) >= 2*word {
		typ, val := auxWord(b[:word]), auxWord(b[word:2*word])
		b = b[2*word:]
		switch typ {
		case 0: // AT_NULL
			return 0, false
		case atClkTck:
			if val == 0 || val > math.MaxInt32 {
				return 0, false
			}
			return int64(val), true
		}
	}
	return 0, false
}

func auxWord(b []byte) uint64 {
	if len(b) == 4 {
		return uint64(binary.NativeEndian.Uint32(b))
	}
	return binary.NativeEndian.Uint64(b)
}
