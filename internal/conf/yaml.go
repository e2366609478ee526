package conf

import (
	"bytes"
	"encoding"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DecodeYAML decodes data into the struct pointed to by v and returns the
// document it read. Every mistake is reported at once, in a
// *ValidationError whose problems name their path and line: keys that
// match no field, keys written twice and values of the wrong type. On a
// mistake v is left as it is; an empty document leaves it too.
func DecodeYAML(data []byte, v any) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(err)
	}
	p := NewProblems("")
	check(&doc, reflect.TypeOf(v).Elem(), p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	// What check accepts decodes; strict decoding stays as a safeguard.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(err)
	}
	return &doc, nil
}

// DecodeNodeStrict decodes a node into the struct pointed to by v,
// reporting its mistakes as DecodeYAML does, with paths relative to n.
// yaml's strict mode does not reach inside custom UnmarshalYAML methods;
// those call this instead of node.Decode, and DecodeYAML places the
// problems under the method's field.
func DecodeNodeStrict(n *yaml.Node, v any) error {
	p := NewProblems("")
	check(n, reflect.TypeOf(v).Elem(), p)
	if err := p.Err(); err != nil {
		return err
	}
	return n.Decode(v)
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError turns an error of the yaml parser into a *ValidationError
// with the line it names.
func syntaxError(err error) error {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	p := NewProblems("")
	for _, m := range msgs {
		if sub := yamlLine.FindStringSubmatch(m); sub != nil {
			line, _ := strconv.Atoi(sub[1])
			p.AddLinef("", line, "%s", sub[2])
		} else {
			p.Addf("", "%s", strings.TrimPrefix(m, "yaml: "))
		}
	}
	return p.Err()
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// check records in p every mistake in n, read as a value of type t.
func check(n *yaml.Node, t reflect.Type, p Problems) {
	n = resolve(n)
	if n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // leaves the field as it is
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch pt := reflect.PointerTo(t); {
	case pt.Implements(unmarshalerType):
		checkUnmarshaler(n, t, p)
		return
	case pt.Implements(textUnmarshalerType) && n.Kind != yaml.ScalarNode:
		p.AddLinef("", n.Line, "want a string, got %s", describe(n))
		return
	case pt.Implements(textUnmarshalerType):
		checkUnmarshaler(n, t, p)
		return
	}
	switch t.Kind() {
	case reflect.Interface:
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			p.AddLinef("", n.Line, "want a mapping, got %s", describe(n))
			return
		}
		fields := fieldsOf(t)
		eachKey(n, p, func(k, v *yaml.Node) {
			ft, ok := fields[k.Value]
			if !ok {
				p.AddLinef(k.Value, k.Line, "unknown field%s", suggest(k.Value, keysOf(fields)))
				return
			}
			check(v, ft, p.Under(k.Value))
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.AddLinef("", n.Line, "want a mapping, got %s", describe(n))
			return
		}
		eachKey(n, p, func(k, v *yaml.Node) { check(v, t.Elem(), p.Under(k.Value)) })
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			p.AddLinef("", n.Line, "want a list, got %s", describe(n))
			return
		}
		for i, e := range n.Content {
			check(e, t.Elem(), p.Under("["+strconv.Itoa(i)+"]"))
		}
	default:
		if n.Kind != yaml.ScalarNode || n.Decode(reflect.New(t).Interface()) != nil {
			p.AddLinef("", n.Line, "want %s, got %s", kindName(t), describe(n))
		}
	}
}

// checkUnmarshaler records the mistakes of a value with its own YAML or
// text form, as its UnmarshalYAML or UnmarshalText reports them.
func checkUnmarshaler(n *yaml.Node, t reflect.Type, p Problems) {
	err := n.Decode(reflect.New(t).Interface())
	var ve *ValidationError
	var te *yaml.TypeError
	switch {
	case err == nil:
	case errors.As(err, &ve):
		p.Merge("", ve)
	case errors.As(err, &te):
		p.Merge("", syntaxError(te))
	default:
		p.AddLinef("", n.Line, "%v", err)
	}
}

// eachKey calls f with every key of the mapping n and its value, those
// of merged mappings (<<) included, and records keys written twice.
func eachKey(n *yaml.Node, p Problems, f func(k, v *yaml.Node)) {
	seen := map[string]int{}
	var walk func(n *yaml.Node, merged bool)
	walk = func(n *yaml.Node, merged bool) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				switch v = resolve(v); {
				case v.Kind == yaml.MappingNode:
					walk(v, true)
				case v.Kind == yaml.SequenceNode:
					for _, m := range v.Content {
						if m = resolve(m); m.Kind == yaml.MappingNode {
							walk(m, true)
						}
					}
				}
				continue
			}
			if line, dup := seen[k.Value]; dup && !merged {
				p.AddLinef(k.Value, k.Line, "written twice (first on line %d)", line)
				continue
			}
			if !merged {
				seen[k.Value] = k.Line
			}
			f(k, v)
		}
	}
	walk(n, false)
}

// fieldsOf maps the yaml keys of struct t to their types, the fields of
// inline structs included.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || tag == "-":
		case opts == "inline" && f.Type.Kind() == reflect.Struct:
			for k, ft := range fieldsOf(f.Type) {
				fields[k] = ft
			}
		case tag == "":
			fields[strings.ToLower(f.Name)] = f.Type
		default:
			fields[tag] = f.Type
		}
	}
	return fields
}

func keysOf(m map[string]reflect.Type) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// describe names what a node holds, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return strconv.Quote(n.Value)
	}
}

// kindName says what a scalar of type t is written as.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		return "a duration such as 1m30s"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "an integer"
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		return "a non-negative integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	default:
		return "a string"
	}
}
