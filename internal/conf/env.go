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
// lookup is os.LookupEnv in production. Every bad value is reported.
func ApplyEnv(v any, prefix string, lookup func(string) (string, bool)) error {
	p := NewProblems("")
	applyEnv(reflect.ValueOf(v).Elem(), prefix, lookup, p)
	return p.Err()
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func applyEnv(v reflect.Value, name string, lookup func(string) (string, bool), p Problems) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshalerType):
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || tag == "-" {
				continue
			}
			child := name
			if opts != "inline" {
				if tag == "" {
					tag = strings.ToLower(f.Name)
				}
				child = name + "_" + envName(tag)
			}
			applyEnv(v.Field(i), child, lookup, p)
		}
		return
	case t.Kind() == reflect.Struct: // a section with its own YAML form: enter its fields too
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if f.IsExported() && tag != "-" && tag != "" {
				applyEnv(v.Field(i), name+"_"+envName(tag), lookup, p)
			}
		}
		return
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Struct:
		for _, k := range v.MapKeys() {
			e := reflect.New(t.Elem()).Elem()
			e.Set(v.MapIndex(k))
			applyEnv(e, name+"_"+envName(k.String()), lookup, p)
			v.SetMapIndex(k, e)
		}
		return
	}
	s, ok := lookup(name)
	if !ok {
		return
	}
	if err := setScalar(v, s); err != nil {
		p.Addf("", "environment %s: %v", name, err)
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
