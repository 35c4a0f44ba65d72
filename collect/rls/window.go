package rls

// Placement says where a log line with a coarse timestamp lies relative to a
// time window.
type Placement int

const (
	// Before: the line's whole time interval ends before the window begins.
	Before Placement = iota
	// Inside: the line's whole time interval lies inside the window.
	Inside
	// Straddles: the line's time interval overlaps the window and extends
	// beyond it; given the resolution the line may be inside.
	Straddles
	// After: the line's whole time interval starts after the window ends.
	After
)

// String returns "before", "inside", "straddles" or "after".
func (p Placement) String() string {
	switch p {
	case Before:
		return "before"
	case Inside:
		return "inside"
	case Straddles:
		return "straddles"
	case After:
		return "after"
	}
	return "unknown"
}

// Place locates an event logged with timestamp timeNs at resolution resNs
// (logrus truncates, so the true time lies in [timeNs, timeNs+resNs)) against
// the closed window [beginNs, endNs], all unix ns. resNs <= 0 counts as 1.
func Place(timeNs, resNs, beginNs, endNs int64) Placement {
	if resNs <= 0 {
		resNs = 1
	}
	lo, hi := timeNs, timeNs+resNs-1 // inclusive interval
	switch {
	case hi < beginNs:
		return Before
	case lo > endNs:
		return After
	case lo >= beginNs && hi <= endNs:
		return Inside
	default:
		return Straddles
	}
}

// MatchErrorsToWindow counts the error lines consistent with the window
// [beginNs, endNs] (unix ns, e.g. a Redis outage from faults.jsonl) given each
// line's time resolution: inside counts lines whose possible time interval
// overlaps the window (Inside or Straddles), outside those whose interval is
// entirely before or after it. A text-log error at second S can therefore
// match a window that begins at S+0.4 s.
func MatchErrorsToWindow(errs []ErrorLine, beginNs, endNs int64) (inside, outside int) {
	for _, e := range errs {
		switch Place(e.TimeNs, e.TimeResolutionNs, beginNs, endNs) {
		case Inside, Straddles:
			inside++
		default:
			outside++
		}
	}
	return inside, outside
}
