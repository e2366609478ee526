package conf

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Keys are the fields a configuration file, or the environment, set: the
// paths of their yaml tags, such as "handlers.orders.workers". A field set
// to its zero value is in Keys too, which is how a file turns a setting
// off.
type Keys map[string]bool

// KeysOf returns the path of every key of the mappings in n, nested ones
// included.
func KeysOf(n *yaml.Node) Keys {
	k := Keys{}
	k.collect("", n)
	return k
}

func (k Keys) collect(prefix string, n *yaml.Node) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if isMerge(key) {
			// A merge key's mapping (or each of a sequence of them) sets
			// its keys where it is merged.
			if v := resolve(value); v != nil && v.Kind == yaml.SequenceNode {
				for _, m := range v.Content {
					k.collect(prefix, m)
				}
			} else {
				k.collect(prefix, value)
			}
			continue
		}
		path := join(prefix, key.Value)
		k[path] = true
		k.collect(path, value)
	}
}

// resolve follows documents and aliases to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) > 0:
			n = n.Content[0]
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

// Add records every key of other below prefix.
func (k Keys) Add(prefix string, other Keys) {
	for path := range other {
		k[join(prefix, path)] = true
	}
}

// Override sets in *dst every field of src that is not zero or that keys
// name below prefix (the path of src in the file, "handlers.orders"),
// entering structs field by field (inline ones at the same level); a
// pointer, a slice or a map is replaced whole. So a file overrides with
// every key it writes, false and zero included, and a configuration built
// in code, whose keys are unknown (nil), with its non-zero fields. Its
// cost is that of T's fields, however many keys there are.
func Override[T any](dst *T, src T, keys Keys, prefix string) {
	override(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src), keys, prefix)
}

func override(dst, src reflect.Value, keys Keys, prefix string) {
	t := dst.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || tag == "-" {
			continue
		}
		d, s := dst.Field(i), src.Field(i)
		if opts == "inline" {
			override(d, s, keys, prefix)
			continue
		}
		if tag == "" {
			tag = strings.ToLower(f.Name)
		}
		path := join(prefix, tag)
		switch {
		case f.Type.Kind() == reflect.Struct:
			override(d, s, keys, path)
		case keys[path] || !s.IsZero():
			d.Set(s)
		}
	}
}
