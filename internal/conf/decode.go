package conf

import (
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// decoder sets Go values from a document check has accepted, as yaml.v3's
// Decode does, but enters structs and maps of string keys itself:
// yaml.v3 compares every key of a mapping with every other one, so a map
// of tens of thousands of entries (handlers written by a template) costs
// seconds, growing with the square of its size. Here every key costs the
// same. Everything else (scalars, lists, values with their own YAML or
// text form) is yaml.v3's to decode, one value at a time.
type decoder struct {
	structs structs
}

// decode sets v from n. As in yaml.v3, null resets a pointer, map, list
// or interface and leaves any other value as it is.
func (d decoder) decode(n *yaml.Node, v reflect.Value) error {
	n = resolve(n)
	if n == nil {
		return nil
	}
	if isNull(n) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
			v.SetZero()
		}
		return nil
	}
	t := v.Type()
	switch {
	case n.Kind != yaml.MappingNode, ownForm(t):
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.decode(n, v.Elem())
	case t.Kind() == reflect.Struct:
		return d.decodeStruct(n, v)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		return d.decodeMap(n, v)
	}
	return n.Decode(v.Addr().Interface())
}

// decodeStruct sets the fields of v that n's keys name.
func (d decoder) decodeStruct(n *yaml.Node, v reflect.Value) error {
	fields := d.structs.fields(v.Type())
	return merged(n, func(k *yaml.Node, name string, value *yaml.Node) error {
		f, ok := fields[name]
		if !ok { // check reports these; this is a safeguard
			return fmt.Errorf("line %d: field %s not found in type %s", k.Line, name, v.Type())
		}
		return d.decode(value, v.FieldByIndex(f.Index))
	})
}

// decodeMap adds an entry to v for every key of n, each value decoded
// anew, as yaml.v3 does; a null value adds the zero value, and leaves an
// entry v had.
func (d decoder) decodeMap(n *yaml.Node, v reflect.Value) error {
	t := v.Type()
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	return merged(n, func(_ *yaml.Node, name string, value *yaml.Node) error {
		key := reflect.New(t.Key()).Elem()
		key.SetString(name)
		e := reflect.New(t.Elem()).Elem()
		if r := resolve(value); r != nil && isNull(r) {
			if !v.MapIndex(key).IsValid() {
				v.SetMapIndex(key, e)
			}
			return nil
		}
		if err := d.decode(value, e); err != nil {
			return err
		}
		v.SetMapIndex(key, e)
		return nil
	})
}

// merged calls f with every key of the mapping n, by name, and its
// value, in yaml.v3's order of precedence: n's own keys, then those of
// the mappings its merge key (<<) names, in order, each with its own keys
// before those it merges; a name already seen is passed over. A null key
// is passed over, as yaml.v3 does.
func merged(n *yaml.Node, f func(k *yaml.Node, name string, v *yaml.Node) error) error {
	seen := map[string]bool{}
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		var merge *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMerge(k) {
				merge = v
				continue
			}
			name, ok, err := keyName(k)
			if err != nil {
				return err
			}
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			if err := f(k, name, v); err != nil {
				return err
			}
		}
		for _, m := range mergedMappings(merge) {
			if err := walk(m); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(n)
}

// keyName is the string a key decodes to; ok is false for a null key.
func keyName(k *yaml.Node) (name string, ok bool, err error) {
	k = resolve(k)
	switch {
	case isNull(k):
		return "", false, nil
	case k.Kind == yaml.ScalarNode && k.ShortTag() != "!!binary":
		return k.Value, true, nil
	}
	err = k.Decode(&name)
	return name, err == nil, err
}

// mergedMappings returns the mappings a merge key's value names: the
// mapping, or each of a list of them.
func mergedMappings(v *yaml.Node) []*yaml.Node {
	v = resolve(v)
	switch {
	case v == nil:
		return nil
	case v.Kind == yaml.MappingNode:
		return []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode:
		out := make([]*yaml.Node, 0, len(v.Content))
		for _, m := range v.Content {
			if m = resolve(m); m != nil && m.Kind == yaml.MappingNode {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge"
}

// ownForm reports whether values of t decode themselves: a
// yaml.Unmarshaler or an encoding.TextUnmarshaler.
func ownForm(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalerType)
}
