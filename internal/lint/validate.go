package lint

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// pgvFieldError is the shape of protoc-gen-validate's generated
// <Message>ValidationError values.
type pgvFieldError interface {
	Field() string
	Reason() string
	Cause() error
}

// pgvMultiError is the shape of the generated <Message>MultiError values
// returned by ValidateAll.
type pgvMultiError interface {
	AllErrors() []error
}

// validate runs the message's generated ValidateAll (if any) and reports each
// violation as E_VALIDATE at its field path below p. Anys are not descended by
// the generated code; the caller validates each unpacked Any separately.
func (l *linter) validate(f *fileState, m proto.Message, p path) {
	v, ok := m.(interface{ ValidateAll() error })
	if !ok {
		return
	}
	if err := v.ValidateAll(); err != nil {
		l.validationErrors(f, err, m.ProtoReflect().Descriptor(), p)
	}
}

func (l *linter) validationErrors(f *fileState, err error, md protoreflect.MessageDescriptor, p path) {
	if me, ok := err.(pgvMultiError); ok {
		for _, e := range me.AllErrors() {
			l.validationErrors(f, e, md, p)
		}
		return
	}
	fe, ok := err.(pgvFieldError)
	if !ok {
		l.add(f, p, CodeValidate, LevelError, err.Error())
		return
	}
	q, sub := resolveValidationField(md, fe.Field(), p)
	cause := fe.Cause()
	if cause != nil {
		if _, nested := cause.(pgvMultiError); nested && sub != nil {
			l.validationErrors(f, cause, sub, q)
			return
		}
		if _, nested := cause.(pgvFieldError); nested && sub != nil {
			l.validationErrors(f, cause, sub, q)
			return
		}
	}
	msg := fe.Reason()
	if len(q) > 0 && f.droppedParents[q[:len(q)-1].String()] && strings.Contains(msg, "required") {
		return // a consequence of a field dropped for a decode finding
	}
	if cause != nil {
		msg += ": " + cause.Error()
	}
	l.add(f, q, CodeValidate, LevelError, fmt.Sprintf("%s (%s)", msg, md.FullName()))
}

// resolveValidationField turns a pgv field name such as "StaticResources",
// "Listeners[0]" or "TypedPerFilterConfig[envoy.filters.http.x]" into path
// segments with proto field names, and returns the descriptor of the message
// the field holds (nil for scalars).
func resolveValidationField(md protoreflect.MessageDescriptor, name string, p path) (path, protoreflect.MessageDescriptor) {
	base, sub, hasSub := name, "", false
	if i := strings.IndexByte(name, '['); i >= 0 && strings.HasSuffix(name, "]") {
		base, sub, hasSub = name[:i], name[i+1:len(name)-1], true
	}
	var fd protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if normKey(string(fields.Get(i).Name())) == normKey(base) {
			fd = fields.Get(i)
			break
		}
	}
	if fd == nil {
		q := p.field(toSnake(base))
		if hasSub {
			q = q.key(sub)
		}
		return q, nil
	}
	q := p.field(string(fd.Name()))
	var next protoreflect.MessageDescriptor
	switch {
	case fd.IsMap():
		if hasSub {
			q = q.key(sub)
		}
		next = fd.MapValue().Message()
	case fd.IsList():
		if hasSub {
			var n int
			if _, err := fmt.Sscanf(sub, "%d", &n); err == nil {
				q = q.index(n)
			}
		}
		next = fd.Message()
	default:
		next = fd.Message()
	}
	return q, next
}

func toSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r + 'a' - 'A')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
