package envoy

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// parseText parses Envoy's text /stats rendering (stats_render.cc
// StatsTextRender) into snap. In lenient mode invalid lines are returned
// instead of failing.
func parseText(r io.Reader, name string, snap *envoyrec.Snapshot, lenient bool) ([]*envoyrec.LineError, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var skipped []*envoyrec.LineError
	// pending detailed histogram ("name:" then indented lines).
	var detName string
	var det *envoyrec.Histogram
	detLine := 0
	flush := func() {
		if det != nil {
			snap.Histograms[detName] = *det
			det, detName = nil, ""
		}
	}
	fail := func(e *envoyrec.LineError) error {
		if lenient {
			skipped = append(skipped, e)
			return nil
		}
		return e
	}
	lineNo := 0
	for sc.Scan() {
		lineNo++
		raw := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if strings.HasPrefix(raw, " ") || strings.HasPrefix(raw, "\t") {
			// Continuation of a detailed histogram.
			if det == nil {
				if err := fail(lineErr(name, lineNo, "indented line outside a detailed histogram: %q", clip(raw))); err != nil {
					return nil, err
				}
				continue
			}
			if err := parseDetailLine(strings.TrimSpace(raw), det); err != nil {
				if err := fail(lineErr(name, lineNo, "histogram %q: %v", detName, err)); err != nil {
					return nil, err
				}
			}
			continue
		}
		flush()
		if strings.HasPrefix(raw, "#") {
			continue
		}
		if stat, ok := strings.CutSuffix(raw, ":"); ok && !strings.Contains(stat, ": ") && validStatName(stat) {
			detName, det, detLine = stat, &envoyrec.Histogram{}, lineNo
			continue
		}
		stat, value, ok := strings.Cut(raw, ": ")
		if !ok {
			if err := fail(lineErr(name, lineNo, "not a stat line (want \"name: value\"): %q", clip(raw))); err != nil {
				return nil, err
			}
			continue
		}
		if !validStatName(stat) {
			if err := fail(lineErr(name, lineNo, "invalid stat name %q", clip(stat))); err != nil {
				return nil, err
			}
			continue
		}
		if err := addTextValue(snap, stat, value); err != nil {
			if err := fail(lineErr(name, lineNo, "stat %q: %v", stat, err)); err != nil {
				return nil, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, lineErr(name, lineNo+1, "read: %v", err)
	}
	if det != nil && det.Totals == nil && det.Intervals == nil && det.Quantiles == nil {
		if err := fail(lineErr(name, detLine, "detailed histogram %q has no totals/intervals/summary lines", detName)); err != nil {
			return nil, err
		}
		det = nil
	}
	flush()
	return skipped, nil
}

// validStatName reports whether s can be an Envoy stat name: non-empty, no
// whitespace, no control characters, and no '"'.
func validStatName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == 0x7f {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

func addTextValue(snap *envoyrec.Snapshot, stat, value string) error {
	if _, dup := snap.Values[stat]; dup {
		return fmt.Errorf("duplicate stat")
	}
	switch {
	case value == "":
		return fmt.Errorf("empty value")
	case value[0] >= '0' && value[0] <= '9' && isDigits(value):
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return fmt.Errorf("value %q: %v", value, err)
		}
		snap.Values[stat] = v
	case value[0] == '"':
		if len(value) < 2 || value[len(value)-1] != '"' {
			return fmt.Errorf("unterminated text readout %q", clip(value))
		}
		// Envoy writes the readout between quotes without escaping.
		snap.TextReadouts[stat] = value[1 : len(value)-1]
	case value == "No recorded values":
		snap.Histograms[stat] = envoyrec.Histogram{NoValues: true}
	case value[0] == 'P':
		q, err := parseQuantiles(value)
		if err != nil {
			return err
		}
		snap.Histograms[stat] = envoyrec.Histogram{Quantiles: q}
	case value[0] == 'B':
		b, err := parseBuckets(value)
		if err != nil {
			return err
		}
		snap.Histograms[stat] = envoyrec.Histogram{Buckets: b}
	default:
		return fmt.Errorf("unrecognised value %q (want integer, \"text\", histogram or No recorded values)", clip(value))
	}
	return nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// reHistTerm matches one "P25(1.5,nan)" or "B0.5(3,7)" term.
var reHistTerm = regexp.MustCompile(`^([PB])([0-9.eE+-]+)\(([^,()]+),([^,()]+)\)$`)

func parseQuantiles(value string) ([]envoyrec.Quantile, error) {
	var out []envoyrec.Quantile
	for _, term := range strings.Fields(value) {
		m := reHistTerm.FindStringSubmatch(term)
		if m == nil || m[1] != "P" {
			return nil, fmt.Errorf("bad quantile term %q (want P<pct>(<interval>,<cumulative>))", clip(term))
		}
		pct, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("bad quantile %q: %v", term, err)
		}
		iv, err := parseNaNFloat(m[3])
		if err != nil {
			return nil, fmt.Errorf("term %q interval: %v", term, err)
		}
		cu, err := parseNaNFloat(m[4])
		if err != nil {
			return nil, fmt.Errorf("term %q cumulative: %v", term, err)
		}
		out = append(out, envoyrec.Quantile{Percent: pct, Interval: iv, Cumulative: cu})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty quantile summary")
	}
	return out, nil
}

func parseBuckets(value string) ([]envoyrec.Bucket, error) {
	var out []envoyrec.Bucket
	for _, term := range strings.Fields(value) {
		m := reHistTerm.FindStringSubmatch(term)
		if m == nil || m[1] != "B" {
			return nil, fmt.Errorf("bad bucket term %q (want B<upper>(<interval>,<cumulative>))", clip(term))
		}
		ub, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, fmt.Errorf("bad bucket bound %q: %v", term, err)
		}
		iv, err := strconv.ParseUint(m[3], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("term %q interval count: %v", term, err)
		}
		cu, err := strconv.ParseUint(m[4], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("term %q cumulative count: %v", term, err)
		}
		out = append(out, envoyrec.Bucket{UpperBound: ub, Interval: &iv, Cumulative: cu})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty bucket list")
	}
	return out, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// parseNaNFloat parses a float; "nan" (any case) gives nil.
func parseNaNFloat(s string) (*float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, err
	}
	if math.IsNaN(f) {
		return nil, nil
	}
	if math.IsInf(f, 0) {
		return nil, fmt.Errorf("infinite value %q", s)
	}
	return &f, nil
}

// parseDetailLine parses "totals=...", "intervals=..." or "summary=..." of a
// detailed histogram (StatsTextRender::addDetail: "%.15g,%.15g:%lu" joined by ", ").
func parseDetailLine(line string, h *envoyrec.Histogram) error {
	key, val, ok := strings.Cut(line, "=")
	if !ok {
		return fmt.Errorf("want key=value, got %q", clip(line))
	}
	switch key {
	case "totals", "intervals":
		var bs []envoyrec.DetailBucket
		if strings.TrimSpace(val) != "" {
			for _, part := range strings.Split(val, ", ") {
				b, err := parseDetailBucket(strings.TrimSpace(part))
				if err != nil {
					return fmt.Errorf("%s: %v", key, err)
				}
				bs = append(bs, b)
			}
		}
		if bs == nil {
			bs = []envoyrec.DetailBucket{}
		}
		if key == "totals" {
			h.Totals = bs
		} else {
			h.Intervals = bs
		}
	case "summary":
		if strings.TrimSpace(val) == "No recorded values" {
			h.NoValues = true
			return nil
		}
		q, err := parseQuantiles(val)
		if err != nil {
			return fmt.Errorf("summary: %v", err)
		}
		h.Quantiles = q
	default:
		return fmt.Errorf("unknown detail key %q", key)
	}
	return nil
}

func parseDetailBucket(s string) (envoyrec.DetailBucket, error) {
	bounds, count, ok := strings.Cut(s, ":")
	if !ok {
		return envoyrec.DetailBucket{}, fmt.Errorf("bucket %q: want lower,width:count", s)
	}
	lo, wd, ok := strings.Cut(bounds, ",")
	if !ok {
		return envoyrec.DetailBucket{}, fmt.Errorf("bucket %q: want lower,width:count", s)
	}
	l, err1 := strconv.ParseFloat(lo, 64)
	w, err2 := strconv.ParseFloat(wd, 64)
	c, err3 := strconv.ParseUint(count, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || !finite(l) || !finite(w) {
		return envoyrec.DetailBucket{}, fmt.Errorf("bucket %q: want lower,width:count with numbers", s)
	}
	return envoyrec.DetailBucket{LowerBound: l, Width: w, Count: c}, nil
}
