package evidence

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"strconv"
)

// jsonKeys is what scanKeys learns of a JSON document: the line of each
// key path's first occurrence ("expect.classes.local_429",
// "limiters[0].name"), and the first {"min", "max"} object with
// min > max (its path and the line of its "min").
type jsonKeys struct {
	lines        map[string]int
	badRange     string
	badRangeLine int
	// proxies counts the items of the top-level "proxies" array, up to
	// MaxScenarioProxies+1 (the scan stops there), so that DecodeScenario
	// refuses more before it decodes them.
	proxies int
}

// maxScanDepth bounds scanKeys' nesting (encoding/json's own limit is
// 10000 levels).
const maxScanDepth = 1000

// scanKeys walks b's tokens and returns the key lines, or an error naming
// the line and path of a duplicate key in an object ("line 7:
// intended_limit: duplicate key (first on line 6)"): encoding/json keeps
// the last of duplicate keys silently, so a scenario.json with
// "intended_limit": 5 and "intended_limit": 50 would be judged by one of
// them unseen. A syntax error ends the scan without error (the decoder
// reports it, with its line).
func scanKeys(b []byte) (*jsonKeys, error) {
	dec := stdjson.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	k := &jsonKeys{lines: map[string]int{}}
	lines := &lineCounter{b: b}
	var dup error
	var walk func(path string, depth int) (stdjson.Token, bool)
	walk = func(path string, depth int) (stdjson.Token, bool) {
		tok, err := dec.Token()
		if err != nil || depth > maxScanDepth {
			return nil, false
		}
		d, ok := tok.(stdjson.Delim)
		if !ok {
			return tok, true
		}
		switch d {
		case '{':
			first := map[string]int{}
			var lo, hi *int64
			minLine := 0
			for dec.More() {
				kt, err := dec.Token()
				key, ok := kt.(string)
				if err != nil || !ok {
					return nil, false
				}
				line := lines.at(int(dec.InputOffset()))
				p := key
				if path != "" {
					p = path + "." + key
				}
				if l, seen := first[key]; seen {
					dup = fmt.Errorf("line %d: %s: duplicate key (first on line %d)", line, p, l)
					return nil, false
				}
				first[key] = line
				if _, seen := k.lines[p]; !seen {
					k.lines[p] = line
				}
				v, ok := walk(p, depth+1)
				if !ok {
					return nil, false
				}
				if n, isNum := v.(stdjson.Number); isNum && (key == "min" || key == "max") {
					if x, err := strconv.ParseInt(string(n), 10, 64); err == nil {
						if key == "min" {
							lo, minLine = &x, line
						} else {
							hi = &x
						}
					}
				}
			}
			if lo != nil && hi != nil && *lo > *hi && k.badRangeLine == 0 {
				k.badRange, k.badRangeLine = path, minLine
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if path == "proxies" {
					if k.proxies++; k.proxies > MaxScenarioProxies {
						return nil, false // DecodeScenario refuses them; the rest is not scanned
					}
				}
				if _, ok := walk(fmt.Sprintf("%s[%d]", path, i), depth+1); !ok {
					return nil, false
				}
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, false
		}
		return d, true
	}
	walk("", 0)
	if dup != nil {
		return nil, dup
	}
	return k, nil
}
