package publisher

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// spoolN writes n records m-0000... to a new spool in dir, closes it and
// returns the segment's path and the offset of each record.
func spoolN(t *testing.T, dir string, n int) (string, []int) {
	t.Helper()
	s, _, _ := mustOpen(t, dir, 0)
	var offs []int
	for i := range n {
		offs = append(offs, int(s.cur.size))
		m := &nats.Msg{Subject: "s", Data: fmt.Appendf(nil, "m-%04d", i), Header: nats.Header{"Nats-Msg-Id": {fmt.Sprintf("%04d", i)}}}
		if err := s.append(&entry{msg: m, size: msgSize(m)}); err != nil {
			t.Fatal(err)
		}
	}
	logPath, _ := s.paths(s.cur.id)
	s.close()
	return logPath, offs
}

// damage applies f to the bytes of the file at path.
func damage(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// data returns the payloads of es, joined.
func data(es []*entry) string {
	var b strings.Builder
	for _, e := range es {
		b.Write(e.msg.Data)
		b.WriteByte(' ')
	}
	return b.String()
}

// want returns the payloads m-from... m-to (inclusive) but skip, as data
// writes them.
func want(from, to int, skip ...int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if !slices.Contains(skip, i) {
			fmt.Fprintf(&b, "m-%04d ", i)
		}
	}
	return b.String()
}

// A bit flipped in a record's length field used to be taken for a torn
// tail when the length then ran past the end of the segment: every later
// record was dropped and the segment deleted, unreported. It is damage,
// reported; the record itself is whole, so it is kept with all the
// others.
func TestSpoolDamagedLengthKeepsEveryRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record int
		bit    uint
	}{
		{"middle, length past the end", 100, 20},
		{"middle, top bit", 100, 31},
		{"middle, length one more", 100, 0},
		{"middle, length shorter", 100, 3},
		{"last, length past the end", 199, 20},
		{"first, length past the end", 0, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath, offs := spoolN(t, dir, 200)
			off := offs[tc.record]
			damage(t, logPath, func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[off:], binary.LittleEndian.Uint32(b[off:])^1<<tc.bit)
				return b
			})
			s, rec, dmg := mustOpen(t, dir, 0)
			if got := data(rec); got != want(0, 199) {
				t.Fatalf("recovered %d records: %s, want all 200", len(rec), got)
			}
			if len(dmg) != 1 || dmg[0].offset != int64(off) || dmg[0].skipped != 0 || dmg[0].keptAs != logPath+".corrupt" {
				t.Fatalf("damage %+v, want one at offset %d, nothing skipped, kept as %s", dmg, off, logPath+".corrupt")
			}
			s.close()
			s, rec, dmg = mustOpen(t, dir, 0) // spooled again: all there, no new damage
			defer s.close()
			if len(rec) != 200 || len(dmg) != 0 {
				t.Fatalf("reopened: %d recovered, damage %v", len(rec), dmg)
			}
		})
	}
}

// Damage inside records loses those records only, says how many bytes,
// and reads on from the next whole record; a complete last record with a
// bad checksum is damage too, not a torn tail.
func TestSpoolDamagedRecordsLoseOnlyThemselves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []int // whose data is hit
		lost    []int
	}{
		{"one in the middle", []int{100}, []int{100}},
		{"two apart", []int{3, 150}, []int{3, 150}},
		{"the last, complete", []int{199}, []int{199}},
		{"the first", []int{0}, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath, offs := spoolN(t, dir, 200)
			size := offs[1] - offs[0] // the records are all the same size
			damage(t, logPath, func(b []byte) []byte {
				for _, r := range tc.records {
					b[offs[r]+size-2] ^= 0x10 // in the data
				}
				return b
			})
			s, rec, dmg := mustOpen(t, dir, 0)
			defer s.close()
			if got, want := data(rec), want(0, 199, tc.lost...); got != want {
				t.Fatalf("recovered %d records: %s\nwant %s", len(rec), got, want)
			}
			if len(dmg) != len(tc.records) {
				t.Fatalf("damage %+v, want %d", dmg, len(tc.records))
			}
			for i, r := range tc.records {
				if d := dmg[i]; d.offset != int64(offs[r]) || d.skipped != int64(size) || !strings.Contains(d.err.Error(), fmt.Sprintf("%d bytes not read", size)) {
					t.Fatalf("damage %d: %+v (%v), want offset %d and %d bytes skipped", i, d, d.err, offs[r], size)
				}
			}
		})
	}
}

// What a crash while appending leaves is the end of the segment, not
// damage: a record cut anywhere, even inside its header, or zeros.
func TestSpoolTornTails(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(b []byte, last int) []byte
	}{
		{"cut in the body", func(b []byte, last int) []byte { return b[:len(b)-3] }},
		{"cut after the header", func(b []byte, last int) []byte { return b[:last+recordHeader] }},
		{"cut in the header", func(b []byte, last int) []byte { return b[:last+5] }},
		{"zeros", func(b []byte, last int) []byte { clear(b[last:]); return b }},
		{"zeros after whole records", func(b []byte, last int) []byte { return append(b, make([]byte, 100)...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath, offs := spoolN(t, dir, 10)
			damage(t, logPath, func(b []byte) []byte { return tc.f(b, offs[9]) })
			s, rec, dmg := mustOpen(t, dir, 0)
			defer s.close()
			n := 9
			if tc.name == "zeros after whole records" {
				n = 10
			}
			if got := data(rec); got != want(0, n-1) || len(dmg) != 0 {
				t.Fatalf("recovered %s with damage %+v, want the %d whole records and no damage", got, dmg, n)
			}
		})
	}
}

// A subject longer than the spool's 16-bit length field was written with
// its length cut, which made the record unreadable at the next start and
// lost the record after it too.
func TestSpoolRefusesASubjectItsRecordCannotHold(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 0)
	long := &nats.Msg{Subject: strings.Repeat("a", 70000), Data: []byte("long")}
	if err := s.append(&entry{msg: long, size: msgSize(long)}); !errors.Is(err, ErrSubjectTooLong) {
		t.Fatalf("append of a %d-byte subject: %v, want ErrSubjectTooLong", len(long.Subject), err)
	}
	appendN(t, s, 1)
	s.close()
	s, rec, dmg := mustOpen(t, dir, 0)
	defer s.close()
	if len(rec) != 1 || string(rec[0].msg.Data) != "0" || len(dmg) != 0 {
		t.Fatalf("recovered %d with damage %+v, want the message after the refused one", len(rec), dmg)
	}
}

// Publish refuses a subject longer than the limit, saying its length and
// the limit, and spools nothing for it.
func TestPublishRefusesASubjectTooLong(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Config{SpoolDir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []int{maxSubjectLen + 1, 70000} {
		_, err := p.Publish(ctx, strings.Repeat("a", n), []byte("long"))
		if !errors.Is(err, ErrSubjectTooLong) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes, the limit is %d", n, maxSubjectLen)) {
			t.Fatalf("publish with a %d-byte subject: %v, want ErrSubjectTooLong naming both lengths", n, err)
		}
	}
	if _, err := p.Publish(ctx, strings.Repeat("a", maxSubjectLen), []byte("at the limit")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, "next", []byte("next")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	s, rec, dmg := mustOpen(t, dir, 0)
	defer s.close()
	if got := data(rec); got != "at the limit next " || len(dmg) != 0 {
		t.Fatalf("spool holds %q with damage %+v, want the two messages accepted", got, dmg)
	}
}
