package runner

import (
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// nonFinite finds the first plain scalar of root (a yamlguard-bounded
// document) that YAML 1.2 reads as a float that is not finite (.nan, .inf,
// -.inf in any of their spellings) and returns its path from the root
// ("scenarios[0].intended_limit") and line. JSON, the form every plan value
// is decoded through, has no such number, and the converter's error
// ("unsupported value: NaN") names neither; ok is false when there is none.
// Alias nodes are not followed: the anchored node is visited where it
// stands.
func nonFinite(root *yamlv3.Node) (path string, line int, value string, ok bool) {
	var walk func(n *yamlv3.Node, path string) bool
	walk = func(n *yamlv3.Node, p string) bool {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				if walk(c, p) {
					return true
				}
			}
		case yamlv3.MappingNode:
			for k := 0; k+1 < len(n.Content); k += 2 {
				key := n.Content[k].Value
				if p != "" {
					key = p + "." + key
				}
				if walk(n.Content[k+1], key) {
					return true
				}
			}
		case yamlv3.SequenceNode:
			for k, c := range n.Content {
				if walk(c, fmt.Sprintf("%s[%d]", p, k)) {
					return true
				}
			}
		case yamlv3.ScalarNode:
			if n.Style == 0 && n.ShortTag() == "!!float" && !finite(n.Value) {
				path, line, value, ok = p, n.Line, n.Value, true
				return true
			}
		}
		return false
	}
	walk(root, "")
	return
}

// finite reports whether a YAML float scalar is not one of YAML 1.2's
// .nan and [+-].inf (any case). A literal past float64's range (1e400) is
// not tagged !!float by yaml.v3 and reaches the field's decoder, whose
// error names the line.
func finite(v string) bool {
	switch strings.ToLower(strings.TrimLeft(v, "+-")) {
	case ".nan", ".inf":
		return false
	}
	return true
}
