package evidence

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// ExpectClassNames are the names Expectation.Classes accepts: every class
// name (ClassNames), "sent" (the requests sent) and "passed" (those that
// passed every limiter), as analyze.Classes.Get counts them.
func ExpectClassNames() []string { return append(ClassNames(), "sent", "passed") }

// IsExpectClass reports whether name is one of ExpectClassNames.
func IsExpectClass(name string) bool { return slices.Contains(ExpectClassNames(), name) }

// CheckCounts checks the expectation's count ranges: admitted (unless it
// is "model"), shadow,
// classes (known names, ExpectClassNames) and limit_req_status must have
// 0 <= min (min <= max holds after decoding); each latency threshold
// names a class and bounds a statistic (LatencyThreshold.Validate) and
// each ratio names a class of RatioNames; landed_within is 0 (unset) ..
// MaxPeakWindow. It returns the first bad
// field's path ("expect.classes.local429") and the error, naming it.
// Plans (at load, exit 2) and scenario.json (NOT_RUN) check with it.
func (e *Expectation) CheckCounts() (path string, err error) {
	neg := func(p string, r Range) (string, error) {
		return p, fmt.Errorf("%s %s: want 0 <= min <= max", p, r)
	}
	if a := e.Admitted; a != nil && !a.Model && a.Range.Min < 0 {
		return neg("expect.admitted", a.Range)
	}
	if r := e.Shadow; r != nil && r.Min < 0 {
		return neg("expect.shadow", *r)
	}
	for _, k := range sortedKeys(e.Classes) {
		p := "expect.classes." + k
		if !IsExpectClass(k) {
			return p, fmt.Errorf("%s: unknown class %q; want one of %s", p, k, strings.Join(ExpectClassNames(), ", "))
		}
		if r := e.Classes[k]; r.Min < 0 {
			return neg(p, r)
		}
	}
	for _, k := range sortedKeys(e.LimitReqStatus) {
		if r := e.LimitReqStatus[k]; r.Min < 0 {
			return neg("expect.limit_req_status."+k, r)
		}
	}
	for i := range e.Latency {
		p := fmt.Sprintf("expect.latency[%d]", i)
		if err := e.Latency[i].Validate(); err != nil {
			return p + ".class", fmt.Errorf("%s: %w", p, err)
		}
	}
	if w := time.Duration(e.LandedWithin); w < 0 || w > MaxPeakWindow {
		return "expect.landed_within", fmt.Errorf("expect.landed_within %v: want a width of 0 .. %v", w, MaxPeakWindow)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Ratios)) {
		if !slices.Contains(RatioNames(), k) {
			p := "expect.ratios." + k
			return p, fmt.Errorf("%s: unknown class %q; want one of %s", p, k, strings.Join(RatioNames(), ", "))
		}
	}
	return "", nil
}

func sortedKeys(m map[string]Range) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
