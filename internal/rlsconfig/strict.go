package rlsconfig

import (
	"fmt"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rlbench/rlbench/model"
)

// parser is rlbench's stricter reading of an RLS config, run before the RLS's own: it refuses what the RLS
// silently ignores or reports without a line (a key at a level where it has no meaning, a duplicate mapping key,
// a value of the wrong type, a unit beside unlimited), and records the line of every descriptor, in pre-order,
// for the errors and the Descriptor tree. The values themselves are taken from the RLS's reading.
type parser struct {
	file string
	pos  []descPos
}

// descPos locates one descriptor: its mapping, its rate_limit mapping and its unit (0 when absent).
type descPos struct{ line, rateLimitLine, unitLine int }

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return &Error{File: p.file, Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// yamlError turns a YAML syntax error ("yaml: line N: ...", from yaml.v3 or the RLS's yaml.v2) into an *Error.
func yamlError(name string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		var n int
		if _, e := fmt.Sscanf(msg, "line %d:", &n); e == nil {
			line = n
			if i := strings.Index(msg, ": "); i >= 0 {
				msg = msg[i+2:]
			}
		}
	}
	return &Error{File: name, Line: line, Msg: "error loading config file: " + msg}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("scalar %q", n.Value)
	}
	return "a document"
}

func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// mapping walks a mapping node, rejecting unknown and duplicate keys, and calls the handler of each known key
// with its value node.
func (p *parser) mapping(n *yaml.Node, what string, fields map[string]func(*yaml.Node) error) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "%s must be a mapping, found %s", what, kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return p.errf(k, "config error, key is not of type string: %s", kindName(k))
		}
		fn, ok := fields[k.Value]
		if !ok {
			known := make([]string, 0, len(fields))
			for f := range fields {
				known = append(known, f)
			}
			sort.Strings(known)
			return p.errf(k, "config error, unknown key '%s' in %s (allowed: %s)", k.Value, what, strings.Join(known, ", "))
		}
		if prev, dup := seen[k.Value]; dup {
			return p.errf(k, "duplicate key '%s' in %s (first at line %d)", k.Value, what, prev)
		}
		seen[k.Value] = k.Line
		if err := fn(deref(v)); err != nil {
			return err
		}
	}
	return nil
}

// str checks a string field: any scalar (numbers and booleans are taken as their text, as yaml.v2 does for the
// RLS's string fields) or null.
func (p *parser) str(v *yaml.Node, key string) error {
	if isNull(v) || v.Kind == yaml.ScalarNode {
		return nil
	}
	return p.errf(v, "'%s' must be a string, found %s", key, kindName(v))
}

func (p *parser) boolean(v *yaml.Node, key string) error {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.ScalarNode {
		return p.errf(v, "'%s' must be true or false, found %s", key, kindName(v))
	}
	var b bool
	if err := v.Decode(&b); err != nil {
		return p.errf(v, "'%s' must be true or false, found %q", key, v.Value)
	}
	return nil
}

// config checks the file's root mapping.
func (p *parser) config(root *yaml.Node) error {
	return p.mapping(root, "config file", map[string]func(*yaml.Node) error{
		"domain":      func(v *yaml.Node) error { return p.str(v, "domain") },
		"descriptors": p.descriptors,
	})
}

func (p *parser) descriptors(v *yaml.Node) error {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		return p.errf(v, "'descriptors' must be a list, found %s", kindName(v))
	}
	for _, item := range v.Content {
		if err := p.descriptor(deref(item)); err != nil {
			return err
		}
	}
	return nil
}

// descriptor checks one descriptor and records its position (pre-order: before its nested descriptors).
func (p *parser) descriptor(n *yaml.Node) error {
	idx := len(p.pos)
	p.pos = append(p.pos, descPos{line: n.Line})
	flag := func(name string) func(*yaml.Node) error {
		return func(v *yaml.Node) error { return p.boolean(v, name) }
	}
	return p.mapping(n, "descriptor", map[string]func(*yaml.Node) error{
		"key":   func(v *yaml.Node) error { return p.str(v, "key") },
		"value": func(v *yaml.Node) error { return p.str(v, "value") },
		"rate_limit": func(v *yaml.Node) error {
			if isNull(v) {
				return nil
			}
			p.pos[idx].rateLimitLine = v.Line
			return p.rateLimit(v, idx)
		},
		"shadow_mode":     flag("shadow_mode"),
		"detailed_metric": flag("detailed_metric"),
		"value_to_metric": flag("value_to_metric"),
		"share_threshold": flag("share_threshold"),
		"quota_mode":      flag("quota_mode"),
		"descriptors":     p.descriptors,
	})
}

func (p *parser) rateLimit(n *yaml.Node, idx int) error {
	var unit *yaml.Node
	unlimited := false
	err := p.mapping(n, "rate_limit", map[string]func(*yaml.Node) error{
		"unit": func(v *yaml.Node) error {
			unit = v
			p.pos[idx].unitLine = v.Line
			return p.str(v, "unit")
		},
		"requests_per_unit": func(v *yaml.Node) error {
			if isNull(v) {
				return nil
			}
			var n uint32
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				return p.errf(v, "'requests_per_unit' must be an integer in [0, 4294967295], found %s", kindName(v))
			}
			if err := v.Decode(&n); err != nil {
				return p.errf(v, "'requests_per_unit' must be an integer in [0, 4294967295], found %q", v.Value)
			}
			return nil
		},
		"unlimited": func(v *yaml.Node) error {
			if err := p.boolean(v, "unlimited"); err != nil {
				return err
			}
			_ = v.Decode(&unlimited)
			return nil
		},
		"name": func(v *yaml.Node) error { return p.str(v, "name") },
		"replaces": func(v *yaml.Node) error {
			if isNull(v) {
				return nil
			}
			if v.Kind != yaml.SequenceNode {
				return p.errf(v, "'replaces' must be a list of {name: ...}, found %s", kindName(v))
			}
			for _, item := range v.Content {
				if err := p.mapping(item, "replaces entry", map[string]func(*yaml.Node) error{
					"name": func(v *yaml.Node) error { return p.str(v, "name") },
				}); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	// The RLS refuses a valid unit beside unlimited and ignores an invalid one (loadDescriptors); the valid case
	// is left to it, the ignored one is refused here.
	if unlimited && unit != nil && !isNull(unit) && unit.Value != "" && model.UnitSeconds(unit.Value) == 0 {
		return p.errf(unit, "should not specify rate limit unit when unlimited (unit '%s'; envoyproxy/ratelimit ignores an invalid unit here, rlbench refuses it)", unit.Value)
	}
	return nil
}
