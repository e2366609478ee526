package conf

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ApplyEnv overrides fields of the struct pointed to by v from environment
// variables. A field's variable is prefix and the path of yaml tags down to
// it, upper-cased and joined with "_": the field tagged "servers" in the
// section tagged "connection" is CORRAL_CONNECTION_SERVERS. Lists are
// comma-separated; maps of sections are entered by their existing keys.
// lookup is os.LookupEnv in production. It returns the keys it set; every
// bad value is reported.
func ApplyEnv(v any, prefix string, lookup func(string) (string, bool)) (Keys, error) {
	p := NewProblems("")
	set := Keys{}
	e := envWalk{lookup: lookup, problems: p, set: set}
	e.apply(reflect.ValueOf(v).Elem(), prefix, "")
	return set, p.Err()
}

// envWalk is one pass of ApplyEnv over a configuration.
type envWalk struct {
	lookup   func(string) (string, bool)
	problems Problems
	set      Keys
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (e envWalk) apply(v reflect.Value, name, path string) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType):
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || tag == "-" {
				continue
			}
			child, childPath := name, path
			if opts != "inline" {
				if tag == "" {
					tag = strings.ToLower(f.Name)
				}
				child, childPath = name+"_"+envName(tag), join(path, tag)
			}
			e.apply(v.Field(i), child, childPath)
		}
		return
	case t.Kind() == reflect.Struct: // a section with its own YAML form: enter its fields too
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.IsExported() && tag != "-" && tag != "" {
				e.apply(v.Field(i), name+"_"+envName(tag), join(path, tag))
			}
		}
		return
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Struct:
		for _, k := range v.MapKeys() {
			entry := reflect.New(t.Elem()).Elem()
			entry.Set(v.MapIndex(k))
			e.apply(entry, name+"_"+envName(k.String()), join(path, k.String()))
			v.SetMapIndex(k, entry)
		}
		return
	}
	s, ok := e.lookup(name)
	if !ok {
		return
	}
	if err := setScalar(v, s); err != nil {
		e.problems.Addf("", "environment %s: %v", name, err)
		return
	}
	for p := path; p != ""; p, _ = cutLast(p) {
		e.set[p] = true
	}
}

func setScalar(v reflect.Value, s string) error {
	t := v.Type()
	switch {
	case t.Kind() == reflect.String:
		v.SetString(s)
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Struct:
		var parts []string
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				parts = append(parts, part)
			}
		}
		l := reflect.MakeSlice(t, len(parts), len(parts))
		for i, part := range parts {
			if err := setScalar(l.Index(i), part); err != nil {
				return err
			}
		}
		v.Set(l)
		return nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		return fmt.Errorf("%s cannot be set from the environment", t)
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
	ptr := reflect.New(t)
	if err := n.Decode(ptr.Interface()); err != nil {
		return fmt.Errorf("%q is not a valid %s", s, t)
	}
	v.Set(ptr.Elem())
	return nil
}

func envName(tag string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(tag))
}

// cutLast drops the last element of a key path: "a.b.c" -> "a.b".
func cutLast(path string) (string, bool) {
	i := strings.LastIndex(path, ".")
	if i < 0 {
		return "", false
	}
	return path[:i], true
}
