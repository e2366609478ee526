package conf

import (
	"bytes"
	"encoding"
	"errors"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DecodeYAML decodes data, one YAML document, into the struct pointed to
// by v and returns the document. Every mistake is reported at once, in a
// *ValidationError whose problems name their path and line: keys that
// match no field, keys written twice, values of the wrong type, a second
// document (after ---) that is not empty, and aliases that add more than
// MaxAliasNodes nodes. On a mistake v is left as it is; an empty document
// leaves it too. The cost grows with the size of data, a map's entries
// included, and with the nodes aliases add.
func DecodeYAML(data []byte, v any) (*yaml.Node, error) {
	doc, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	s := structs{}
	if err := checkNode(doc, reflect.TypeOf(v).Elem(), s); err != nil {
		return nil, err
	}
	// What check accepts decodes; the decoder's own errors are a safeguard.
	if err := (decoder{s}).decode(doc, reflect.ValueOf(v).Elem()); err != nil {
		return nil, syntaxError(err)
	}
	return doc, nil
}

// parseDocument parses data, refusing a second document that is not
// empty: yaml.v3 would read the first alone, and a second one's settings
// (the servers of production, say) would be passed over without a word.
func parseDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(err)
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		switch {
		case errors.Is(err, io.EOF):
			return &doc, nil
		case err != nil:
			return nil, syntaxError(err)
		case resolve(&next) != nil && !isNull(resolve(&next)):
			p := NewProblems("")
			p.AddLinef("", next.Line, "a second YAML document (after ---): a configuration is one document, so write its settings into the first")
			return nil, p.Err()
		}
	}
}

// checkNode reports the mistakes in n, read as a value of type t; first
// that its aliases add no more than MaxAliasNodes nodes, so that check,
// which follows them, walks no more.
func checkNode(n *yaml.Node, t reflect.Type, s structs) error {
	if err := aliasProblem(n); err != nil {
		return err
	}
	p := NewProblems("")
	check(n, t, p, s)
	return p.Err()
}

// DecodeNodeStrict decodes a node into the struct pointed to by v,
// reporting its mistakes as DecodeYAML does, with paths relative to n.
// yaml's strict mode does not reach inside custom UnmarshalYAML methods;
// those call this instead of node.Decode, and DecodeYAML places the
// problems under the method's field.
func DecodeNodeStrict(n *yaml.Node, v any) error {
	s := structs{}
	if err := checkNode(n, reflect.TypeOf(v).Elem(), s); err != nil {
		return err
	}
	return (decoder{s}).decode(n, reflect.ValueOf(v).Elem())
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
func check(n *yaml.Node, t reflect.Type, p Problems, s structs) {
	n = resolve(n)
	if n == nil || isNull(n) {
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
		fields := s.fields(t)
		eachKey(n, p, func(k, v *yaml.Node) {
			f, ok := fields[k.Value]
			if !ok {
				p.AddLinef(k.Value, k.Line, "unknown field%s", suggest(k.Value, slices.Collect(maps.Keys(fields))))
				return
			}
			check(v, f.Type, p.Under(k.Value), s)
		})
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			p.AddLinef("", n.Line, "want a mapping, got %s", describe(n))
			return
		}
		eachKey(n, p, func(k, v *yaml.Node) { check(v, t.Elem(), p.Under(k.Value), s) })
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			p.AddLinef("", n.Line, "want a list, got %s", describe(n))
			return
		}
		for i, e := range n.Content {
			check(e, t.Elem(), p.Under("["+strconv.Itoa(i)+"]"), s)
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
// of merged mappings (<<) included, and records keys written twice and
// merge keys that merge no mapping.
func eachKey(n *yaml.Node, p Problems, f func(k, v *yaml.Node)) {
	seen := map[string]int{}
	var walk func(n *yaml.Node, merged bool)
	walk = func(n *yaml.Node, merged bool) {
		mergeLine := 0
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case isMerge(k) && mergeLine > 0:
				p.AddLinef(k.Value, k.Line, "written twice (first on line %d): merge a list of mappings instead", mergeLine)
			case isMerge(k):
				mergeLine = k.Line
				if !mergesMappings(v) {
					p.AddLinef(k.Value, k.Line, "want a mapping, or a list of mappings, to merge, got %s", describe(resolve(v)))
				}
				for _, m := range mergedMappings(v) {
					walk(m, true)
				}
			case merged:
				f(k, v)
			default:
				if line, dup := seen[k.Value]; dup {
					p.AddLinef(k.Value, k.Line, "written twice (first on line %d)", line)
					continue
				}
				seen[k.Value] = k.Line
				f(k, v)
			}
		}
	}
	walk(n, false)
}

// mergesMappings reports whether v, the value of a merge key, is a
// mapping or a list of mappings, as yaml.v3 requires.
func mergesMappings(v *yaml.Node) bool {
	v = resolve(v)
	if v != nil && v.Kind == yaml.SequenceNode {
		return len(mergedMappings(v)) == len(v.Content)
	}
	return v != nil && v.Kind == yaml.MappingNode
}

// structs holds the fields of each struct type a document is read as:
// a map of thousands of entries reads one type thousands of times.
type structs map[reflect.Type]map[string]reflect.StructField

// fields returns the fields of struct t by yaml key (see fieldsOf).
func (s structs) fields(t reflect.Type) map[string]reflect.StructField {
	f, ok := s[t]
	if !ok {
		f = fieldsOf(t)
		s[t] = f
	}
	return f
}

// fieldsOf maps the yaml keys of struct t to their fields, the fields
// of inline structs included, each with its index from t.
func fieldsOf(t reflect.Type) map[string]reflect.StructField {
	fields := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || tag == "-":
		case opts == "inline" && f.Type.Kind() == reflect.Struct:
			for k, sub := range fieldsOf(f.Type) {
				sub.Index = append([]int{i}, sub.Index...)
				fields[k] = sub
			}
		case tag == "":
			fields[strings.ToLower(f.Name)] = f
		default:
			fields[tag] = f
		}
	}
	return fields
}

// describe names what a node holds, for "want X, got Y".
func describe(n *yaml.Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
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
