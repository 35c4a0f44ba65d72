package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"github.com/rlbench/rlbench/internal/yamlguard"
	yaml3 "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	anyFullName       = "google.protobuf.Any"
	rateLimitFullName = "envoy.extensions.filters.http.ratelimit.v3.RateLimit"
	emptyTypeURL      = "type.googleapis.com/google.protobuf.Empty"
)

// lineIndex maps normalized paths (see normKey) to 1-based YAML lines. It
// is a trie of path segments, so its size is linear in the document's
// nodes whatever their depth.
type lineIndex struct {
	edges map[lineEdge]int32 // (parent node, segment) -> node
	lines []int              // the line of each node; node 0 is the root
}

// lineEdge is one path segment below a trie node: a normalized field or map
// key name (idx -1) or a list index.
type lineEdge struct {
	parent int32
	name   string
	idx    int32
}

func newLineIndex() *lineIndex {
	return &lineIndex{edges: map[lineEdge]int32{}, lines: []int{0}}
}

// normKey makes proto names and JSON (lowerCamel) names of a field compare
// equal: "http_filters" and "httpFilters" both become "httpfilters".
func normKey(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", ""))
}

func edgeOf(parent int32, s seg) lineEdge {
	if s.kind == segIndex {
		return lineEdge{parent: parent, idx: int32(s.idx)}
	}
	return lineEdge{parent: parent, name: normKey(s.name), idx: -1}
}

// child returns the node below parent for s, recording line (a later
// duplicate path overwrites the line of an earlier one).
func (idx *lineIndex) child(parent int32, s seg, line int) int32 {
	e := edgeOf(parent, s)
	id, ok := idx.edges[e]
	if !ok {
		id = int32(len(idx.lines))
		idx.lines = append(idx.lines, line)
		idx.edges[e] = id
		return id
	}
	idx.lines[id] = line
	return id
}

// buildLineIndex records the line of every mapping key and list item of n
// below trie node node. Aliases are followed; yamlguard.Parse has bounded
// what they expand to.
func buildLineIndex(n *yaml3.Node, node int32, idx *lineIndex) {
	switch n.Kind {
	case yaml3.DocumentNode:
		for _, c := range n.Content {
			buildLineIndex(c, node, idx)
		}
	case yaml3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			buildLineIndex(n.Content[i+1], idx.child(node, seg{kind: segField, name: k.Value}, k.Line), idx)
		}
	case yaml3.SequenceNode:
		for i, c := range n.Content {
			buildLineIndex(c, idx.child(node, seg{kind: segIndex, idx: i}, c.Line), idx)
		}
	case yaml3.AliasNode:
		if n.Alias != nil {
			buildLineIndex(n.Alias, node, idx)
		}
	}
}

// line returns the line of p or of its longest prefix present in the file.
func (idx *lineIndex) line(p path) int {
	node, line := int32(0), 0
	for _, s := range p {
		id, ok := idx.edges[edgeOf(node, s)]
		if !ok {
			break
		}
		node, line = id, idx.lines[id]
	}
	return line
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// decodeFile turns data into a Bootstrap, reporting every decode problem as
// a finding. It returns nil when the file cannot be decoded at all.
func (l *linter) decodeFile(f *fileState, data []byte) *bootstrapv3.Bootstrap {
	// The guard bounds every later expansion of the document (the line
	// index below follows aliases, and so does the YAML-to-JSON conversion).
	// A bootstrap is one document: a second one (after "---") would not be
	// checked, so it is refused (yamlguard.ParseOne) rather than ignored.
	doc, err := yamlguard.ParseOne(f.name, data, yamlguard.Limits{})
	if err != nil {
		var ge *yamlguard.Error
		if errors.As(err, &ge) {
			l.addAt(f.name, ge.Line, "", CodeDecode, LevelError, "YAML refused: "+ge.Msg)
			return nil
		}
		line := 0
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		l.addAt(f.name, line, "", CodeDecode, LevelError, "YAML syntax: "+strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	if doc == nil {
		l.addAt(f.name, 0, "", CodeEmpty, LevelError, emptyMsg("holds no YAML document (it is empty or only comments)"))
		return nil
	}
	if n, line := countListeners(doc); n > MaxListeners {
		l.addAt(f.name, line, "static_resources.listeners", CodeDecode, LevelError,
			fmt.Sprintf("more than %d listeners (%d), the most rlbench lint checks in one file; nothing in the file was checked", MaxListeners, n))
		return nil
	}
	buildLineIndex(doc, 0, f.lines)
	js, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		l.addAt(f.name, 0, "", CodeDecode, LevelError, "YAML to JSON: "+err.Error())
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		l.addAt(f.name, 0, "", CodeDecode, LevelError, "YAML to JSON: "+err.Error())
		return nil
	}
	if tree == nil {
		l.addAt(f.name, 1, "", CodeEmpty, LevelError, emptyMsg("is a null document"))
		return nil
	}
	if m, ok := tree.(map[string]any); !ok {
		l.addAt(f.name, 1, "", CodeDecode, LevelError, fmt.Sprintf("the bootstrap must be a mapping, got %s", jsonKind(tree)))
		return nil
	} else if len(m) == 0 {
		l.addAt(f.name, 1, "", CodeEmpty, LevelError, emptyMsg("is an empty mapping ({})"))
		return nil
	}
	bs := &bootstrapv3.Bootstrap{}
	tree = l.walkMessage(f, bs.ProtoReflect().Descriptor(), tree, nil)
	clean, err := json.Marshal(tree)
	if err != nil {
		l.add(f, nil, CodeDecode, LevelError, "re-encoding: "+err.Error())
		return nil
	}
	if err := protojson.Unmarshal(clean, bs); err != nil {
		// The per-field checks above should have caught everything; report
		// whatever protojson still objects to at the root.
		l.add(f, nil, CodeDecode, LevelError, cleanProtoErr(err))
		return nil
	}
	return bs
}

// MaxListeners is the most static listeners (static_resources.listeners)
// one linted file has: 10,000. A bootstrap with more is an E_DECODE
// finding naming the field's line and the cap, before anything of it is
// decoded: every listener is decoded, validated and checked, and a fleet
// that large takes its listeners from LDS.
const MaxListeners = 10_000

// countListeners returns the length of the document's
// static_resources.listeners sequence (either field name spelling,
// through aliases) and the line of its key; 0 when there is none.
func countListeners(doc *yaml3.Node) (n, line int) {
	get := func(n *yaml3.Node, key string) (*yaml3.Node, int) {
		for n != nil && (n.Kind == yaml3.DocumentNode || n.Kind == yaml3.AliasNode) {
			if n.Kind == yaml3.AliasNode {
				n = n.Alias
			} else if len(n.Content) > 0 {
				n = n.Content[0]
			} else {
				n = nil
			}
		}
		if n == nil || n.Kind != yaml3.MappingNode {
			return nil, 0
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if normKey(n.Content[i].Value) == key {
				return n.Content[i+1], n.Content[i].Line
			}
		}
		return nil, 0
	}
	sr, _ := get(doc, "staticresources")
	ls, line := get(sr, "listeners")
	for ls != nil && ls.Kind == yaml3.AliasNode {
		ls = ls.Alias
	}
	if ls == nil || ls.Kind != yaml3.SequenceNode {
		return 0, 0
	}
	return len(ls.Content), line
}

func emptyMsg(what string) string {
	return "the file " + what + ": there is no Envoy bootstrap to check"
}

// cleanProtoErr strips protojson's "proto: (line 1:234): " position, and
// the one inside "syntax error (line 1:93): ", which refer to the internal
// JSON re-encoding, not to the user's file.
func cleanProtoErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "proto:")
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "(line ") {
		if i := strings.Index(s, "): "); i >= 0 {
			s = s[i+3:]
		}
	}
	s = protoPosRE.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, "\u00a0", " ")
}

// protoPosRE matches protojson's position of an error in its input.
var protoPosRE = regexp.MustCompile(` \(line \d+:\d+\)`)

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// isLeafMessage reports whether md has a custom protojson mapping (the
// google.protobuf well-known types other than Any), so it is checked as a
// whole rather than field by field.
func isLeafMessage(md protoreflect.MessageDescriptor) bool {
	return md.FullName().Parent() == "google.protobuf" && md.FullName() != anyFullName
}

// walkMessage checks obj (a decoded JSON value) against md, reporting and
// removing unknown fields, values protojson cannot decode and duplicate oneof
// members, so that the remainder decodes. It returns the cleaned value.
// The walk extends p with push: a path is only read (into a finding's
// string) while its subtree is walked, never kept.
func (l *linter) walkMessage(f *fileState, md protoreflect.MessageDescriptor, obj any, p path) any {
	if md.FullName() == anyFullName {
		return l.walkAny(f, obj, p)
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return obj // the caller's leaf check reports the type error
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	oneofs := map[protoreflect.FullName]string{}
	for _, k := range keys {
		fd := md.Fields().ByJSONName(k)
		if fd == nil {
			fd = md.Fields().ByTextName(k)
		}
		if fd == nil {
			l.unknownField(f, md, k, m[k], p)
			f.droppedParents[p.String()] = true
			delete(m, k)
			continue
		}
		fp := p.push(seg{kind: segField, name: string(fd.Name())})
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && m[k] != nil {
			if prev, dup := oneofs[od.FullName()]; dup {
				f.droppedParents[p.String()] = true
				l.add(f, fp, CodeDecode, LevelError, fmt.Sprintf("%s and %s are both set, but they are members of oneof %s (only one may be set)", prev, fd.Name(), od.Name()))
				delete(m, k)
				continue
			}
			oneofs[od.FullName()] = string(fd.Name())
		}
		v, keep := l.walkField(f, md, fd, k, m[k], fp)
		if !keep {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	return m
}

// walkField checks one field value; keep is false when it must be dropped.
func (l *linter) walkField(f *fileState, md protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor, k string, v any, p path) (any, bool) {
	if v == nil {
		return v, true
	}
	msgVal := fd.Message()
	if fd.IsMap() {
		msgVal = fd.MapValue().Message()
	}
	structured := msgVal != nil && !isLeafMessage(msgVal)
	switch {
	case fd.IsMap() && structured:
		mm, ok := v.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(mm))
		for mk := range mm {
			keys = append(keys, mk)
		}
		sort.Strings(keys)
		for _, mk := range keys {
			if mm[mk] == nil {
				continue
			}
			mm[mk] = l.walkMessage(f, msgVal, mm[mk], p.push(seg{kind: segKey, name: mk}))
		}
	case fd.IsList() && structured:
		arr, ok := v.([]any)
		if !ok {
			break
		}
		for i := range arr {
			if arr[i] == nil {
				continue
			}
			arr[i] = l.walkMessage(f, msgVal, arr[i], p.push(seg{kind: segIndex, idx: i}))
		}
	case structured:
		v = l.walkMessage(f, msgVal, v, p)
	}
	// Check that the (cleaned) value decodes as this field of md. Its
	// messages were checked field by field above, so each is decoded as a
	// stub (shallow): decoding the whole value here, at every level, was
	// work of the document's size times its depth.
	check := v
	if structured {
		check = shallow(fd, msgVal, v)
	}
	if err := decodeField(md, k, check); err != nil {
		l.add(f, p, CodeDecode, LevelError, cleanProtoErr(err))
		f.droppedParents[p[:len(p)-1].String()] = true
		return nil, false
	}
	return v, true
}

// push is p extended by s in p's own array when it has room: a sibling's
// push overwrites it. For the depth-first walk of decodeFile only, whose
// paths are not kept (with copies the path, which made the walk's paths
// cost the document's size times its depth).
func (p path) push(s seg) path { return append(p, s) }

// shallow returns v, a structured field's value (fd of messages md), with
// each message replaced by its stub (stub): the list, map and non-object
// values that decode errors are about stay as they are.
func shallow(fd protoreflect.FieldDescriptor, md protoreflect.MessageDescriptor, v any) any {
	switch {
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = stub(md, e)
		}
		return out
	case fd.IsMap():
		mm, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(mm))
		for k, e := range mm {
			out[k] = stub(md, e)
		}
		return out
	}
	return stub(md, v)
}

// stub stands for v, a message md whose fields walkMessage has checked one
// by one: {} (an Any: its "@type" alone), which decodes exactly when v does.
// v is kept whole when it is not an object, when it sets one field twice
// (by its JSON and its proto name: the decoder refuses that, each field
// alone passes), or when it is an Any of a well-known type, checked as a
// whole (isLeafMessage).
func stub(md protoreflect.MessageDescriptor, v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if md.FullName() == anyFullName {
		t, _ := m["@type"].(string)
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(t)
		if err != nil || isLeafMessage(mt.Descriptor()) {
			return v
		}
		md = mt.Descriptor()
		if setTwice(md, m, "@type") {
			return v
		}
		return map[string]any{"@type": t}
	}
	if setTwice(md, m, "") {
		return v
	}
	return map[string]any{}
}

// setTwice reports whether two keys of m (other than skip) name one field
// of md.
func setTwice(md protoreflect.MessageDescriptor, m map[string]any, skip string) bool {
	if len(m) < 2 {
		return false
	}
	seen := make(map[protoreflect.FieldNumber]bool, len(m))
	for k := range m {
		if k == skip {
			continue
		}
		fd := md.Fields().ByJSONName(k)
		if fd == nil {
			fd = md.Fields().ByTextName(k)
		}
		if fd == nil {
			return true // not expected after walkMessage: decode it whole
		}
		if seen[fd.Number()] {
			return true
		}
		seen[fd.Number()] = true
	}
	return false
}

// decodeField unmarshals {k: v} into a fresh md message.
func decodeField(md protoreflect.MessageDescriptor, k string, v any) error {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil {
		return err
	}
	b, err := json.Marshal(map[string]any{k: v})
	if err != nil {
		return err
	}
	return protojson.Unmarshal(b, mt.New().Interface())
}

// walkAny resolves an Any's @type and walks its inline fields against the
// resolved message. An unregistered type is replaced by google.protobuf.Empty
// after a W_UNCHECKED_TYPE finding.
func (l *linter) walkAny(f *fileState, obj any, p path) any {
	m, ok := obj.(map[string]any)
	if !ok {
		return obj
	}
	t, _ := m["@type"].(string)
	if t == "" {
		l.add(f, p, CodeDecode, LevelError, `typed config has no "@type" (e.g. "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router)`)
		return map[string]any{"@type": emptyTypeURL, "value": map[string]any{}}
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(t)
	if err != nil {
		if errors.Is(err, protoregistry.NotFound) {
			l.add(f, p.field("@type"), CodeUncheckedType, LevelWarning, fmt.Sprintf("type %s is not known to rlbench lint; its contents were not checked (Envoy rejects a type it does not know)", t))
		} else {
			l.add(f, p.field("@type"), CodeDecode, LevelError, fmt.Sprintf("bad @type %q: %v", t, err))
		}
		return map[string]any{"@type": emptyTypeURL, "value": map[string]any{}}
	}
	md := mt.Descriptor()
	if isLeafMessage(md) {
		return m // WKT payload under "value"; protojson checks it
	}
	inner := make(map[string]any, len(m))
	for k, v := range m {
		if k != "@type" {
			inner[k] = v
		}
	}
	cleaned := l.walkMessage(f, md, inner, p).(map[string]any)
	cleaned["@type"] = t
	return cleaned
}

// unknownField reports field k unknown in md, with the special case of
// ext_authz's failure_mode_allow inside the ratelimit filter.
func (l *linter) unknownField(f *fileState, md protoreflect.MessageDescriptor, k string, v any, p path) {
	fp := p.field(k)
	if md.FullName() == rateLimitFullName && normKey(k) == "failuremodeallow" {
		allow, _ := v.(bool)
		f.failureModeAllow[p.String()] = true
		sense := "failure_mode_deny: true is the fail-closed setting (deny when the RLS is unreachable)"
		if allow {
			sense = "failure_mode_allow: true was meant as \"admit when the RLS is unreachable\", which the ratelimit filter already does by default (failure_mode_deny: false); delete it, or write failure_mode_deny: true to fail closed"
		} else {
			sense = "failure_mode_allow: false was meant as fail-closed; write failure_mode_deny: true instead"
		}
		l.add(f, fp, CodeFailureModeAllow, LevelError, "failure_mode_allow is an ext_authz field; the ratelimit filter (envoy.extensions.filters.http.ratelimit.v3.RateLimit) has failure_mode_deny, with the opposite sense, and Envoy rejects the unknown field. "+sense)
		return
	}
	msg := fmt.Sprintf("unknown field %q in %s", k, md.FullName())
	if s := closestField(md, k); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	l.add(f, fp, CodeDecode, LevelError, msg+"; Envoy rejects unknown fields in a static bootstrap")
}

func closestField(md protoreflect.MessageDescriptor, k string) string {
	best, bestD := "", 3
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		name := string(fields.Get(i).Name())
		if d := levenshtein(normKey(k), normKey(name)); d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// levenshtein is the edit distance between a and b (bytes).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			cur[j] = c
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// anyNode is one unpacked typed_config (Any) of a decoded bootstrap.
type anyNode struct {
	path path
	msg  proto.Message
}

// collectAnys unpacks every Any reachable from m (recursively, including
// Anys inside unpacked messages) in field order.
func collectAnys(m protoreflect.Message, p path, out *[]anyNode) {
	if m.Descriptor().FullName() == anyFullName {
		a, ok := m.Interface().(*anypb.Any)
		if !ok {
			return
		}
		inner, err := a.UnmarshalNew()
		if err != nil {
			return
		}
		if a.TypeUrl == emptyTypeURL {
			return
		}
		*out = append(*out, anyNode{path: p, msg: inner})
		collectAnys(inner.ProtoReflect(), p, out)
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		fp := p.field(string(fd.Name()))
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				continue
			}
			mp := m.Get(fd).Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				collectAnys(mp.Get(k).Message(), fp.key(k.String()), out)
			}
		case fd.IsList():
			if fd.Message() == nil {
				continue
			}
			lst := m.Get(fd).List()
			for j := 0; j < lst.Len(); j++ {
				collectAnys(lst.Get(j).Message(), fp.index(j), out)
			}
		case fd.Message() != nil:
			collectAnys(m.Get(fd).Message(), fp, out)
		}
	}
}
