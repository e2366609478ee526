package conf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type decoded struct {
	Workers int                `yaml:"workers"`
	Wait    time.Duration      `yaml:"wait"`
	Size    ByteSize           `yaml:"size"`
	Inner   inner              `yaml:",inline"`
	Entries map[string]section `yaml:"entries"`
}

// Every mistake is reported at once with its path and line, through
// inline fields, map entries, merge keys and custom forms.
func TestDecodeYAMLReportsEveryMistake(t *testing.T) {
	doc := `workers: eight
wait: soon
size: lots
bind: maybe
base: &base {workers: 1}
entries:
  a: {<<: *base, workrs: 2}
  b: {restart: {mode: x, backof: 1s}, items: {x: 1}}
  a: {}
`
	var got decoded
	_, err := DecodeYAML([]byte(doc), &got)
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	want := []Problem{
		{Field: "workers", Line: 1}, {Field: "wait", Line: 2}, {Field: "size", Line: 3}, {Field: "bind", Line: 4},
		{Field: "base", Line: 5}, {Field: "entries.a.workrs", Line: 7}, {Field: "entries.b.restart.backof", Line: 8},
		{Field: "entries.b.items", Line: 8}, {Field: "entries.a", Line: 9},
	}
	if len(ve.Problems) != len(want) {
		t.Fatalf("got %d problems, want %d: %v", len(ve.Problems), len(want), err)
	}
	for i, p := range ve.Problems {
		if p.Field != want[i].Field || p.Line != want[i].Line {
			t.Errorf("problem %d: got %s (line %d), want %s (line %d)", i, p.Field, p.Line, want[i].Field, want[i].Line)
		}
	}
	if !reflect.DeepEqual(got, decoded{}) {
		t.Errorf("a document with mistakes changed the value: %+v", got)
	}
}

func TestDecodeYAMLValid(t *testing.T) {
	var got decoded
	doc, err := DecodeYAML([]byte("workers: 3\nsize: 1KiB\nentries: {a: {workers: 2, restart: {backoff: 1s}}}\n"), &got)
	if err != nil || doc == nil {
		t.Fatal(err)
	}
	if got.Workers != 3 || got.Size != 1024 || got.Entries["a"].Restart.Backoff != time.Second {
		t.Fatalf("got %+v", got)
	}
}

func TestProblemString(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{Problem{Field: "a.b", Line: 3, Reason: "bad"}, "a.b (line 3): bad"},
		{Problem{Line: 3, Reason: "bad"}, "line 3: bad"},
		{Problem{Field: "a.b", Reason: "bad"}, "a.b: bad"},
		{Problem{Reason: "bad"}, "bad"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	fields := []string{"restart_delay", "workers", "tls"}
	for name, want := range map[string]string{
		"restart_dely": " (did you mean restart_delay?)", "workrs": " (did you mean workers?)",
		"tsl": "", "queue": "",
	} {
		if got := suggest(name, fields); got != want {
			t.Errorf("suggest(%q): got %q, want %q", name, got, want)
		}
	}
}

// A value with a text form is checked by its UnmarshalText.
func TestDecodeYAMLTextForm(t *testing.T) {
	var got struct {
		At time.Time `yaml:"at"`
	}
	_, err := DecodeYAML([]byte("at: 2026-12-03T15:00:00Z\n"), &got)
	if err != nil || got.At.Hour() != 15 {
		t.Fatalf("got %v, %v", got.At, err)
	}
	_, err = DecodeYAML([]byte("at: {hour: 3}\n"), &got)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "at (line 1)") {
		t.Fatalf("got %v, want at (line 1) named", err)
	}
}

// A second document that holds anything is refused with its line: read
// alone, the first would leave the second's settings unseen. Empty ones,
// as a trailing --- writes, are not.
func TestDecodeYAMLOneDocument(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		line int // of the problem; 0: accepted
	}{
		{"workers: 1\n---\nentries: {a: {workers: 2}}\n", 2},
		{"workers: 1\n---\n---\n- a\n", 3},
		{"workers: 1\n---\nworkers: [\n", 3},
		{"---\nworkers: 1\n", 0},
		{"workers: 1\n---\n", 0},
		{"workers: 1\n--- ~\n...\n", 0},
		{"workers: 1\n---\n# nothing\n", 0},
	} {
		var got decoded
		_, err := DecodeYAML([]byte(tt.doc), &got)
		var ve *ValidationError
		switch {
		case tt.line == 0 && (err != nil || got.Workers != 1):
			t.Errorf("%q: got %+v, %v; want it read", tt.doc, got, err)
		case tt.line > 0 && (!errors.As(err, &ve) || ve.Problems[0].Line != tt.line):
			t.Errorf("%q: got %v, want a problem on line %d", tt.doc, err, tt.line)
		case tt.line > 0 && got.Workers != 0:
			t.Errorf("%q: the first document was applied: %+v", tt.doc, got)
		}
	}
}

// A merge key names a mapping or a list of mappings, once per mapping;
// anything else is a mistake with its line, as yaml.v3 would refuse it
// without one.
func TestDecodeYAMLMergeKeyMistakes(t *testing.T) {
	for _, doc := range []string{
		"entries: {a: {<<: 3}}\n",
		"entries: {a: {<<: [{workers: 1}, x]}}\n",
		"entries: {a: {<<: ~}}\n",
		"entries: {a: {<<: {workers: 1}, <<: {name: n}}}\n",
	} {
		var got decoded
		_, err := DecodeYAML([]byte(doc), &got)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "entries.a.<< (line 1)") {
			t.Errorf("%q: got %v, want a problem with entries.a.<< on line 1", doc, err)
		}
	}
}
