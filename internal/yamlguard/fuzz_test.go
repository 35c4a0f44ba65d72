package yamlguard

import (
	"bytes"
	"io"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
	yaml "go.yaml.in/yaml/v3"
)

// naive expands a node tree by following every alias, without memoising,
// and records what Check bounds. It stops counting past stop nodes.
type naive struct {
	stop           int
	total, aliased int
	depth          int
	cycle          bool
	path           map[*yaml.Node]bool
}

func (v *naive) walk(n *yaml.Node, depth int, inAlias bool) {
	if n == nil || v.total > v.stop || v.cycle {
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if v.path[n.Alias] {
			v.cycle = true
			return
		}
		v.walk(n.Alias, depth, true)
		return
	}
	v.total++
	if inAlias {
		v.aliased++
	}
	v.depth = max(v.depth, depth)
	v.path[n] = true
	for _, c := range n.Content {
		v.walk(c, depth+1, inAlias)
	}
	delete(v.path, n)
}

// FuzzParse compares Parse with a naive expansion of the same documents:
// what Parse accepts stays within the limits when expanded for real, and
// what it refuses as excessive, too deep or recursive really is.
func FuzzParse(f *testing.F) {
	f.Add([]byte(testfix.AliasBomb("", 3, 4)))
	f.Add([]byte("a: &a [1, 2, {b: 3}]\nb: [*a, *a]\nc: {<<: {x: 1}, d: *a}\n---\n- *x\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("[[[[[[[[[[[[[[[[[[[[x]]]]]]]]]]]]]]]]]]]]\n"))
	lim := Limits{MaxNodes: 2000, MaxAliasNodes: 500, MaxDepth: 40}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("f.yaml", data, lim)
		if err != nil && !IsGuard(err) {
			return // a syntax error
		}
		v := &naive{stop: lim.MaxNodes + 1, path: map[*yaml.Node]bool{}}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc yaml.Node
			if derr := dec.Decode(&doc); derr == io.EOF {
				break
			} else if derr != nil {
				if err == nil {
					t.Fatalf("Parse passed what yaml.v3 refuses: %v", derr)
				}
				// Parse refused an earlier document before it reached this
				// malformed one: the documents before it must be over.
				break
			}
			v.walk(&doc, 1, false)
		}
		over := v.cycle || v.total > lim.MaxNodes || v.aliased > lim.MaxAliasNodes || v.depth > lim.MaxDepth
		if err == nil && over {
			t.Fatalf("accepted a document that expands to %d nodes (%d aliased), depth %d, cycle %v", v.total, v.aliased, v.depth, v.cycle)
		}
		if err != nil && !over {
			t.Fatalf("refused (%v) a document that expands to %d nodes (%d aliased), depth %d", err, v.total, v.aliased, v.depth)
		}
	})
}
