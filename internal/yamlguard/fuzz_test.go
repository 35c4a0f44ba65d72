package yamlguard

import (
	"bytes"
	"errors"
	"io"
	"strings"
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

// FuzzParseOne compares ParseOne with Parse and a plain yaml.v3 decoding:
// on an input of one document (and empty ones after it) both agree; an
// input with a later document that holds a value, or does not parse, is
// refused by ParseOne with an *Error about a second document, at a line of
// the input.
func FuzzParseOne(f *testing.F) {
	f.Add([]byte("a: 1\n"))
	f.Add([]byte("a: 1\n---\n"))
	f.Add([]byte("a: 1\n---\n# c\n---\n"))
	f.Add([]byte("---\n---\na: 1\n"))
	f.Add([]byte("a: 1\n--- b\n"))
	f.Add([]byte("a: 1\n...\n---\n[\n"))
	f.Add([]byte("a: |\n  x\n---\nb: 1\n"))
	f.Add([]byte("a: 1\r\n---\r\n~\r\n"))
	lim := Limits{MaxNodes: 2000, MaxAliasNodes: 500, MaxDepth: 40}
	f.Fuzz(func(t *testing.T, data []byte) {
		all, err := Parse("f.yaml", data, lim)
		one, oerr := ParseOne("f.yaml", data, lim)
		// What a plain decoding sees: documents up to the first error.
		docs, syntaxAt := 0, -1
		second := false // a later document with a value, or one that does not parse
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc yaml.Node
			derr := dec.Decode(&doc)
			if derr == io.EOF {
				break
			}
			if derr != nil {
				syntaxAt = docs
				second = second || docs > 0
				break
			}
			if docs > 0 && !(len(doc.Content) == 1 && doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" && doc.Content[0].Value == "" && doc.Content[0].Style == 0 && doc.Content[0].Anchor == "") {
				second = true
			}
			docs++
		}
		var ge *Error
		isSecond := errors.As(oerr, &ge) && strings.Contains(ge.Msg, "second YAML document")
		switch {
		case syntaxAt == 0:
			if oerr == nil || IsGuard(oerr) || oerr.Error() != err.Error() {
				t.Fatalf("syntax error in the first document: ParseOne %v, Parse %v", oerr, err)
			}
		case second:
			if !isSecond && !(IsGuard(err) && IsGuard(oerr)) {
				t.Fatalf("input with a second document: ParseOne = %v (Parse %v)", oerr, err)
			}
		case err != nil:
			if oerr == nil || oerr.Error() != err.Error() {
				t.Fatalf("one document: ParseOne %v, Parse %v", oerr, err)
			}
		default:
			if oerr != nil || (one == nil) != (all == nil) || (one != nil && (one.Line != all.Line || len(one.Content) != len(all.Content))) {
				t.Fatalf("one document: ParseOne (%v, %v), Parse (%v, nil)", one, oerr, all)
			}
		}
		if isSecond {
			lines := bytes.Count(bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n")), []byte("\n")) + 1
			if !second || ge.Line < 0 || ge.Line > lines {
				t.Fatalf("second-document error %v (line %d of %d; a second document: %v)", oerr, ge.Line, lines, second)
			}
		}
	})
}
