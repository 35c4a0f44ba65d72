package hostprobe

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// fakeHost is an injected clock and sleep: every Sleep moves the clock by
// the asked duration plus the next of lates, and once lates are used up
// it closes drained and blocks until the probe is stopped. The probe's
// samples are then exactly lates, whatever the real scheduling.
type fakeHost struct {
	mu      sync.Mutex
	now     time.Time
	lates   []time.Duration
	drained chan struct{}
}

func newFakeHost(lates ...time.Duration) *fakeHost {
	return &fakeHost{now: time.Unix(1796032800, 0), lates: lates, drained: make(chan struct{})}
}

func (h *fakeHost) Now() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *fakeHost) Sleep(ctx context.Context, d time.Duration) error {
	h.mu.Lock()
	if len(h.lates) == 0 {
		h.mu.Unlock()
		close(h.drained)
		<-ctx.Done()
		return ctx.Err()
	}
	h.now = h.now.Add(d + h.lates[0])
	h.lates = h.lates[1:]
	h.mu.Unlock()
	return nil
}

// advance moves the clock (time passing outside the probe's sleeps).
func (h *fakeHost) advance(d time.Duration) {
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

// procDir writes a fake /proc: stat with the given steal ticks on its
// aggregate cpu line, loadavg with load, and self/auxv with AT_CLKTCK hz
// (none when hz is 0).
func procDir(t *testing.T, dir string, steal uint64, load string, hz uint64) {
	t.Helper()
	stat := "cpu  4705 150 1120 16250 520 20 5 " + strconv.FormatUint(steal, 10) + " 0 0\ncpu0 2352 75 560 8125 260 10 2 0 0 0\nintr 1 2 3\nctxt 99\n"
	must(t, os.MkdirAll(filepath.Join(dir, "self"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "loadavg"), []byte(load+" 0.58 0.59 2/1234 5678\n"), 0o644))
	if hz != 0 {
		must(t, os.WriteFile(filepath.Join(dir, "self", "auxv"), auxv(6, 4096, atClkTck, hz, 0, 0), 0o644))
	}
}

// auxv renders type/value pairs as a native auxiliary vector.
func auxv(words ...uint64) []byte {
	var b []byte
	for _, w := range words {
		if strconv.IntSize == 32 {
			b = binary.NativeEndian.AppendUint32(b, uint32(w))
		} else {
			b = binary.NativeEndian.AppendUint64(b, w)
		}
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProbeMeasuresInjectedHost drives the probe with a fake clock whose
// wake-ups come late by known amounts and a fake /proc whose steal and
// load change between start and stop: every figure of the Harness follows.
func TestProbeMeasuresInjectedHost(t *testing.T) {
	ms := time.Millisecond
	lates := []time.Duration{10 * time.Microsecond, 3 * ms, 300, 2 * ms, 2*ms + 1, 50 * ms}
	for len(lates) < 200 {
		lates = append(lates, time.Duration(len(lates))*time.Microsecond)
	}
	host := newFakeHost(lates...)
	proc := t.TempDir()
	procDir(t, proc, 1000, "3.50", 0)
	start := host.Now()
	p := Start(context.Background(), Options{Now: host.Now, Sleep: host.Sleep, ProcRoot: proc})
	<-host.drained
	procDir(t, proc, 1150, "16.25", 0)
	host.advance(7 * ms)
	h := p.Stop()

	// The stalls are the wake-ups later than 2 ms, due one interval after
	// the previous wake-up.
	var want []evidence.HarnessStall
	due := start
	for _, l := range lates {
		due = due.Add(ms)
		if int64(l) > evidence.HarnessStallNs {
			want = append(want, evidence.HarnessStall{AtNs: due.UnixNano(), LateNs: int64(l)})
		}
		due = due.Add(l)
	}
	if len(want) != 3 || !reflect.DeepEqual(h.Probe.Stalls, want) {
		t.Errorf("stalls %+v, want %+v", h.Probe.Stalls, want)
	}
	sorted := slices.Sorted(slices.Values(lates))
	p99 := int64(sorted[int(math.Ceil(0.99*float64(len(sorted))))-1])
	if h.Probe.P99LateNs < p99 || h.Probe.P99LateNs > p99+p99/histSub {
		t.Errorf("p99 %d, want %d (+1/%d)", h.Probe.P99LateNs, p99, histSub)
	}
	wantH := evidence.Harness{Schema: evidence.HarnessSchema, StartNs: start.UnixNano(), EndNs: due.Add(7 * ms).UnixNano(), CPUs: runtime.NumCPU(),
		StealNs: 150 * 1e9 / DefaultUserHZ, Load1Start: 3.5, Load1End: 16.25,
		Probe: evidence.HarnessProbe{IntervalNs: int64(ms), Samples: len(lates), MaxLateNs: int64(50 * ms), P99LateNs: h.Probe.P99LateNs, Stalls: want}}
	if !reflect.DeepEqual(h, wantH) {
		t.Errorf("harness\n got %+v\nwant %+v", h, wantH)
	}
	if again := p.Stop(); !reflect.DeepEqual(again, h) {
		t.Errorf("second Stop %+v", again)
	}
}

// TestProbeUserHZ: the steal ticks are converted with AT_CLKTCK from
// /proc/self/auxv when it has one.
func TestProbeUserHZ(t *testing.T) {
	host := newFakeHost()
	proc := t.TempDir()
	procDir(t, proc, 40, "0", 250)
	p := Start(context.Background(), Options{Now: host.Now, Sleep: host.Sleep, ProcRoot: proc})
	<-host.drained
	procDir(t, proc, 290, "0", 250)
	if h := p.Stop(); h.StealNs != 250*int64(1e9)/250 || h.Probe.Samples != 0 || h.Probe.Stalls == nil {
		t.Fatalf("harness %+v, want steal 1 s, no samples, stalls []", h)
	}
}

// TestProbeUnknownProc: without /proc (off Linux), with a malformed one or
// with a steal counter that went down, the /proc figures are -1 and the
// wake-up probe is measured as always.
func TestProbeUnknownProc(t *testing.T) {
	cases := map[string]func(dir string){
		"absent": func(string) {},
		"malformed": func(dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu 1 2 3 4 5 6 7\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "loadavg"), []byte("NaN 1 1\n"), 0o644))
		},
	}
	for name, setup := range cases {
		host := newFakeHost(5*time.Millisecond, time.Microsecond)
		dir := filepath.Join(t.TempDir(), "proc")
		must(t, os.MkdirAll(dir, 0o755))
		setup(dir)
		p := Start(context.Background(), Options{Now: host.Now, Sleep: host.Sleep, ProcRoot: dir})
		<-host.drained
		h := p.Stop()
		if h.StealNs != -1 || h.Load1Start != -1 || h.Load1End != -1 || h.Probe.Samples != 2 || h.Probe.MaxLateNs != int64(5*time.Millisecond) || len(h.Probe.Stalls) != 1 {
			t.Errorf("%s: harness %+v", name, h)
		}
	}
	host := newFakeHost()
	proc := t.TempDir()
	procDir(t, proc, 500, "1", 0)
	p := Start(context.Background(), Options{Now: host.Now, Sleep: host.Sleep, ProcRoot: proc})
	<-host.drained
	procDir(t, proc, 499, "1", 0)
	if h := p.Stop(); h.StealNs != -1 {
		t.Errorf("steal went down: steal_ns %d, want -1", h.StealNs)
	}
}

// TestProbeKeepsLatestStalls: of more stalls than HarnessMaxStalls, the
// latest are kept (of equally late ones the earlier), sorted by due time.
func TestProbeKeepsLatestStalls(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var lates []time.Duration
	for range 500 {
		lates = append(lates, time.Duration(evidence.HarnessStallNs)+time.Duration(r.IntN(40))*time.Microsecond)
	}
	host := newFakeHost(lates...)
	start := host.Now()
	p := Start(context.Background(), Options{Now: host.Now, Sleep: host.Sleep, ProcRoot: t.TempDir()})
	<-host.drained
	h := p.Stop()
	type stall struct {
		i    int
		at   int64
		late int64
	}
	var all []stall
	due := start
	for i, l := range lates {
		due = due.Add(time.Millisecond)
		all = append(all, stall{i, due.UnixNano(), int64(l)})
		due = due.Add(l)
	}
	slices.SortStableFunc(all, func(a, b stall) int { return int(b.late - a.late) }) // latest first, earlier first among equals
	keep := all[:evidence.HarnessMaxStalls]
	slices.SortFunc(keep, func(a, b stall) int { return a.i - b.i })
	var want []evidence.HarnessStall
	for _, s := range keep {
		want = append(want, evidence.HarnessStall{AtNs: s.at, LateNs: s.late})
	}
	if !reflect.DeepEqual(h.Probe.Stalls, want) {
		t.Fatalf("stalls\n got %v\nwant %v", h.Probe.Stalls, want)
	}
}

// TestProbeStopsWithContext: a probe whose context ends stops sampling;
// Stop still returns its window. With the real clock and sleep, only what
// holds whatever the scheduling is checked.
func TestProbeStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := Start(ctx, Options{ProcRoot: t.TempDir()})
	cancel()
	<-p.done
	h := p.Stop()
	if h.Schema != evidence.HarnessSchema || h.EndNs < h.StartNs || h.Probe.IntervalNs != int64(DefaultInterval) || h.Probe.Stalls == nil ||
		h.CPUs != runtime.NumCPU() || h.StealNs != -1 {
		t.Fatalf("harness %+v", h)
	}
}

// TestHistogramBuckets: every value falls in a bucket whose upper bound is
// at least the value and at most 1/histSub above it; buckets are ordered
// like the values; values below histExact are exact.
func TestHistogramBuckets(t *testing.T) {
	vals := []uint64{0, 1, 255, 256, 257, 511, 512, 1e6, 2e6, 1<<40 + 12345, math.MaxInt64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		vals = append(vals, r.Uint64N(math.MaxInt64)>>r.IntN(63))
	}
	slices.Sort(vals)
	prev := -1
	for _, v := range vals {
		b := bucketOf(v)
		if b < prev || b >= histBuckets {
			t.Fatalf("value %d: bucket %d after %d (of %d)", v, b, prev, histBuckets)
		}
		prev = b
		up := bucketMax(b)
		if up < v || up-v > v/histSub || (v < histExact && up != v) {
			t.Fatalf("value %d: bucket %d upper bound %d", v, b, up)
		}
		if b > 0 && bucketMax(b-1) >= v {
			t.Fatalf("value %d: the bucket below, %d, reaches %d", v, b-1, bucketMax(b-1))
		}
	}
	var h histogram
	for i := range 100 {
		h.add(int64(i + 1)) // 1..100
	}
	if q := h.quantile(0.99); q != 99 {
		t.Errorf("p99 of 1..100 = %d, want 99", q)
	}
	if q := (&histogram{}).quantile(0.99); q != 0 {
		t.Errorf("p99 of nothing = %d", q)
	}
}

// TestParseProc reads the /proc formats of proc_stat(5) and proc_loadavg(5).
func TestParseProc(t *testing.T) {
	steal, err := ParseStatSteal([]byte("cpu0 1 1 1 1 1 1 1 99 0 0\ncpu  10 2 3 400 5 6 7 81234 0 0\n"))
	if err != nil || steal != 81234 {
		t.Errorf("steal %d %v, want 81234 from the aggregate line", steal, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 4 5 6 7\n", "cpu 1 2 3 4 5 6 -7 8\n", "cpu 1 2 3 4 5 6 7 x\n"} {
		if _, err := ParseStatSteal([]byte(bad)); err == nil {
			t.Errorf("ParseStatSteal(%q) accepted", bad)
		}
	}
	if v, err := ParseLoadavg([]byte("31.07 20.01 9.50 18/611 4242\n")); err != nil || v != 31.07 {
		t.Errorf("load %v %v", v, err)
	}
	for _, bad := range []string{"", " \n", "-1 0 0", "Inf 0 0", "x 1 1"} {
		if _, err := ParseLoadavg([]byte(bad)); err == nil {
			t.Errorf("ParseLoadavg(%q) accepted", bad)
		}
	}
	if hz, ok := ParseAuxvClockTicks(auxv(6, 4096, atClkTck, 100, 0, 0)); !ok || hz != 100 {
		t.Errorf("auxv hz %d %v", hz, ok)
	}
	for _, bad := range [][]byte{nil, auxv(6, 4096, 0, 0, atClkTck, 100), auxv(atClkTck, 0), auxv(atClkTck)} {
		if hz, ok := ParseAuxvClockTicks(bad); ok {
			t.Errorf("auxv %v: hz %d", bad, hz)
		}
	}
}

// The real /proc, where there is one, parses (the probe's figures are then
// known on this host).
func TestParseRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	if s := readSteal(DefaultProcRoot); !s.ok || s.hz <= 0 {
		t.Errorf("/proc/stat steal: %+v", s)
	}
	if l := readLoad1(DefaultProcRoot); l < 0 {
		t.Errorf("/proc/loadavg: %v", l)
	}
}
