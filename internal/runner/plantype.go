package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// planTypeError words a value of the wrong type (a string for ids, a
// number too large for its field, a list for proxies) as the plan's
// terms: the field's path in the plan ("scenarios[0].attack.ids"), what
// the field takes and what the plan gives, and the line of the value in
// root (the YAML tree; 0 when it cannot be found). ute is what
// encoding/json reports after sigs.k8s.io/yaml converted the plan to
// JSON: its Field is the path of JSON keys without list indexes or map
// keys ("scenarios.attack.ids"), so the value is searched in root: the
// first value in document order at a path that fits Field and whose kind
// is ute.Value's.
func planTypeError(root *yamlv3.Node, ute *json.UnmarshalTypeError) (line int, msg string) {
	want := wantOfType(ute.Type, strings.HasPrefix(ute.Value, "number"))
	gave := strings.TrimPrefix(ute.Value, "number ")
	path, n := "", (*yamlv3.Node)(nil)
	if root != nil {
		doc := root
		if doc.Kind == yamlv3.DocumentNode && len(doc.Content) > 0 {
			doc = doc.Content[0]
		}
		var parts []string
		if ute.Field != "" {
			parts = strings.Split(ute.Field, ".")
		}
		var first *typeCandidate
		budget := 1 << 16 // nodes visited at most: the search is a courtesy, not a second parser
		found := findTypeCandidate(doc, "", parts, ute.Value, &first, &budget)
		if found == nil {
			found = first
		}
		if found != nil {
			path, n = found.path, found.node
		}
	}
	if path == "" {
		path = ute.Field
	}
	if path == "" {
		path = "the plan"
	}
	if n != nil {
		line = n.Line
		gave = describeNode(n)
	}
	return line, fmt.Sprintf("%s: want %s, not %s", path, want, gave)
}

type typeCandidate struct {
	path string
	node *yamlv3.Node
}

// findTypeCandidate walks n along parts (JSON keys): a mapping follows its
// key, or, without it, every value (a map field: its keys are not in the
// path); a list every element. At the end of parts the node itself, and
// its elements or values, are candidates. It returns the first candidate
// whose kind is value's (json's UnmarshalTypeError.Value: "string",
// "number ...", "bool", "array", "object") and records the first of all in
// *first.
func findTypeCandidate(n *yamlv3.Node, path string, parts []string, value string, first **typeCandidate, budget *int) *typeCandidate {
	if *budget--; *budget < 0 || n == nil {
		return nil
	}
	if n.Kind == yamlv3.AliasNode {
		return findTypeCandidate(n.Alias, path, parts, value, first, budget)
	}
	try := func(c *yamlv3.Node, p string) *typeCandidate {
		if c.Kind == yamlv3.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		tc := &typeCandidate{path: p, node: c}
		if *first == nil {
			*first = tc
		}
		if nodeIs(c, value) {
			return tc
		}
		return nil
	}
	if len(parts) == 0 {
		if tc := try(n, path); tc != nil {
			return tc
		}
		switch n.Kind {
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				if tc := try(c, fmt.Sprintf("%s[%d]", path, i)); tc != nil {
					return tc
				}
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if tc := try(n.Content[i+1], joinPath(path, n.Content[i].Value)); tc != nil {
					return tc
				}
			}
		}
		return nil
	}
	switch n.Kind {
	case yamlv3.MappingNode:
		if v, _ := mappingValue(n, parts[0]); v != nil {
			return findTypeCandidate(v, joinPath(path, parts[0]), parts[1:], value, first, budget)
		}
		if isGoName(parts[0]) {
			// An embedded struct's Go name (ExpectPlan's "Expectation"):
			// encoding/json puts it in Field, its fields are this mapping's.
			return findTypeCandidate(n, path, parts[1:], value, first, budget)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if tc := findTypeCandidate(n.Content[i+1], joinPath(path, n.Content[i].Value), parts, value, first, budget); tc != nil {
				return tc
			}
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			if tc := findTypeCandidate(c, fmt.Sprintf("%s[%d]", path, i), parts, value, first, budget); tc != nil {
				return tc
			}
		}
	}
	return nil
}

// isGoName reports whether a part of an UnmarshalTypeError's Field is a Go
// type name (upper case first, as no plan key is) rather than a json key.
func isGoName(part string) bool { return part != "" && part[0] >= 'A' && part[0] <= 'Z' }

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// nodeIs reports whether the YAML node n converts to the JSON value json
// named value (UnmarshalTypeError.Value).
func nodeIs(n *yamlv3.Node, value string) bool {
	switch kind, num, _ := strings.Cut(value, " "); kind {
	case "array":
		return n.Kind == yamlv3.SequenceNode
	case "object":
		return n.Kind == yamlv3.MappingNode
	case "string":
		return n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!str"
	case "bool":
		return n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!bool"
	case "number":
		if n.Kind != yamlv3.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			return false
		}
		if num == "" {
			return true
		}
		var got float64
		want, err := strconv.ParseFloat(num, 64)
		if n.Decode(&got) != nil || err != nil {
			return false
		}
		return got == want || math.Abs(got-want) <= 1e-9*math.Abs(want)
	}
	return false
}

// describeNode is the plan's value as the plan gives it: a list, a
// mapping, a string "…", or the scalar as written (99999999999999999999, 1e30).
func describeNode(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.SequenceNode:
		return "a list"
	case yamlv3.MappingNode:
		return "a mapping"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	if n.ShortTag() == "!!str" {
		return "the string " + strconv.Quote(v)
	}
	return v
}

// wantOfType says what a Go field type takes, in plan terms; a whole
// number's range only when the plan gave a number (out of range), not for
// a string or a list, where it says nothing ("a whole number", not "from
// -9223372036854775808 to ...").
func wantOfType(t reflect.Type, number bool) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !number {
			return "a whole number"
		}
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("a whole number from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "another value"
}
