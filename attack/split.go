package attack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Target is one endpoint an attack sends requests to.
type Target struct {
	// Name identifies the target in evidence (evidence.Request.Target) and in
	// evidence.AttackSummary.CodesByTarget, e.g. "envoy-a". Empty means the URL's host:port.
	// Names must be unique within one attack.
	Name string `json:"name"`
	// URL is the base URL scheme://host[:port], optionally with a path prefix;
	// Options.Path is appended to it verbatim. It must not carry a query or
	// fragment (the fragment is used internally, see Run). A
	// user:password@ in it is sent as basic auth (an Authorization header,
	// unless Options.Header has one), as net/http's client does, and is
	// recorded redacted (evidence.RedactURL): evidence never holds the
	// password.
	URL string `json:"url"`
}

// SplitMode says how the IDs of an attack are distributed over its targets.
type SplitMode string

// Split modes accepted by ParseSplit.
const (
	// SplitEven assigns ID i (0-based, in ID order) to target i mod len(targets).
	SplitEven SplitMode = "even"
	// SplitCounts assigns the first Values[0] IDs to target 0, the next
	// Values[1] to target 1, and so on; the counts must sum to the number of IDs.
	SplitCounts SplitMode = "counts"
	// SplitWeights gives target k a share Values[k]/sum(Values) of the IDs,
	// rounded by the largest-remainder method so that the counts are exact and
	// sum to the number of IDs, then shuffles which ID goes where with a seeded
	// PCG generator (deterministic for a given seed, ID count and weights).
	SplitWeights SplitMode = "weights"
	// SplitSticky assigns every ID to the first target.
	SplitSticky SplitMode = "sticky"
)

// Split is a parsed split specification: a mode and, for counts and
// weights, one non-negative integer per target.
// Its text form (String, MarshalText) is the ParseSplit syntax.
type Split struct {
	Mode   SplitMode `json:"mode"`
	Values []int     `json:"values,omitempty"`
}

// ParseSplit parses "even", "sticky", "counts=N,N,..." or "weights=W,W,...".
// The empty string means "even". Values must be non-negative integers, at
// least one must be positive; their number is checked against the targets by
// Assign. Errors quote the input.
func ParseSplit(s string) (Split, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", string(SplitEven):
		return Split{Mode: SplitEven}, nil
	case string(SplitSticky):
		return Split{Mode: SplitSticky}, nil
	}
	mode, list, ok := strings.Cut(s, "=")
	if !ok || (SplitMode(mode) != SplitCounts && SplitMode(mode) != SplitWeights) {
		return Split{}, fmt.Errorf("split %q: want even, sticky, counts=N,N,... or weights=W,W,...", s)
	}
	var vals []int
	sum := 0
	for i, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 {
			return Split{}, fmt.Errorf("split %q: value %d %q is not a non-negative integer", s, i+1, f)
		}
		if sum > (1<<31)-v {
			return Split{}, fmt.Errorf("split %q: values too large", s)
		}
		sum += v
		vals = append(vals, v)
	}
	if sum == 0 {
		return Split{}, fmt.Errorf("split %q: values sum to 0", s)
	}
	return Split{Mode: SplitMode(mode), Values: vals}, nil
}

// String renders s in ParseSplit syntax, e.g. "weights=60,30,10".
func (s Split) String() string {
	switch s.Mode {
	case SplitCounts, SplitWeights:
		parts := make([]string, len(s.Values))
		for i, v := range s.Values {
			parts[i] = strconv.Itoa(v)
		}
		return string(s.Mode) + "=" + strings.Join(parts, ",")
	case "":
		return string(SplitEven)
	}
	return string(s.Mode)
}

// MarshalText encodes s as its String form.
func (s Split) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses b with ParseSplit.
func (s *Split) UnmarshalText(b []byte) error {
	v, err := ParseSplit(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Assignment says which target one ID is sent to.
type Assignment struct {
	// Index is the position of ID in the ids slice given to Assign (0-based).
	Index int
	ID    string
	// Target is the index into the targets slice given to Assign.
	Target int
}

// Assign distributes ids over targets according to split and returns one
// Assignment per ID, in ID order (the order Run sends them in). It is pure:
// the same arguments always give the same result. seed only matters for
// SplitWeights. Errors: no targets, no IDs, a Values count that differs
// from the number of targets, counts that do not sum to len(ids), an
// unknown mode.
func Assign(ids []string, targets []Target, split Split, seed int64) ([]Assignment, error) {
	to, err := AssignTargets(len(ids), targets, split, seed)
	if err != nil {
		return nil, err
	}
	out := make([]Assignment, len(ids))
	for i, id := range ids {
		out[i] = Assignment{Index: i, ID: id, Target: int(to[i])}
	}
	return out, nil
}

// AssignTargets is Assign for n IDs without their names: the index in
// targets of each ID, in ID order (4 bytes per ID), with Assign's errors.
func AssignTargets(n int, targets []Target, split Split, seed int64) ([]int32, error) {
	if n == 0 && len(targets) > 0 {
		return nil, errors.New("assign: no ids")
	}
	return assignTargets(n, len(targets), split, seed)
}

// assignTargets is Assign for n IDs and nt targets, returning the target
// index per ID (4 bytes per ID: Run keeps only this).
func assignTargets(n, nt int, split Split, seed int64) ([]int32, error) {
	if nt == 0 {
		return nil, errors.New("assign: no targets")
	}
	if n == 0 {
		return nil, errors.New("assign: no ids")
	}
	if err := checkSplit(split, n, nt); err != nil {
		return nil, err
	}
	to := make([]int32, n)
	switch split.Mode {
	case SplitEven, "":
		for i := range to {
			to[i] = int32(i % nt)
		}
	case SplitSticky:
		// all zero
	case SplitCounts:
		i := 0
		for k, v := range split.Values {
			for j := 0; j < v; j++ {
				to[i] = int32(k)
				i++
			}
		}
	case SplitWeights:
		counts, err := weightCounts(split.Values, n)
		if err != nil {
			return nil, fmt.Errorf("assign: split %s: %w", split, err)
		}
		i := 0
		for k, c := range counts {
			for j := 0; j < c; j++ {
				to[i] = int32(k)
				i++
			}
		}
		shuffle(to, seed)
	}
	return to, nil
}

// CheckSplit reports the error Assign would return for ids IDs and targets
// targets under split (values that do not match the targets, counts that
// do not sum to the IDs, an unknown mode), without assigning anything: a
// plan checks its attacks with it when loaded.
func CheckSplit(split Split, ids, targets int) error {
	if targets == 0 {
		return errors.New("assign: no targets")
	}
	if ids == 0 {
		return errors.New("assign: no ids")
	}
	return checkSplit(split, ids, targets)
}

func checkSplit(split Split, n, nt int) error {
	switch split.Mode {
	case SplitEven, "", SplitSticky:
		return nil
	case SplitCounts, SplitWeights:
		kind := "counts"
		if split.Mode == SplitWeights {
			kind = "weights"
		}
		if len(split.Values) != nt {
			return fmt.Errorf("assign: split %s has %d %s for %d targets", split, len(split.Values), kind, nt)
		}
		sum := 0
		for _, v := range split.Values {
			if v < 0 {
				return fmt.Errorf("assign: split %s has a negative value", split)
			}
			sum += v
		}
		if split.Mode == SplitCounts && sum != n {
			return fmt.Errorf("assign: split %s sums to %d but there are %d ids", split, sum, n)
		}
		if sum == 0 {
			return fmt.Errorf("assign: split %s: weights sum to 0", split)
		}
		return nil
	}
	return fmt.Errorf("assign: unknown split mode %q", split.Mode)
}

// Counts returns how many assignments go to each of nTargets targets.
func Counts(as []Assignment, nTargets int) []int {
	c := make([]int, nTargets)
	for _, a := range as {
		if a.Target >= 0 && a.Target < nTargets {
			c[a.Target]++
		}
	}
	return c
}

// weightCounts applies the largest-remainder (Hamilton) method: each target
// gets floor(n*w/W), and the leftover IDs go one each to the targets with the
// largest fractional remainders, ties broken by lower index.
func weightCounts(w []int, n int) ([]int, error) {
	total := int64(0)
	for _, v := range w {
		if v < 0 {
			return nil, errors.New("negative weight")
		}
		total += int64(v)
	}
	if total == 0 {
		return nil, errors.New("weights sum to 0")
	}
	counts := make([]int, len(w))
	rem := make([]int64, len(w))
	given := 0
	for k, v := range w {
		q := int64(n) * int64(v)
		counts[k] = int(q / total)
		rem[k] = q % total
		given += counts[k]
	}
	order := make([]int, len(w))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for i := 0; given < n; i++ {
		counts[order[i%len(order)]]++
		given++
	}
	return counts, nil
}

// shuffle is a Fisher-Yates shuffle driven by PCG(seed, pcgStream). The
// bounded draw is implemented here (rejection sampling on Uint64) so the
// permutation does not depend on math/rand's helper algorithms.
func shuffle[T any](a []T, seed int64) {
	r := rand.NewPCG(uint64(seed), pcgStream)
	for i := len(a) - 1; i > 0; i-- {
		j := int(boundedDraw(r, uint64(i+1)))
		a[i], a[j] = a[j], a[i]
	}
}

// pcgStream is the fixed second PCG seed word ("rlbench" in ASCII).
const pcgStream = 0x726c62656e6368

func boundedDraw(r *rand.PCG, n uint64) uint64 {
	limit := ^uint64(0) - (^uint64(0)%n+1)%n // largest multiple of n, minus 1
	for {
		v := r.Uint64()
		if v <= limit {
			return v % n
		}
	}
}

// IDs returns n IDs "<prefix>-<k>" for k = 1..n, k zero-padded to the number
// of decimal digits of n (IDs(100, "r") gives r-001 ... r-100). An empty
// prefix gives the bare numbers. n <= 0 or n > MaxIDs gives nil (check n
// with CheckIDs first for the error).
func IDs(n int, prefix string) []string {
	if n <= 0 || n > MaxIDs {
		return nil
	}
	f := NewIDFormat(n, prefix)
	// One backing string for all IDs: 16 bytes of string header plus the
	// ID's own bytes each, instead of one allocation per ID.
	step := f.Len()
	buf := make([]byte, 0, n*step)
	for k := 1; k <= n; k++ {
		buf = f.Append(buf, k)
	}
	all := string(buf)
	out := make([]string, n)
	for k := range out {
		out[k] = all[k*step : (k+1)*step]
	}
	return out
}

// IDFormat names the IDs of IDs(n, prefix) one at a time, for a caller
// that does not keep them all (the simulator sends 10 M).
type IDFormat struct {
	head  string // prefix + "-", or ""
	width int    // decimal digits of n
}

// NewIDFormat is the format of IDs(n, prefix).
func NewIDFormat(n int, prefix string) IDFormat {
	f := IDFormat{width: len(strconv.Itoa(n))}
	if prefix != "" {
		f.head = prefix + "-"
	}
	return f
}

// Len is the length in bytes of every ID of the format.
func (f IDFormat) Len() int { return len(f.head) + f.width }

// Append appends the k-th ID (1-based, k <= n) to b: IDs(n, prefix)[k-1].
func (f IDFormat) Append(b []byte, k int) []byte {
	b = append(b, f.head...)
	for pad := f.width - digits(k); pad > 0; pad-- {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(k), 10)
}

func digits(k int) int {
	d := 1
	for ; k >= 10; k /= 10 {
		d++
	}
	return d
}

// ReadIDs reads one ID per line from r. Surrounding spaces are trimmed;
// blank lines and lines starting with '#' are skipped. Errors name the
// source (name) and the 1-based line: a duplicate ID (with the line of its
// first occurrence), an ID that is not a valid HTTP header value (control
// characters) or longer than 1024 bytes, more than MaxIDs IDs, a read
// error; a source without any ID is an error too.
func ReadIDs(r io.Reader, name string) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := map[string]int{}
	var ids []string
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if err := checkID(s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if first, dup := seen[s]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate id %q (first on line %d)", name, line, s, first)
		}
		if len(ids) == MaxIDs {
			return nil, fmt.Errorf("%s:%d: %w", name, line, CheckIDs("ids", MaxIDs+1))
		}
		seen[s] = line
		ids = append(ids, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: no ids", name)
	}
	return ids, nil
}

// checkID reports whether id can travel as an HTTP header value unchanged.
func checkID(id string) error {
	if id == "" {
		return errors.New("empty id")
	}
	if len(id) > 1024 {
		return fmt.Errorf("id of %d bytes is longer than 1024", len(id))
	}
	if id != strings.TrimSpace(id) {
		return fmt.Errorf("id %q has surrounding white space", id)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("id %q contains control character 0x%02x", id, c)
		}
	}
	// Evidence is JSON, whose strings are UTF-8: an invalid byte would be
	// recorded as U+FFFD, and two IDs differing only there would collide.
	if !utf8.ValidString(id) {
		return fmt.Errorf("id %q is not valid UTF-8", id)
	}
	return nil
}
