// Package schemagen generates the JSON Schemas (draft 2020-12) in schemas/
// from the Go types of rlbench's JSON files, with
// github.com/invopop/jsonschema: property names, types and required fields
// come from the structs and their json tags, descriptions from their doc
// comments, and the constraints the types cannot say (enums of closed sets,
// minimums, the syntax of ranges, durations and rates, which plan fields the
// loader requires) from the rules in rules.go, written with the Go constants
// that own each value.
//
// `go generate ./...` runs it (schemas/schemas.go: internal/cmd/schemagen);
// TestCommittedSchemasAreGenerated fails when a committed file differs from
// what Generate returns, so a field added to a type without regenerating is
// caught. The output is deterministic: properties in struct order, $defs and
// every other object sorted by key, two-space indent, a final newline.
package schemagen

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/rlbench/rlbench/evidence/buildinfo"
	"github.com/rlbench/rlbench/evidence/safefile"
	"github.com/rlbench/rlbench/schemas"
)

// Module is rlbench's module path (buildinfo.Module), the base of the Go comments' import paths.
const Module = buildinfo.Module

// commentDirs are the package directories (relative to the repository root,
// with their subdirectories) whose doc comments become descriptions.
var commentDirs = []string{"evidence", "analyze", "collect", "events", "internal/runner", "internal/lab/proxy"}

// File is one generated schema file.
type File struct {
	// Name is the file name in schemas/, schemas.FileName of the ID.
	Name string
	// ID is the schema ID, "rlbench.<thing>/v<N>".
	ID   string
	Data []byte
}

// Generate returns every schema file, sorted by name. root is the
// repository root: the Go sources of commentDirs under it give the
// descriptions. It fails when a rule names no field or type of the schemas
// (a renamed field must take its rule along) or when two Go types would
// share a definition name.
func Generate(root string) ([]File, error) {
	comments, err := readComments(root)
	if err != nil {
		return nil, err
	}
	g := &gen{comments: comments, used: map[string]bool{}}
	var files []File
	for _, sp := range specs() {
		data, err := g.file(sp)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sp.id, err)
		}
		files = append(files, File{Name: schemas.FileName(sp.id), ID: sp.id, Data: data})
	}
	var unused []string
	for _, keys := range []iter.Seq[string]{maps.Keys(fieldRules), maps.Keys(typeRules), maps.Keys(addedLater), maps.Keys(planRequired)} {
		for k := range keys {
			if !g.used[k] {
				unused = append(unused, k)
			}
		}
	}
	if len(unused) > 0 {
		sort.Strings(unused)
		return nil, fmt.Errorf("rules name no field or type of the schemas (renamed or removed? update internal/schemagen/rules.go): %s",
			strings.Join(unused, ", "))
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// readComments reads the doc comments of commentDirs, whitespace tidied.
func readComments(root string) (map[string]string, error) {
	r := &jsonschema.Reflector{}
	for _, d := range commentDirs {
		if err := addComments(r, root, d); err != nil {
			return nil, err
		}
	}
	for k, v := range r.CommentMap {
		r.CommentMap[k] = tidy(v)
	}
	return r.CommentMap, nil
}

// tidy turns doc comment text into a description: the lines of a paragraph
// joined by spaces, paragraphs separated by a blank line, and indented lines
// (code, list items) kept as lines.
func tidy(s string) string {
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(s), "\n\n") {
		var lines []string
		item := false
		for _, l := range strings.Split(p, "\n") {
			t := strings.TrimSpace(l)
			switch {
			case t == "":
			case len(lines) == 0:
				lines = append(lines, t)
			case l != t && (strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ")):
				lines, item = append(lines, t), true
			case l != t && !item:
				lines = append(lines, t)
			default:
				lines[len(lines)-1] += " " + t
			}
		}
		if len(lines) > 0 {
			paras = append(paras, strings.Join(lines, "\n"))
		}
	}
	return strings.Join(paras, "\n\n")
}

// spec is one schema file.
type spec struct {
	// id is the schema ID; what says which file it describes.
	id, what string
	// root is the Go type of the document; oneOf lists the types of a
	// document that has several shapes (root is then nil).
	root  reflect.Type
	oneOf []reflect.Type
	// consts sets the "schema" property of a definition (by name) to a constant.
	consts map[string]string
	// ranges is how evidence.Range is written in this file.
	ranges rangeMode
	// plan: the file is written by people and required fields are those of
	// planRequired, not every field without omitempty.
	plan bool
}

// gen holds the comments and records the rules used.
type gen struct {
	comments map[string]string
	used     map[string]bool
}

// goName is "<package name>.<Type>", the key of typeRules.
func goName(t reflect.Type) string { return path.Base(t.PkgPath()) + "." + t.Name() }

// comment is the doc comment of t (field "" ) or of its field.
func (g *gen) comment(t reflect.Type, field string) string {
	k := t.PkgPath() + "." + t.Name()
	if field != "" {
		k += "." + field
	}
	return g.comments[k]
}

// file generates the schema of one spec and encodes it.
func (g *gen) file(sp spec) ([]byte, error) {
	types := map[string]reflect.Type{} // definition name -> struct type
	var nameErr error
	r := &jsonschema.Reflector{
		Anonymous:                  true,
		RequiredFromJSONSchemaTags: sp.plan,
		CommentMap:                 g.comments,
		Namer: func(t reflect.Type) string {
			if t.Kind() != reflect.Struct || t.Name() == "" {
				return ""
			}
			if o, ok := types[t.Name()]; ok && o != t && nameErr == nil {
				nameErr = fmt.Errorf("two types named %s: %s and %s", t.Name(), o.PkgPath(), t.PkgPath())
			}
			types[t.Name()] = t
			return t.Name()
		},
	}
	special := map[string]*jsonschema.Schema{}
	var needs []reflect.Type
	r.Mapper = func(t reflect.Type) *jsonschema.Schema {
		def, name := g.special(t, sp.ranges)
		if def != nil {
			needs = append(needs, specialNeeds[t]...)
		}
		if def == nil {
			if ownJSON(t) && nameErr == nil {
				nameErr = fmt.Errorf("%s has its own JSON form (a MarshalJSON/UnmarshalJSON or text method): "+
					"describe it in special() of internal/schemagen/specs.go", goName(t))
			}
			return nil
		}
		special[name] = def
		return &jsonschema.Schema{Ref: "#/$defs/" + name}
	}
	defs := jsonschema.Definitions{}
	roots := sp.oneOf
	if sp.root != nil {
		roots = []reflect.Type{sp.root}
	}
	for _, t := range roots {
		s := r.ReflectFromType(t)
		for k, v := range s.Definitions {
			defs[k] = v
		}
	}
	for i := 0; i < len(needs); i++ { // reflecting a need may add needs
		for k, v := range r.ReflectFromType(needs[i]).Definitions {
			defs[k] = v
		}
	}
	if nameErr != nil {
		return nil, nameErr
	}
	for name, t := range types {
		if d := defs[name]; d != nil && d.Properties != nil { // not a special type
			g.constrain(d, t, sp)
		}
	}
	for name, id := range sp.consts {
		d := defs[name]
		if d == nil || d.Properties == nil {
			return nil, fmt.Errorf("consts: no definition %s", name)
		}
		p, ok := d.Properties.Get("schema")
		if !ok {
			return nil, fmt.Errorf("consts: %s has no schema property", name)
		}
		p.Const = id
	}
	for k, v := range special {
		defs[k] = v
	}

	var root *jsonschema.Schema
	if sp.root != nil {
		name := sp.root.Name()
		root = defs[name]
		delete(defs, name)
		if referenced(defs, name) {
			return nil, fmt.Errorf("root type %s is referenced by another definition", name)
		}
	} else {
		root = &jsonschema.Schema{}
		for _, t := range sp.oneOf {
			root.OneOf = append(root.OneOf, &jsonschema.Schema{Ref: "#/$defs/" + t.Name()})
		}
		root.Description = "One of the shapes that load: " + strings.Join(typeNames(sp.oneOf), ", ") + "."
	}
	root.Version = jsonschema.Version
	root.ID = jsonschema.ID(schemas.BaseURL + schemas.FileName(sp.id))
	root.Comments = "Generated from the Go types by internal/cmd/schemagen; do not edit: run go generate ./..."
	root.Title = sp.id + ": " + sp.what
	if len(defs) > 0 {
		root.Definitions = defs
	}
	return encode(root)
}

func typeNames(ts []reflect.Type) []string {
	var out []string
	for _, t := range ts {
		out = append(out, goName(t))
	}
	return out
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// ownJSON reports whether t (or *t) encodes or decodes itself, so that its
// fields do not describe its JSON form.
func ownJSON(t reflect.Type) bool {
	for _, i := range []reflect.Type{jsonMarshaler, jsonUnmarshaler, textMarshaler, textUnmarshaler} {
		if t.Implements(i) || (t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(i)) {
			return true
		}
	}
	return false
}

// referenced reports whether a definition refers to #/$defs/name.
func referenced(defs jsonschema.Definitions, name string) bool {
	for _, d := range defs {
		b, _ := json.Marshal(d)
		if bytes.Contains(b, []byte(`"#/$defs/`+name+`"`)) {
			return true
		}
	}
	return false
}

// constrain applies the field and type rules and the nullable rule to the
// definition s of struct type t.
func (g *gen) constrain(s *jsonschema.Schema, t reflect.Type, sp spec) {
	g.fields(s, t, sp)
	if r, ok := typeRules[goName(t)]; ok {
		g.used[goName(t)] = true
		r(s)
	}
}

// fields walks the fields of t as encoding/json does (embedded structs
// without a name are flattened) and constrains their properties in s.
//
// A field without a doc comment of its own takes the comment of an earlier
// field of the struct that names it ("// Method and URI are ..." above
// Method documents URI too).
func (g *gen) fields(s *jsonschema.Schema, t reflect.Type, sp spec) {
	var docs []string // the doc comments of the fields so far
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		doc := g.comment(t, f.Name)
		if doc != "" {
			docs = append(docs, doc)
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(s, ft, sp)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		prop, ok := s.Properties.Get(name)
		if !ok {
			continue
		}
		if prop.Description == "" && doc == "" {
			for j := len(docs) - 1; j >= 0; j-- {
				if names(docs[j], f.Name) {
					prop.Description = docs[j]
					break
				}
			}
		}
		k := goName(t) + "." + f.Name
		if r, ok := fieldRules[k]; ok {
			g.used[k] = true
			r(prop)
		}
		if addedLater[k] {
			g.used[k] = true
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
		}
		if sp.plan && planRequired[k] {
			g.used[k] = true
			s.Required = append(s.Required, name)
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if f.Type.Kind() == reflect.Pointer && !omit {
			// encoding/json writes a nil pointer as null.
			s.Properties.Set(name, &jsonschema.Schema{Description: prop.Description,
				OneOf: []*jsonschema.Schema{{Type: "null"}, withoutDescription(prop)}})
		}
	}
}

// names reports whether the text mentions the Go identifier name as a word.
func names(text, name string) bool {
	for i := strings.Index(text, name); i >= 0; {
		end := i + len(name)
		if (i == 0 || !isIdent(text[i-1])) && (end == len(text) || !isIdent(text[end])) {
			return true
		}
		j := strings.Index(text[end:], name)
		if j < 0 {
			return false
		}
		i = end + j
	}
	return false
}

func isIdent(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func withoutDescription(s *jsonschema.Schema) *jsonschema.Schema {
	c := *s
	c.Description = ""
	return &c
}

// encode writes the schema as indented JSON without HTML escapes (the
// descriptions hold <proxy> and & as they are) and with a final newline.
func encode(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(unescapeHTML(b), '\n'), nil
}

// unescapeHTML undoes encoding/json's \u003c, \u003e and \u0026 escapes
// inside strings (it cannot be turned off for the values a MarshalJSON
// method encodes itself); other escapes are kept as they are.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}

// addComments reads the doc comments of the package directory dir (relative
// to root) and its subdirectories into r.CommentMap.
func addComments(r *jsonschema.Reflector, root, dir string) error {
	// AddGoComments names a package by the path it walks joined to a base:
	// walk root/dir with an empty base and put the module path in its place.
	abs := filepath.Join(root, filepath.FromSlash(dir))
	tmp := &jsonschema.Reflector{}
	if err := tmp.AddGoComments("", abs, jsonschema.WithFullComment()); err != nil {
		return fmt.Errorf("read doc comments of %s: %w", dir, err)
	}
	if r.CommentMap == nil {
		r.CommentMap = map[string]string{}
	}
	prefix := filepath.ToSlash(abs)
	for k, v := range tmp.CommentMap {
		// k is "<abs dir>[/<sub>].<Type>[.<Field>]".
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		r.CommentMap[Module+"/"+dir+k[len(prefix):]] = v
	}
	return nil
}

// Write writes the files into dir (created if needed), leaving a file whose
// content is unchanged untouched, and removes every other *.schema.json in
// dir: a schema no type generates any more must not linger.
func Write(dir string, files []File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, f := range files {
		keep[f.Name] = true
		p := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, f.Data) {
			continue
		}
		if err := safefile.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	stale, err := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	if err != nil {
		return err
	}
	for _, p := range stale {
		if !keep[filepath.Base(p)] && !schemas.IsFrozen(filepath.Base(p)) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}
