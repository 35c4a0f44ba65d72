// Package yamlguard bounds what a YAML input may cost before anything expands
// it: its size in bytes, the number of nodes it has once every alias is
// followed, and its nesting depth once aliases are followed. It guards against
// "billion laughs" documents, where a few hundred bytes of nested anchors and
// aliases (&a [*b, *b, ...]) expand to billions of nodes, and against
// recursive aliases (&a [*a]), which go.yaml.in/yaml/v3 keeps in a Node tree
// as a cycle.
//
// The idea is yaml.v2's "document contains excessive aliasing" guard
// (go.yaml.in/yaml/v2 decode.go allowedAliasRatio), which only protects
// yaml.v2's own decoder: a yaml.v3 Node tree keeps aliases unexpanded, so any
// code that walks it (a line index, a converter to JSON) must be bounded
// separately. Check counts the expanded tree without building it (the
// expanded size of an anchored node is computed once and reused), so
// refusing a bomb costs time and memory proportional to its literal size.
//
// The package never reads files; callers read input with their own size
// limit (Limits.MaxBytes is checked again by Parse).
package yamlguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml "go.yaml.in/yaml/v3"
)

// Defaults of Limits. They are far above hand-written configuration (an Envoy
// bootstrap with a thousand clusters has about 5*10^4 nodes and nests less
// than 40 levels) and low enough that what passes stays cheap to process:
// rlbench lint allocates about 1 KB per node, so about 250 MB at the node
// limit.
const (
	// DefaultMaxBytes bounds a YAML input read whole (16 MiB).
	DefaultMaxBytes = 16 << 20
	// DefaultMaxNodes bounds the nodes of a document with every alias
	// expanded (mapping keys and values, sequence items, scalars).
	DefaultMaxNodes = 250_000
	// DefaultMaxAliasNodes bounds the nodes reached through aliases, each
	// expanded copy counted: anchors that save typing repeat a few
	// thousand nodes, a bomb repeats millions.
	DefaultMaxAliasNodes = 100_000
	// DefaultMaxDepth bounds the nesting depth with aliases expanded.
	DefaultMaxDepth = 200
)

// Limits bounds one YAML input. A zero field takes its Default.
type Limits struct {
	MaxBytes      int64
	MaxNodes      int
	MaxAliasNodes int
	MaxDepth      int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxAliasNodes <= 0 {
		l.MaxAliasNodes = DefaultMaxAliasNodes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// Error is a refused input. Line is the 1-based line of the node where the
// budget ran out (the alias that crossed it, the node too deep), 0 when the
// whole input is refused (too many bytes).
type Error struct {
	Name string
	Line int
	Msg  string
}

// Error returns "<Name>:<Line>: <Msg>" ("<Name>: <Msg>" when Line is 0).
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Msg)
}

// IsGuard reports whether err is (or wraps) a refusal by this package.
func IsGuard(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// CheckSize refuses data longer than lim.MaxBytes.
func CheckSize(name string, size int64, lim Limits) error {
	lim = lim.withDefaults()
	if size > lim.MaxBytes {
		return &Error{Name: name, Msg: fmt.Sprintf("YAML input of %d bytes is larger than the limit of %d bytes", size, lim.MaxBytes)}
	}
	return nil
}

// Parse checks the size of data, decodes its documents into yaml.v3 Nodes
// and checks each with Check. It returns the first document (nil for an
// input without any document, e.g. empty or only comments), or a YAML syntax
// error as yaml.v3 reports it (unwrapped, "yaml: line N: ..."), or an *Error.
// The budget of lim is shared by all documents of data.
func Parse(name string, data []byte, lim Limits) (*yaml.Node, error) {
	return parse(name, data, lim, false)
}

// ParseOne is Parse for a file that holds one document (an rlbench plan, a
// lab file), whose decoders read the first document only: a later document
// that has content is refused with an *Error naming the line of its
// separator ("---"), and so is a later document that does not parse (its
// line is that of the first separator after the first document, the
// yaml.v3 error is in the message). A separator followed by nothing (or by
// comments only) holds no value, so it is accepted: a lone trailing "---" is
// harmless, and a tool that ends every document with one keeps working. A
// first document that is empty is a document too: "---\n---\na: 1" is
// refused at line 2.
func ParseOne(name string, data []byte, lim Limits) (*yaml.Node, error) {
	return parse(name, data, lim, true)
}

func parse(name string, data []byte, lim Limits, one bool) (*yaml.Node, error) {
	if err := CheckSize(name, int64(len(data)), lim); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first *yaml.Node
	c := newCounter(name, lim)
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			return first, nil
		}
		if err != nil {
			if one && first != nil {
				return nil, &Error{Name: name, Line: separatorAfter(data, first.Line), Msg: "a second YAML document (after a \"---\" separator) that does not parse (" + err.Error() + "): this file holds one document"}
			}
			return nil, err
		}
		if one && first != nil && !emptyDocument(&doc) {
			return nil, &Error{Name: name, Line: doc.Line, Msg: "a second YAML document (after a \"---\" separator): this file holds one document, and only the first would be read"}
		}
		if err := c.check(&doc); err != nil {
			return nil, err
		}
		if first == nil {
			first = &doc
		}
	}
}

// emptyDocument reports whether doc, a document node, holds no value: a
// separator followed by nothing or by comments (yaml.v3 gives it a null
// scalar written as nothing; "~" or "null" written out is a value).
func emptyDocument(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return len(doc.Content) == 1 && n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "" && n.Anchor == "" && n.Style == 0
}

// separatorAfter returns the 1-based line of the first document marker
// ("---" or "...", at the start of a line and followed by a blank or the
// end of the line) after line after, or 0 when there is none. YAML forbids
// such a line inside a document's content (YAML 1.2, 9.1.4 and c-forbidden),
// so it is where the next document starts or the previous one ends.
func separatorAfter(data []byte, after int) int {
	line := 1
	for rest := data; len(rest) > 0; line++ {
		l := rest
		if i := bytes.IndexAny(rest, "\r\n"); i >= 0 {
			l = rest[:i]
			if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
				i++
			}
			rest = rest[i+1:]
		} else {
			rest = nil
		}
		if line <= after {
			continue
		}
		if (bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("..."))) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t') {
			return line
		}
	}
	return 0
}

// Check refuses a node tree whose expansion (every alias followed) has more
// than lim.MaxNodes nodes, more than lim.MaxAliasNodes of them reached
// through aliases, or is deeper than lim.MaxDepth, and a recursive alias (an
// alias inside the node it refers to). Errors are *Error naming
// name and the line of the offending alias or node.
func Check(name string, n *yaml.Node, lim Limits) error {
	return newCounter(name, lim).check(n)
}

type counter struct {
	name  string
	lim   Limits
	total int
	// aliased counts the expanded nodes reached through aliases.
	aliased int
	// size and height memoise the expanded node count and height of
	// anchored nodes; active marks anchors being expanded (cycle check).
	size   map[*yaml.Node]int
	height map[*yaml.Node]int
	active map[*yaml.Node]bool
}

func newCounter(name string, lim Limits) *counter {
	return &counter{name: name, lim: lim.withDefaults(), size: map[*yaml.Node]int{}, height: map[*yaml.Node]int{}, active: map[*yaml.Node]bool{}}
}

func (c *counter) check(n *yaml.Node) error {
	s, _, err := c.walk(n, 1)
	if err != nil {
		return err
	}
	c.total += s
	if c.total > c.lim.MaxNodes {
		return c.tooMany(n)
	}
	return nil
}

func (c *counter) tooMany(n *yaml.Node) *Error {
	msg := fmt.Sprintf("the document has more than %d nodes", c.lim.MaxNodes)
	if c.aliased > 0 {
		msg = fmt.Sprintf("excessive aliasing: the document expands to more than %d nodes", c.lim.MaxNodes)
	}
	return &Error{Name: c.name, Line: n.Line, Msg: msg}
}

// walk returns the expanded size and height of n found at depth (1 = root).
// A literal (unaliased) node is walked once; an aliased one is walked once
// and then charged its memoised size at every alias. The running count is
// checked as it grows, so a bomb is refused as soon as its budget is spent.
func (c *counter) walk(n *yaml.Node, depth int) (size, height int, err error) {
	if n == nil {
		return 0, 0, nil
	}
	if depth > c.lim.MaxDepth {
		return 0, 0, &Error{Name: c.name, Line: n.Line, Msg: fmt.Sprintf("the document nests deeper than %d levels", c.lim.MaxDepth)}
	}
	if n.Kind == yaml.AliasNode {
		t := n.Alias
		if t == nil {
			return 1, 1, nil
		}
		if c.active[t] {
			return 0, 0, &Error{Name: c.name, Line: n.Line, Msg: fmt.Sprintf("alias *%s refers to a node that contains it (a recursive alias)", n.Value)}
		}
		s, ok := c.size[t]
		if !ok {
			c.active[t] = true
			var h int
			s, h, err = c.walkChildren(t, depth)
			delete(c.active, t)
			if err != nil {
				return 0, 0, err
			}
			c.size[t], c.height[t] = s, h
		}
		if depth+c.height[t]-1 > c.lim.MaxDepth {
			return 0, 0, &Error{Name: c.name, Line: n.Line, Msg: fmt.Sprintf("alias *%s makes the document nest deeper than %d levels", n.Value, c.lim.MaxDepth)}
		}
		c.aliased += s
		if c.aliased > c.lim.MaxAliasNodes {
			return 0, 0, &Error{Name: c.name, Line: n.Line, Msg: fmt.Sprintf("excessive aliasing: aliases expand to more than %d nodes (at alias *%s)", c.lim.MaxAliasNodes, n.Value)}
		}
		if c.total+s > c.lim.MaxNodes {
			return 0, 0, c.tooMany(n)
		}
		return s, c.height[t], nil
	}
	if n.Anchor != "" {
		// Anchored nodes are memoised when first reached, literally or
		// through an alias (an alias can only follow its anchor).
		if s, ok := c.size[n]; ok {
			return s, c.height[n], nil
		}
		c.active[n] = true
		s, h, err := c.walkChildren(n, depth)
		delete(c.active, n)
		if err != nil {
			return 0, 0, err
		}
		c.size[n], c.height[n] = s, h
		return s, h, nil
	}
	return c.walkChildren(n, depth)
}

// walkChildren counts n itself and its expanded children.
func (c *counter) walkChildren(n *yaml.Node, depth int) (size, height int, err error) {
	size, height = 1, 1
	for _, ch := range n.Content {
		s, h, err := c.walk(ch, depth+1)
		if err != nil {
			return 0, 0, err
		}
		size += s
		if size > c.lim.MaxNodes || c.total+size > c.lim.MaxNodes {
			return 0, 0, c.tooMany(ch)
		}
		height = max(height, h+1)
	}
	return size, height, nil
}
