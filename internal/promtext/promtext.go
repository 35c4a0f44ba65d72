// Package promtext holds what rlbench's two Prometheus readers (collect/envoy
// for Envoy's /stats/prometheus, collect/rls for the RLS /metrics page) share
// beside expfmt's parser: the one rendering of a series as text, the check
// that a sample is a finite count, and finding the line of a series in the
// exposition, since expfmt's parsed families carry no line numbers.
//
// The text format is Prometheus' exposition format 0.0.4
// (prometheus/docs content/docs/instrumenting/exposition_formats.md):
// `name{label="value",...} value [timestamp]`, label values escaped with
// \\, \" and \n; newer expfmt also accepts UTF-8 names quoted inside the
// braces, `{"name", label="value"} value`.
package promtext

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Key renders name{k="v",...} with labels sorted by name and values escaped
// as in the text format; just name when there are no labels.
func Key(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(labels[k]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// CheckCount returns an error when v cannot be a count: NaN, an infinity or
// a negative number. The text format allows NaN and ±Inf for any sample, but
// a counter is never negative or NaN (Prometheus data model), and rlbench
// sums and compares these values.
func CheckCount(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("value %s is not a finite non-negative number", strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// Line returns the 1-based line of data holding a sample of family whose
// labels are exactly labels, ignoring the le and quantile labels of
// histogram and summary samples; samples named family_bucket, family_sum
// and family_count belong to family too. It returns 0 when no line matches.
func Line(data []byte, family string, labels map[string]string) int {
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		name, ls, ok := parseSample(string(line))
		if !ok || !belongs(name, family) {
			continue
		}
		if sameLabels(ls, labels) {
			return lineNo
		}
	}
	return 0
}

func belongs(name, family string) bool {
	if name == family {
		return true
	}
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if name == family+s {
			return true
		}
	}
	return false
}

func sameLabels(got, want map[string]string) bool {
	n := 0
	for k, v := range got {
		if k == "le" || k == "quantile" {
			if _, in := want[k]; !in {
				continue
			}
		}
		if w, ok := want[k]; !ok || w != v {
			return false
		}
		n++
	}
	return n == len(want)
}

// parseSample reads the metric name and labels of one sample line; ok is
// false for blank lines, comments and lines it cannot read.
func parseSample(s string) (name string, labels map[string]string, ok bool) {
	s = strings.TrimLeft(s, " \t")
	if s == "" || s[0] == '#' {
		return "", nil, false
	}
	i := 0
	for i < len(s) && s[i] != '{' && s[i] != ' ' && s[i] != '\t' {
		i++
	}
	name = s[:i]
	labels = map[string]string{}
	if i < len(s) && s[i] == '{' {
		i++
		for {
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ',') {
				i++
			}
			if i >= len(s) {
				return "", nil, false
			}
			if s[i] == '}' {
				break
			}
			var key string
			if s[i] == '"' {
				q, n, ok := quoted(s[i:])
				if !ok {
					return "", nil, false
				}
				i += n
				j := i
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
					j++
				}
				if j >= len(s) || s[j] != '=' {
					// A quoted metric name inside the braces (UTF-8 syntax).
					name = q
					continue
				}
				key, i = q, j
			} else {
				j := i
				for j < len(s) && s[j] != '=' && s[j] != ' ' && s[j] != '\t' && s[j] != '}' {
					j++
				}
				key = s[i:j]
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
					j++
				}
				if j >= len(s) || s[j] != '=' {
					return "", nil, false
				}
				i = j
			}
			i++ // '='
			for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
				i++
			}
			if i >= len(s) || s[i] != '"' {
				return "", nil, false
			}
			v, n, ok := quoted(s[i:])
			if !ok {
				return "", nil, false
			}
			i += n
			labels[key] = v
		}
	}
	return name, labels, name != ""
}

// quoted reads a double-quoted string with the text format's escapes at the
// start of s and returns it and the bytes consumed.
func quoted(s string) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, true
		case '\\':
			i++
			if i >= len(s) {
				return "", 0, false
			}
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
