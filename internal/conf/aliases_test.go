package conf

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// aliasBomb is a document of depth mappings, each merging the one before
// it ten times: a few hundred bytes that stand for 10^depth mappings.
func aliasBomb(depth int) string {
	var b strings.Builder
	b.WriteString("entries: {l0: &l0 {workers: 1}")
	for i := 1; i <= depth; i++ {
		fmt.Fprintf(&b, ", l%d: &l%d {<<: [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]}")
	}
	b.WriteString("}\n")
	return b.String()
}

// A document whose aliases stand for more than MaxAliasNodes nodes, or
// for infinitely many, is refused naming the alias, its line and the
// limit, at the cost of its own size: the expansion is never walked.
func TestDecodeYAMLRefusesAliasExpansion(t *testing.T) {
	for _, tt := range []struct {
		name, doc, alias string
		line             int
	}{
		{"aliases of aliases", aliasBomb(6), "*l4", 1},
		{"merge of its own anchor", "entries:\n  a: &a {workers: 1, <<: *a}\n", "*a", 2},
		{"alias inside its own anchor", "entries:\n  a: &a {restart: {mode: x}, items: *a}\n", "*a", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got decoded
			_, err := DecodeYAML([]byte(tt.doc), &got)
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("got %v, want one problem", err)
			}
			if p := ve.Problems[0]; p.Line != tt.line || !strings.Contains(p.Reason, tt.alias+" ") || !strings.Contains(p.Reason, "65536") {
				t.Errorf("got %s, want line %d naming %s and the limit 65536", p, tt.line, tt.alias)
			}
			// Parsing allocates about once per byte, beside a decode's
			// fixed cost (about 70 for a 38-byte document, a few more
			// under -race, whose runtime allocates too); the refusal adds
			// nothing that grows with the expansion.
			allocs := testing.AllocsPerRun(3, func() { _, _ = DecodeYAML([]byte(tt.doc), &got) })
			if limit := float64(2*len(tt.doc) + 16); allocs > limit {
				t.Errorf("%.0f allocations for %d bytes, want at most %.0f", allocs, len(tt.doc), limit)
			}
		})
	}
}

// Aliases within the limit decode as written: a defaults mapping merged
// into a thousand entries.
func TestDecodeYAMLSharedDefaults(t *testing.T) {
	var b strings.Builder
	b.WriteString("base: &d {workers: 3, restart: {mode: transient, backoff: 2s}}\nentries:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  e%d: {<<: *d, name: e%d}\n", i, i)
	}
	var got struct {
		Base    section            `yaml:"base"`
		Entries map[string]section `yaml:"entries"`
	}
	if _, err := DecodeYAML([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	if e := got.Entries["e999"]; len(got.Entries) != 1000 || e.Workers != 3 || e.Name != "e999" || e.Restart.Mode != "transient" {
		t.Fatalf("got %d entries, e999 %+v", len(got.Entries), e)
	}
}

// BenchmarkDecodeYAMLAliasBomb is the cost of refusing a document of
// aliases of aliases: that of its bytes, whatever their expansion.
func BenchmarkDecodeYAMLAliasBomb(b *testing.B) {
	for _, depth := range []int{5, 6, 8} {
		doc := []byte(aliasBomb(depth))
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var got decoded
				if _, err := DecodeYAML(doc, &got); err == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
