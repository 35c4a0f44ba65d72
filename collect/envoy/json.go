package envoy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/internal/jsonline"
)

// parseJSON parses GET /stats?format=json (stats_render.cc StatsJsonRender).
func parseJSON(r io.Reader, name string, snap *envoyrec.Snapshot) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: read: %w", name, err)
	}
	lineAt := func(off int64) int { return jsonline.Line(data, off) }
	wrap := func(err error, fallback int64) error {
		if off, ok := jsonline.Offset(err); ok {
			return lineErr(name, lineAt(off), "invalid JSON: %v", err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return lineErr(name, lineAt(int64(len(data))), "truncated JSON")
		}
		return lineErr(name, lineAt(fallback), "%v", err)
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return wrap(err, 0)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return lineErr(name, lineAt(dec.InputOffset()), "want a JSON object {\"stats\": [...]}")
	}
	sawStats := false
	for dec.More() {
		keyTok, err := dec.Token()
		if err != nil {
			return wrap(err, dec.InputOffset())
		}
		key, _ := keyTok.(string)
		switch key {
		case "stats":
			sawStats = true
			tok, err := dec.Token()
			if err != nil {
				return wrap(err, dec.InputOffset())
			}
			if d, ok := tok.(json.Delim); !ok || d != '[' {
				return lineErr(name, lineAt(dec.InputOffset()), "\"stats\" is not an array")
			}
			for dec.More() {
				start := dec.InputOffset()
				var elem map[string]json.RawMessage
				if err := dec.Decode(&elem); err != nil {
					return wrap(err, start)
				}
				if err := addJSONElement(snap, elem); err != nil {
					// Counted only on error: per element it is quadratic in the stats.
					return lineErr(name, lineAt(start+int64(countLeadingSpace(data[start:]))), "%v", err)
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return wrap(err, dec.InputOffset())
			}
		case "histograms":
			// admin.rst shows the histograms block at top level.
			start := dec.InputOffset()
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return wrap(err, start)
			}
			if err := addJSONHistograms(snap, raw); err != nil {
				return lineErr(name, lineAt(start+int64(countLeadingSpace(data[start:]))), "histograms: %v", err)
			}
			sawStats = true
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return wrap(err, dec.InputOffset())
			}
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return wrap(err, dec.InputOffset())
	}
	if !sawStats {
		return lineErr(name, 1, "JSON object has no \"stats\" array")
	}
	return nil
}

func countLeadingSpace(b []byte) int {
	n := 0
	for n < len(b) && (b[n] == ' ' || b[n] == '\n' || b[n] == '\r' || b[n] == '\t' || b[n] == ',' || b[n] == ':') {
		n++
	}
	return n
}

func addJSONElement(snap *envoyrec.Snapshot, elem map[string]json.RawMessage) error {
	if h, ok := elem["histograms"]; ok {
		if err := addJSONHistograms(snap, h); err != nil {
			return fmt.Errorf("histograms: %v", err)
		}
		return nil
	}
	rawName, ok := elem["name"]
	if !ok {
		return nil // unknown element shape: ignored (see Parse)
	}
	var stat string
	if err := json.Unmarshal(rawName, &stat); err != nil || stat == "" {
		return fmt.Errorf("element name %s is not a non-empty string", clip(string(rawName)))
	}
	rawVal, ok := elem["value"]
	if !ok {
		return fmt.Errorf("stat %q has no value", stat)
	}
	rawVal = bytes.TrimSpace(rawVal)
	if len(rawVal) > 0 && rawVal[0] == '"' {
		var s string
		if err := json.Unmarshal(rawVal, &s); err != nil {
			return fmt.Errorf("stat %q: %v", stat, err)
		}
		snap.TextReadouts[stat] = s
		return nil
	}
	v, err := strconv.ParseUint(string(rawVal), 10, 64)
	if err != nil {
		return fmt.Errorf("stat %q: value %s is not an unsigned integer or string", stat, clip(string(rawVal)))
	}
	if _, dup := snap.Values[stat]; dup {
		return fmt.Errorf("stat %q: duplicate", stat)
	}
	snap.Values[stat] = v
	return nil
}

type jsonQuantileValue struct {
	Interval   *json.Number `json:"interval"`
	Cumulative *json.Number `json:"cumulative"`
}

type jsonHistSummary struct {
	SupportedQuantiles   []float64 `json:"supported_quantiles"`
	SupportedPercentiles []float64 `json:"supported_percentiles"`
	ComputedQuantiles    []struct {
		Name   string              `json:"name"`
		Values []jsonQuantileValue `json:"values"`
	} `json:"computed_quantiles"`
	Details []struct {
		Name        string                  `json:"name"`
		Totals      []envoyrec.DetailBucket `json:"totals"`
		Intervals   []envoyrec.DetailBucket `json:"intervals"`
		Percentiles []jsonQuantileValue     `json:"percentiles"`
	} `json:"details"`
}

type jsonHistBuckets struct {
	Name    string `json:"name"`
	Buckets []struct {
		UpperBound float64 `json:"upper_bound"`
		Interval   uint64  `json:"interval"`
		Cumulative uint64  `json:"cumulative"`
	} `json:"buckets"`
}

// addJSONHistograms handles the three JSON histogram shapes of
// StatsJsonRender::renderHistogramStart.
func addJSONHistograms(snap *envoyrec.Snapshot, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '[' { // cumulative / disjoint buckets
		var hs []jsonHistBuckets
		if err := unmarshalNumber(raw, &hs); err != nil {
			return err
		}
		for _, h := range hs {
			if h.Name == "" {
				return fmt.Errorf("bucket histogram without name")
			}
			out := envoyrec.Histogram{Buckets: []envoyrec.Bucket{}}
			for _, b := range h.Buckets {
				iv := b.Interval
				out.Buckets = append(out.Buckets, envoyrec.Bucket{UpperBound: b.UpperBound, Interval: &iv, Cumulative: b.Cumulative})
			}
			snap.Histograms[h.Name] = out
		}
		return nil
	}
	var s jsonHistSummary
	if err := unmarshalNumber(raw, &s); err != nil {
		return err
	}
	for _, cq := range s.ComputedQuantiles {
		if cq.Name == "" {
			return fmt.Errorf("computed_quantiles entry without name")
		}
		q, err := toQuantiles(cq.Name, s.SupportedQuantiles, cq.Values)
		if err != nil {
			return err
		}
		snap.Histograms[cq.Name] = envoyrec.Histogram{Quantiles: q}
	}
	for _, d := range s.Details {
		if d.Name == "" {
			return fmt.Errorf("details entry without name")
		}
		q, err := toQuantiles(d.Name, s.SupportedPercentiles, d.Percentiles)
		if err != nil {
			return err
		}
		h := envoyrec.Histogram{Quantiles: q, Totals: d.Totals, Intervals: d.Intervals}
		if h.Totals == nil {
			h.Totals = []envoyrec.DetailBucket{}
		}
		if h.Intervals == nil {
			h.Intervals = []envoyrec.DetailBucket{}
		}
		snap.Histograms[d.Name] = h
	}
	return nil
}

func unmarshalNumber(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

func toQuantiles(name string, supported []float64, vals []jsonQuantileValue) ([]envoyrec.Quantile, error) {
	if len(vals) != len(supported) {
		return nil, fmt.Errorf("histogram %q has %d values for %d supported quantiles", name, len(vals), len(supported))
	}
	out := make([]envoyrec.Quantile, len(vals))
	for i, v := range vals {
		iv, err := jsonFloat(v.Interval)
		if err != nil {
			return nil, fmt.Errorf("histogram %q value %d interval: %v", name, i, err)
		}
		cu, err := jsonFloat(v.Cumulative)
		if err != nil {
			return nil, fmt.Errorf("histogram %q value %d cumulative: %v", name, i, err)
		}
		out[i] = envoyrec.Quantile{Percent: supported[i], Interval: iv, Cumulative: cu}
	}
	return out, nil
}

func jsonFloat(n *json.Number) (*float64, error) {
	if n == nil {
		return nil, nil
	}
	f, err := n.Float64()
	if err != nil {
		return nil, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, nil
	}
	return &f, nil
}
