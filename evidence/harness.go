package evidence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
)

// Harness is what rlbench measured of its own host while a scenario ran
// (harness.json, HarnessSchema; written by the runner, internal/hostprobe):
// how much CPU time the hypervisor took from the host (steal), how loaded it
// was, and how late a goroutine of rlbench's own was woken. Analyze reads it
// to tell a stall of the harness from a fault of the system under test.
// Times are unix ns, durations ns.
type Harness struct {
	// Schema is HarnessSchema.
	Schema string `json:"schema"`
	// StartNs and EndNs bound the sampling window, unix ns: from before the
	// scenario's first step (before its "before" snapshots) to after its
	// last (after its "after" snapshots).
	StartNs int64 `json:"start_ns"`
	EndNs   int64 `json:"end_ns"`
	// CPUs is runtime.NumCPU of the rlbench process.
	CPUs int `json:"cpus"`
	// StealNs is the growth of the steal time of /proc/stat's aggregate
	// "cpu" line over the window (the 8th value, summed over all CPUs; see
	// proc_stat(5)), converted from USER_HZ ticks to ns: StealNs / (CPUs ·
	// (EndNs - StartNs)) is the share of the host's CPU time a hypervisor
	// gave to others. -1 when unknown (no /proc/stat, as off Linux, a
	// kernel without the field, or a counter that went down: a CPU taken
	// offline).
	StealNs int64 `json:"steal_ns"`
	// Load1Start and Load1End are the 1-minute load average, the first
	// field of /proc/loadavg (proc_loadavg(5)), at the window's start and
	// end; -1 when unknown.
	Load1Start float64 `json:"load1_start"`
	Load1End   float64 `json:"load1_end"`
	// Probe is the wake-up probe's measurement.
	Probe HarnessProbe `json:"probe"`
}

// HarnessProbe is the measurement of a goroutine that asks to wake every
// IntervalNs (1 ms) and records how late each wake-up was: the host's (and
// the Go runtime's) scheduling stalls as rlbench's own parts felt them.
type HarnessProbe struct {
	// IntervalNs is the sleep the probe asked for each time, ns.
	IntervalNs int64 `json:"interval_ns"`
	// Samples counts the wake-ups measured.
	Samples int `json:"samples"`
	// MaxLateNs is the latest wake-up's lateness, ns (0 without samples).
	MaxLateNs int64 `json:"max_late_ns"`
	// P99LateNs is the 99th percentile of the wake-ups' lateness, ns:
	// exact below 256 ns, above rounded up to its histogram bucket's upper
	// bound (at most 1/128 above the value).
	P99LateNs int64 `json:"p99_late_ns"`
	// Stalls are the wake-ups later than HarnessStallNs, at most
	// HarnessMaxStalls of them (the latest kept, earlier ones first among
	// equals), sorted by AtNs; empty, never null, without one.
	Stalls []HarnessStall `json:"stalls"`
}

// HarnessStall is one late wake-up of the probe.
type HarnessStall struct {
	// AtNs is when the wake-up was due, unix ns.
	AtNs int64 `json:"at_ns"`
	// LateNs is how late it came, ns.
	LateNs int64 `json:"late_ns"`
}

// HarnessStallNs is the lateness above which a probe wake-up is a stall
// (HarnessProbe.Stalls), and HarnessMaxStalls the most stalls kept.
const (
	HarnessStallNs   = int64(2e6)
	HarnessMaxStalls = 64
)

// readHarness reads harness.json into s.Harness: an absent file (evidence
// of a release before it) leaves it nil, an unreadable or malformed one is a
// Problem of HarnessFile naming the file (and line).
func readHarness(ctx context.Context, d Dir, s *ScenarioEvidence) {
	p := d.Harness()
	b, err := boundedio.ReadRegular(ctx, p, MaxDocumentBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var h Harness
	if err == nil {
		if err = json.Unmarshal(b, &h); err != nil {
			err = JSONError(b, err)
		} else if h.Schema != HarnessSchema {
			err = fmt.Errorf("not a harness record (want schema %q)", HarnessSchema)
		} else {
			err = h.validate()
		}
	}
	if err != nil {
		s.Problems = append(s.Problems, Problem{File: HarnessFile, Msg: fmt.Sprintf("%s: %v", p, err)})
		return
	}
	s.Harness = &h
}

// validate checks what a reader relies on: a window that ends after it
// starts, a positive CPU count, steal and load unknown (-1) or not
// negative, probe figures not negative with p99 <= max, and at most
// HarnessMaxStalls stalls, each no later than the maximum.
func (h *Harness) validate() error {
	p := &h.Probe
	switch {
	case h.StartNs <= 0 || h.EndNs < h.StartNs:
		return fmt.Errorf("start_ns %d and end_ns %d are not a window of unix ns times", h.StartNs, h.EndNs)
	case h.CPUs <= 0:
		return fmt.Errorf("cpus %d: want at least 1", h.CPUs)
	case h.StealNs < -1:
		return fmt.Errorf("steal_ns %d: want -1 (unknown) or more", h.StealNs)
	case h.Load1Start < -1 || h.Load1End < -1:
		return fmt.Errorf("load1_start %v, load1_end %v: want -1 (unknown) or more", h.Load1Start, h.Load1End)
	case p.IntervalNs < 0 || p.Samples < 0 || p.MaxLateNs < 0 || p.P99LateNs < 0 || p.P99LateNs > p.MaxLateNs:
		return fmt.Errorf("probe: interval_ns %d, samples %d, p99_late_ns %d, max_late_ns %d: want none negative and p99 <= max",
			p.IntervalNs, p.Samples, p.P99LateNs, p.MaxLateNs)
	case len(p.Stalls) > HarnessMaxStalls:
		return fmt.Errorf("probe: %d stalls, at most %d are kept", len(p.Stalls), HarnessMaxStalls)
	}
	for k, st := range p.Stalls {
		if st.AtNs <= 0 || st.LateNs < 0 || st.LateNs > p.MaxLateNs {
			return fmt.Errorf("probe: stalls[%d]: at_ns %d, late_ns %d: want a unix ns time and 0 <= late_ns <= max_late_ns %d", k, st.AtNs, st.LateNs, p.MaxLateNs)
		}
	}
	return nil
}
