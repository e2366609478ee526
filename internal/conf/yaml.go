package conf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DecodeYAML decodes data into v, rejecting keys that match no field.
// An empty document leaves v as it is.
func DecodeYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// DecodeNodeStrict decodes a mapping node into the struct pointed to by v,
// rejecting unknown keys. yaml's strict mode does not reach inside custom
// UnmarshalYAML methods; those call this instead of node.Decode.
func DecodeNodeStrict(n *yaml.Node, v any) error {
	if err := checkKeys(n, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	return n.Decode(v)
}

func checkKeys(n *yaml.Node, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && tag != "-" {
			if tag == "" {
				tag = strings.ToLower(f.Name)
			}
			fields[tag] = f.Type
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ft, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("line %d: field %s not found in type %s", k.Line, k.Value, t)
		}
		if err := checkKeys(n.Content[i+1], ft); err != nil {
			return err
		}
	}
	return nil
}
