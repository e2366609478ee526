package conf

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// shape has a field of every kind the decoder enters or hands to yaml.v3.
type shape struct {
	Name     string             `yaml:"name"`
	Count    *int               `yaml:"count"`
	Wait     time.Duration      `yaml:"wait"`
	At       time.Time          `yaml:"at"`
	Size     ByteSize           `yaml:"size"`
	Restart  form               `yaml:"restart"`
	Extra    *policy            `yaml:"extra"`
	Inner    inner              `yaml:",inline"`
	Tags     []string           `yaml:"tags"`
	Labels   map[string]string  `yaml:"labels"`
	Entries  map[string]section `yaml:"entries"`
	Pointers map[string]*policy `yaml:"pointers"`
	Any      any                `yaml:"any"`
	Nested   *shape             `yaml:"nested"`
	Untagged int
}

// form has a YAML form of its own, a bare mode or a mapping, as a
// restart policy has.
type form struct {
	Mode    string        `yaml:"mode"`
	Backoff time.Duration `yaml:"backoff"`
}

func (f *form) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*f = form{Mode: n.Value}
		return nil
	}
	type plain form
	return n.Decode((*plain)(f))
}

// prefilled is what a file is decoded over: settings made in code, which
// the file's null, its keys and its merges override as yaml.v3 does.
func prefilled() shape {
	n := 7
	return shape{Name: "code", Count: &n, Wait: time.Second, Tags: []string{"code"},
		Labels: map[string]string{"kept": "yes", "over": "code"}, Entries: map[string]section{"kept": {Workers: 9}},
		Extra: &policy{Mode: "code"}, Restart: form{Backoff: time.Minute}}
}

// decoderDocs are the documents TestDecoderMatchesYAML decodes, and the
// seeds of FuzzDecoderMatchesYAML.
var decoderDocs = []string{
	"name: a\ncount: 3\nwait: 2s\nat: 2026-01-02T03:04:05Z\nsize: 1KiB\nuntagged: 4\n",
	"bind: true\nitems: [x, y]\ntags: [a, b]\nany: {k: [1, two]}\n",
	"restart: transient\nextra: {backoff: 1s}\nnested: {name: inner, nested: {count: 1}}\n",
	"name: ~\ncount: ~\ntags: ~\nlabels: ~\nextra: ~\nany: ~\nrestart: ~\nwait: ~\n",
	"labels: {over: file, new: v, nul: ~, kept: ~}\nentries: {kept: ~, a: {workers: 1}, b: ~}\n",
	"pointers: {a: {mode: x}, b: ~, c: {}}\nentries: {e: {extra: {mode: y}, restart: {backoff: 3s}}}\n",
	"any: &b {workers: 2, name: base, restart: {mode: m}}\nentries: {a: *b}\n",
	"any: &d {workers: 2, name: base}\nentries:\n  a: {<<: *d, name: own}\n  b: *d\n  c: {name: own, <<: [*d, {workers: 5, bind: true}]}\n",
	"any: [&x {name: x, workers: 1}, &y {<<: *x, workers: 2, items: [y]}]\nentries:\n  a: {<<: [*y, {name: later, bind: true}]}\n",
	"labels: &l {a: '1', b: '2'}\nnested: {labels: {<<: *l, b: own, c: '3'}}\n",
	"<<: {name: merged, count: 5}\nname: own\n",
	"entries: {'1': {workers: 1}, 'true': {workers: 2}, '': {name: empty}}\nlabels: {1: int, true: bool, 1.5: float}\n",
	"nested: {<<: {tags: [m], restart: temporary}, restart: {backoff: 2s}}\n",
}

// The decoder sets what yaml.v3's Decode sets, document by document:
// merges and their precedence, aliases, nulls, inline and pointer
// fields, and values with their own form.
func TestDecoderMatchesYAML(t *testing.T) {
	for i, doc := range decoderDocs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want, got := prefilled(), prefilled()
			if err := yaml.Unmarshal([]byte(doc), &want); err != nil {
				t.Fatalf("yaml.v3: %v\n%s", err, doc)
			}
			if _, err := DecodeYAML([]byte(doc), &got); err != nil {
				t.Fatalf("DecodeYAML: %v\n%s", err, doc)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s\ngot  %+v\nwant %+v", doc, got, want)
			}
		})
	}
}

// FuzzDecoderMatchesYAML decodes any document DecodeYAML accepts as
// yaml.v3 does; yaml.v3 may refuse one only for its own limit on
// aliases, which is lower than MaxAliasNodes.
func FuzzDecoderMatchesYAML(f *testing.F) {
	for _, doc := range decoderDocs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		want, got := prefilled(), prefilled()
		if _, err := DecodeYAML(doc, &got); err != nil {
			return
		}
		if err := yaml.Unmarshal(doc, &want); err != nil {
			if !strings.Contains(err.Error(), "excessive aliasing") {
				t.Fatalf("DecodeYAML accepts what yaml.v3 refuses: %v\n%q", err, doc)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q\ngot  %+v\nwant %+v", doc, got, want)
		}
	})
}

// BenchmarkDecodeYAMLEntries decodes maps of n entries, as a template
// writes thousands of handlers: each entry costs the same (ns/entry),
// where yaml.v3's own decoding compares every key with every other.
func BenchmarkDecodeYAMLEntries(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 12, 1 << 14} {
		var doc strings.Builder
		doc.WriteString("entries:\n")
		for i := range n {
			fmt.Fprintf(&doc, "  handler-%d: {workers: 4, restart: {mode: transient}}\n", i)
		}
		data := []byte(doc.String())
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got decoded
				if _, err := DecodeYAML(data, &got); err != nil || len(got.Entries) != n {
					b.Fatalf("got %d entries, %v", len(got.Entries), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
	}
}
