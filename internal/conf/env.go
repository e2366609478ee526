package conf

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ApplyEnv overrides fields of the struct pointed to by v from the
// variables of environ ("NAME=value", as os.Environ returns them; a later
// one wins) whose names start with prefix and "_". A field's variable is
// prefix and the path of yaml keys down to it, upper-cased, with "_" for
// "." and "-", joined with "_": the field tagged "servers" in the section
// tagged "connection" is CORRAL_CONNECTION_SERVERS, and the workers of the
// entry orders of the map tagged "handlers" is
// CORRAL_HANDLERS_ORDERS_WORKERS. Lists are comma-separated, each
// element trimmed, and no element may be empty; other values read as in
// YAML. Only the map entries v has are reached.
//
// Every variable under the prefix must name exactly one field: one that
// names none (a typo, an entry v lacks) or two (the entries order_events
// and order-events) is reported, as is every bad value, at once in a
// *ValidationError; then v is left as it is. The variables Kubernetes
// gives every pod for a Service named like the prefix (CORRAL_SERVICE_HOST,
// CORRAL_PORT_4222_TCP...) are not Corral's and are passed over, provided
// no field is tagged service or port. ApplyEnv returns the keys it set.
//
// A variable never unsets what it names: an empty value, a list of no
// elements, and YAML's null (~, null) for a field that is not a string are
// each an error naming the variable ("set it to a value, or unset it"),
// not a reset to the default. A variable that reset a field would turn a
// file's production settings into the defaults unseen: with no servers,
// an embedded server with local storage. To unset a field, change the
// file. A section with a scalar shorthand in YAML (see Shorthand) is set
// by its own variable too; that variable and the field's own are one
// setting, and setting both is an error.
func ApplyEnv(v any, prefix string, environ []string) (Keys, error) {
	p := NewProblems("")
	vars := map[string]string{}
	for _, kv := range environ {
		if name, value, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, prefix+"_") && !serviceLink(name, prefix) {
			vars[name] = value
		}
	}
	root := reflect.ValueOf(v).Elem()

	// The variable of every field, and of every map that a variable could
	// have meant to extend.
	fields := map[string][]string{} // variable -> paths
	types := map[string]reflect.Type{}
	entries := map[string]string{} // variable prefix of a map's entries -> its path
	walkEnv(root, prefix, "", func(_ reflect.Value, name, path string, t reflect.Type) {
		fields[name] = append(fields[name], path)
		types[path] = t
	}, func(name, path string) { entries[name+"_"] = path })

	values := map[string]reflect.Value{} // path -> value to set
	setBy := map[string]string{}         // path -> the variable that set it
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		paths := fields[name]
		switch {
		case len(paths) == 0:
			p.Addf("", "environment %s: %s", name, unknownVar(name, fields, entries))
		case len(paths) > 1:
			slices.Sort(paths)
			p.Addf("", "environment %s: ambiguous: names both %s", name, strings.Join(paths, " and "))
		case setBy[paths[0]] != "":
			p.Addf("", "environment %s: names %s, as %s does: set one of them", name, paths[0], setBy[paths[0]])
		default:
			val := reflect.New(types[paths[0]]).Elem()
			setBy[paths[0]] = name
			if err := setScalar(val, vars[name]); err != nil {
				p.Addf("", "environment %s: %v", name, err)
				continue
			}
			values[paths[0]] = val
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	set := Keys{}
	walkEnv(root, prefix, "", func(f reflect.Value, _, path string, _ reflect.Type) {
		if val, ok := values[path]; ok {
			f.Set(val)
			for q := path; q != ""; q, _ = cutLast(q) {
				set[q] = true
			}
		}
	}, func(string, string) {})
	return set, nil
}

// unknownVar says why a variable names no field: a likely typo, or an
// entry the configuration does not declare.
func unknownVar(name string, fields map[string][]string, entries map[string]string) string {
	if s := suggest(name, slices.Collect(maps.Keys(fields))); s != "" {
		return "names no field" + s
	}
	if path, ok := entries[name+"_"]; ok {
		return fmt.Sprintf("names %s, whose entries' fields are set one by one: %s_<ENTRY>_<FIELD>", path, name)
	}
	longest := ""
	for m := range entries {
		if strings.HasPrefix(name, m) && len(m) > len(longest) {
			longest = m
		}
	}
	if longest != "" {
		return fmt.Sprintf("names no field, nor an entry of %s the configuration declares "+
			"(a variable never adds an entry: declare it in the file, as `name: {}` at least)", entries[longest])
	}
	return "names no field"
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// Shorthand is implemented by a section whose YAML form may be a bare
// scalar standing for one of its fields, as a restart policy's
// `restart: transient` stands for its mode. ApplyEnv then lets the
// section's own variable (CORRAL_RESTART=transient) set that field, as
// the field's own variable (CORRAL_RESTART_MODE) does, leaving the
// section's other fields as they are.
type Shorthand interface {
	// Shorthand returns the yaml tag of the field the scalar sets.
	Shorthand() string
}

var shorthandType = reflect.TypeFor[Shorthand]()

// walkEnv calls leaf with every field below v that a variable can name
// (with the variable and the field's path), and entered with every map of
// sections. The fields of map entries are set through a copy stored back.
func walkEnv(v reflect.Value, name, path string, leaf func(f reflect.Value, name, path string, t reflect.Type), entered func(name, path string)) {
	t := v.Type()
	switch {
	case t.Kind() == reflect.Struct:
		// A section with its own YAML form has its fields entered too.
		custom := reflect.PointerTo(t).Implements(unmarshalerType)
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || tag == "-" || custom && tag == "" {
				continue
			}
			child, childPath := name, path
			if opts != "inline" {
				if tag == "" {
					tag = strings.ToLower(f.Name)
				}
				child, childPath = name+"_"+envName(tag), join(path, tag)
			}
			walkEnv(v.Field(i), child, childPath, leaf, entered)
			if t.Implements(shorthandType) && opts != "inline" && tag == v.Interface().(Shorthand).Shorthand() {
				leaf(v.Field(i), name, childPath, f.Type)
			}
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Struct:
		entered(name, path)
		for _, k := range v.MapKeys() {
			entry := reflect.New(t.Elem()).Elem()
			entry.Set(v.MapIndex(k))
			walkEnv(entry, name+"_"+envName(k.String()), join(path, k.String()), leaf, entered)
			v.SetMapIndex(k, entry)
		}
	default:
		leaf(v, name, path, t)
	}
}

// errUnset is why a variable may not leave a field empty or null.
const errUnset = "set it to a value, or unset it: a variable never unsets what the file sets"

func setScalar(v reflect.Value, s string) error {
	t := v.Type()
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("empty: %s", errUnset)
	}
	switch {
	case t.Kind() == reflect.String:
		v.SetString(s)
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Struct:
		parts, err := listElements(s)
		if err != nil {
			return err
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
		return fmt.Errorf("this field cannot be set from the environment: set it in the file")
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
	if n.ShortTag() == "!!null" {
		return fmt.Errorf("null (%q): %s", s, errUnset)
	}
	ptr := reflect.New(t)
	if err := n.Decode(ptr.Interface()); err != nil {
		if reflect.PointerTo(t).Implements(unmarshalerType) {
			return err // its own words, such as a size's
		}
		return fmt.Errorf("want %s, got %q", kindName(t), s)
	}
	v.Set(ptr.Elem())
	return nil
}

// listElements splits a list variable at its commas, each element
// trimmed. An empty element (a comma at an end, or two in a row) is an
// error rather than dropped: it is more likely a value cut where it held
// a comma than one meant to be left out. The value is not quoted: it may
// hold a password.
func listElements(s string) ([]string, error) {
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if strings.Join(parts, "") == "" {
		return nil, fmt.Errorf("a list of no elements: %s", errUnset)
	}
	if i := slices.Index(parts, ""); i >= 0 {
		return nil, fmt.Errorf("element %d of %d is empty (a comma at an end, or two in a row): "+
			"commas separate the elements, and none may be empty", i+1, len(parts))
	}
	return parts, nil
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

// serviceLink reports whether name is one of the variables Kubernetes
// sets for a Service named like the prefix: PREFIX_SERVICE_HOST,
// PREFIX_SERVICE_PORT[_name], PREFIX_PORT and PREFIX_PORT_<port>_<proto>[...].
func serviceLink(name, prefix string) bool {
	rest := strings.TrimPrefix(name, prefix+"_")
	return rest == "SERVICE_HOST" || rest == "SERVICE_PORT" || strings.HasPrefix(rest, "SERVICE_PORT_") ||
		rest == "PORT" || strings.HasPrefix(rest, "PORT_")
}
