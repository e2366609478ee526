package conf

import (
	"reflect"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

type policy struct {
	Mode    string        `yaml:"mode"`
	Backoff time.Duration `yaml:"backoff"`
}

type inner struct {
	Bind  bool     `yaml:"bind"`
	Items []string `yaml:"items"`
}

type section struct {
	Workers int      `yaml:"workers"`
	Name    string   `yaml:"name"`
	Restart policy   `yaml:"restart"`
	Extra   *policy  `yaml:"extra"`
	Inner   inner    `yaml:",inline"`
	Secret  func()   `yaml:"-"`
	List    []string `yaml:"list"`
}

func TestOverrideFollowsTheKeysSet(t *testing.T) {
	code := section{Workers: 8, Name: "code", Restart: policy{Mode: "permanent", Backoff: time.Second},
		Inner: inner{Bind: true, Items: []string{"a"}}, List: []string{"x"}}
	tests := []struct {
		name string
		yaml string
		want section
	}{
		{
			name: "false and zero override what code set",
			yaml: "workers: 0\nbind: false\nlist: []",
			want: section{Workers: 0, Name: "code", Restart: code.Restart, Inner: inner{Bind: false, Items: []string{"a"}}, List: []string{}},
		},
		{
			name: "a nested key overrides only itself",
			yaml: "restart: {backoff: 5s}",
			want: section{Workers: 8, Name: "code", Restart: policy{Mode: "permanent", Backoff: 5 * time.Second}, Inner: code.Inner, List: code.List},
		},
		{
			name: "a pointer is replaced whole",
			yaml: "extra: {mode: temporary}",
			want: section{Workers: 8, Name: "code", Restart: code.Restart, Extra: &policy{Mode: "temporary"}, Inner: code.Inner, List: code.List},
		},
		{
			name: "nothing set overrides nothing",
			yaml: "{}",
			want: code,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var file section
			node, err := parseNode(tt.yaml, &file)
			if err != nil {
				t.Fatal(err)
			}
			got := code
			Override(&got, file, KeysOf(node), "")
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Keys written through an anchor, an alias or a merge key count as
// written where they land.
func TestKeysFollowAliasesAndMergeKeys(t *testing.T) {
	var n yaml.Node
	doc := `
handlers:
  a: &base {queue_group: "", workers: 2}
  b: *base
  c: {<<: *base, subject: c.in}
  d: {<<: [*base], bind: false}
`
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	keys := KeysOf(&n)
	for _, h := range []string{"a", "b", "c", "d"} {
		for _, k := range []string{"queue_group", "workers"} {
			if !keys["handlers."+h+"."+k] {
				t.Errorf("handlers.%s.%s not recorded: %v", h, k, keys)
			}
		}
	}
	if !keys["handlers.c.subject"] || !keys["handlers.d.bind"] || keys["handlers.c.<<"] {
		t.Errorf("keys beside a merge key: %v", keys)
	}
}

func TestOverrideWithoutKeysTakesNonZeroFields(t *testing.T) {
	code := section{Workers: 8, Name: "code", Restart: policy{Backoff: time.Second}, Inner: inner{Bind: true}}
	got := code
	Override(&got, section{Name: "file", Restart: policy{Mode: "transient"}}, nil, "")
	want := section{Workers: 8, Name: "file", Restart: policy{Mode: "transient", Backoff: time.Second}, Inner: inner{Bind: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// Override reads the keys below its prefix alone: those of another entry
// override nothing.
func TestOverrideUnderAPrefix(t *testing.T) {
	k := Keys{"handlers.a.workers": true, "handlers.a.restart.mode": true, "handlers.b.name": true, "name": true}
	got := section{Workers: 8, Name: "code", Restart: policy{Mode: "code", Backoff: time.Second}}
	Override(&got, section{Name: "file"}, k, "handlers.a")
	want := section{Workers: 0, Name: "file", Restart: policy{Backoff: time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestKeysAdd(t *testing.T) {
	k := Keys{"name": true}
	k.Add("handlers.c", Keys{"workers": true})
	if !k["handlers.c.workers"] || !k["name"] {
		t.Fatalf("Add: got %v", k)
	}
}

func parseNode(doc string, v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		return nil, err
	}
	return &n, n.Decode(v)
}
