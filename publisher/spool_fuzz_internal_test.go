package publisher

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
)

// FuzzSpoolLoad damages a segment of 20 records (flips: pairs of a 16-bit
// offset and a byte to xor there; cut: bytes cut off the end) and checks
// that reading it never fails or panics, reads no record that was not
// written, and keeps every record the damage did not touch.
func FuzzSpoolLoad(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{0, 0, 0x10}, uint16(0))   // the first record's length
	f.Add([]byte{0, 3, 0x80}, uint16(0))   // its length's top byte
	f.Add([]byte{200, 1, 0xff}, uint16(3)) // a body, and a torn tail
	f.Add([]byte{0, 0, 0xff, 0, 0, 0}, uint16(40))
	f.Fuzz(func(t *testing.T, flips []byte, cut uint16) {
		const n = 20
		dir := t.TempDir()
		logPath, offs := spoolN(t, dir, n)
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		touched := make([]bool, len(b)+1)
		for i := 0; i+3 <= len(flips); i += 3 {
			at := int(binary.LittleEndian.Uint16(flips[i:])) % len(b)
			if flips[i+2] != 0 {
				b[at] ^= flips[i+2]
				touched[at] = true
			}
		}
		end := len(b) - int(cut)%len(b)
		b = b[:end]
		if err := os.WriteFile(logPath, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, rec, dmg, err := openSpool(dir, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer s.close()
		offs = append(offs, len(touched)-1)
		got := map[string]bool{}
		for _, e := range rec {
			if !strings.HasPrefix(string(e.msg.Data), "m-00") || got[string(e.msg.Data)] {
				t.Fatalf("read %q, which was not written or twice (damage %+v)", e.msg.Data, dmg)
			}
			got[string(e.msg.Data)] = true
		}
		for i := range n {
			if offs[i+1] > end || strings.Contains(fmt.Sprint(touched[offs[i]:offs[i+1]]), "true") {
				continue // cut or hit
			}
			if m := fmt.Sprintf("m-%04d", i); !got[m] {
				t.Fatalf("untouched record %s lost; damage %+v", m, dmg)
			}
		}
	})
}
