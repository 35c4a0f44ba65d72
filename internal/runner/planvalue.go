package runner

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// valueErrorAt finds the plan field whose own decoding failed with msg: a
// value of a type with its own UnmarshalJSON (a rate, a duration, a
// latency, a range, a limiter spec) that encoding/json reports without the
// field it was in. It walks root (the YAML tree) along the Go type t (the
// plan), following the json field names as sigs.k8s.io/yaml does, decodes
// each such value again and returns the path ("scenarios[0].attack.rate")
// and line of the first one, in document order, that fails with exactly
// msg (both as decodeErrorText words them); ok is false when none does (the message is then printed without
// them).
func valueErrorAt(root *yamlv3.Node, t reflect.Type, msg string) (path string, line int, ok bool) {
	if root == nil {
		return "", 0, false
	}
	n := root
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	budget := 1 << 16 // nodes visited at most, as planTypeError's search
	return walkValueError(n, t, "", msg, &budget)
}

func walkValueError(n *yamlv3.Node, t reflect.Type, path, msg string, budget *int) (string, int, bool) {
	if *budget--; *budget < 0 || n == nil {
		return "", 0, false
	}
	if n.Kind == yamlv3.AliasNode {
		return walkValueError(n.Alias, t, path, msg, budget)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		// The deepest field first: a list of peak expectations that
		// fails on one's window is named at that window.
		inner := t
		if inner.Kind() == reflect.Slice && n.Kind == yamlv3.MappingNode {
			inner = inner.Elem() // the one-object form of a list
		}
		if p, l, ok := walkFields(n, inner, path, msg, budget); ok {
			return p, l, true
		}
		var v any
		if n.Decode(&v) != nil {
			return "", 0, false
		}
		b, err := json.Marshal(v)
		if err != nil {
			return "", 0, false
		}
		if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil && decodeErrorText(err) == msg {
			return path, n.Line, true
		}
		return "", 0, false
	}
	return walkFields(n, t, path, msg, budget)
}

// walkFields is walkValueError below n: the fields, elements or values
// of a struct, list or map type t.
func walkFields(n *yamlv3.Node, t reflect.Type, path, msg string, budget *int) (string, int, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yamlv3.MappingNode {
			return "", 0, false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]
			if key == "<<" { // a merge key: its mapping's fields are this struct's
				if p, l, ok := walkMerge(val, t, path, msg, budget); ok {
					return p, l, true
				}
				continue
			}
			ft, found := jsonFieldType(t, key)
			if !found {
				continue
			}
			if p, l, ok := walkValueError(val, ft, joinPath(path, key), msg, budget); ok {
				return p, l, true
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yamlv3.SequenceNode {
			return "", 0, false
		}
		for i, c := range n.Content {
			if p, l, ok := walkValueError(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", msg, budget); ok {
				return p, l, true
			}
		}
	case reflect.Map:
		if n.Kind != yamlv3.MappingNode {
			return "", 0, false
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if p, l, ok := walkValueError(n.Content[i+1], t.Elem(), joinPath(path, n.Content[i].Value), msg, budget); ok {
				return p, l, true
			}
		}
	}
	return "", 0, false
}

func walkMerge(n *yamlv3.Node, t reflect.Type, path, msg string, budget *int) (string, int, bool) {
	if n.Kind == yamlv3.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yamlv3.SequenceNode {
		for _, c := range n.Content {
			if p, l, ok := walkMerge(c, t, path, msg, budget); ok {
				return p, l, true
			}
		}
		return "", 0, false
	}
	return walkValueError(n, t, path, msg, budget)
}

// jsonFieldType returns the type of the field of struct t that
// encoding/json decodes key into (its json tag name, or its Go name;
// embedded structs' fields are promoted), matching exactly first, then
// case-insensitively as encoding/json does.
func jsonFieldType(t reflect.Type, key string) (reflect.Type, bool) {
	var fold reflect.Type
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			if f.Anonymous {
				continue // inlined: its fields are visible themselves
			}
			name = f.Name
		}
		if name == key {
			return f.Type, true
		}
		if fold == nil && strings.EqualFold(name, key) {
			fold = f.Type
		}
	}
	return fold, fold != nil
}
