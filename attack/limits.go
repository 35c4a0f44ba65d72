package attack

import (
	"fmt"
	"math/bits"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// MaxIDs is the most request IDs one attack sends, all its flows together:
// 10,000,000. An attack keeps every ID and its outcome in memory until the
// evidence is written (about 65 bytes per ID at 1 M IDs, README "What
// rlbench itself costs"), so the bound keeps an attack under a gigabyte;
// send more as several attacks (a plan's repeat or steps, or --shard). Run
// refuses more; the CLI and plan loader check counts with CheckIDs before
// they generate any ID.
const MaxIDs = 10_000_000

// CheckIDs returns an error when n IDs are more than MaxIDs ("WHAT: more
// than 10000000 ids, the most one attack sends"), nil otherwise. what names
// the count in the message ("--ids 20000000", "attack.ids").
func CheckIDs(what string, n int) error {
	if n > MaxIDs {
		return fmt.Errorf("%s: more than %d ids, the most one attack sends", what, MaxIDs)
	}
	return nil
}

// DurationIDs is vegeta's request count for rate r over d (its -duration):
// freq × d / per, rounded down, computed without overflow; 0 when r or d
// is not positive. A count above MaxIDs is returned as MaxIDs+1 ("more
// than MaxIDs"), so the result always fits an int and CheckIDs refuses it.
func DurationIDs(r vegeta.Rate, d time.Duration) int {
	if r.Freq <= 0 || r.Per <= 0 || d <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(r.Freq), uint64(d))
	if hi >= uint64(r.Per) { // the quotient would not fit 64 bits
		return MaxIDs + 1
	}
	q, _ := bits.Div64(hi, lo, uint64(r.Per))
	if q > MaxIDs {
		return MaxIDs + 1
	}
	return int(q)
}
