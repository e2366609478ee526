package publisher

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
)

func testEntry(i int) *entry {
	m := &nats.Msg{Subject: "s", Data: []byte(strconv.Itoa(i)), Header: nats.Header{"Nats-Msg-Id": {"id-" + strconv.Itoa(i)}}}
	return &entry{msg: m, size: msgSize(m)}
}

func appendN(t *testing.T, s *spool, n int) []*entry {
	t.Helper()
	var es []*entry
	for i := range n {
		e := testEntry(i)
		if err := s.append(e); err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

func mustOpen(t *testing.T, dir string, segmentSize int64) (*spool, []*entry, []spoolDamage) {
	t.Helper()
	s, rec, dmg, err := openSpool(dir, false, segmentSize)
	if err != nil {
		t.Fatal(err)
	}
	return s, rec, dmg
}

func files(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A crash between removing a segment's two files used to leave NNN.done,
// whose sequences then marked the records of a new segment NNN settled.
func TestSpoolIgnoresALeftoverDoneFile(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	for i := uint64(1); i <= 3; i++ {
		b = binary.LittleEndian.AppendUint64(b, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "000000000001.done"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec, _ := mustOpen(t, dir, 0)
	if len(rec) != 0 {
		t.Fatalf("recovered %d from an empty spool", len(rec))
	}
	appendN(t, s, 3)
	s.close() // a crash: nothing settled
	s, rec, _ = mustOpen(t, dir, 0)
	defer s.close()
	if len(rec) != 3 {
		t.Fatalf("3 unsettled records appended, %d recovered", len(rec))
	}
}

// A partial write to .done must not misalign the settle records after it.
func TestSpoolTornDoneRecord(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 0)
	es := appendN(t, s, 4)
	if err := s.settle(es[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cur.done.Write([]byte{9, 9, 9}); err != nil { // torn
		t.Fatal(err)
	}
	s.close()
	s, rec, _ := mustOpen(t, dir, 0)
	if len(rec) != 3 {
		t.Fatalf("1 of 4 settled before the torn write: %d recovered, want 3", len(rec))
	}
	for _, e := range rec[:2] {
		if err := e.seg.sp.settle(e); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	s, rec, _ = mustOpen(t, dir, 0)
	defer s.close()
	if len(rec) != 1 || string(rec[0].msg.Data) != "3" {
		t.Fatalf("recovered %d, want only message 3", len(rec))
	}
}

// A record cut short by a crash is the end of the segment, not damage.
func TestSpoolTornLastRecord(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 0)
	appendN(t, s, 3)
	torn := testEntry(99)
	if err := s.append(torn); err != nil {
		t.Fatal(err)
	}
	logPath, _ := s.paths(s.cur.id)
	s.close()
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(logPath, st.Size()-3); err != nil {
		t.Fatal(err)
	}
	s, rec, dmg := mustOpen(t, dir, 0)
	defer s.close()
	if len(rec) != 3 || len(dmg) != 0 {
		t.Fatalf("recovered %d with damage %v, want the 3 whole records and no damage", len(rec), dmg)
	}
	for i, e := range rec {
		if string(e.msg.Data) != strconv.Itoa(i) || e.msg.Header.Get("Nats-Msg-Id") != "id-"+strconv.Itoa(i) {
			t.Fatalf("record %d: %q %v", i, e.msg.Data, e.msg.Header)
		}
		if e.size != testEntry(i).size {
			t.Fatalf("record %d counts %d bytes, accepted it counted %d", i, e.size, testEntry(i).size)
		}
	}
}

// A bad record followed by good ones is damage: reported, the segment kept
// aside, and the records before and after it spooled again.
func TestSpoolCorruptRecordIsKeptAside(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 0)
	appendN(t, s, 4)
	logPath, _ := s.paths(s.cur.id)
	s.close()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	second := recordHeader + int(binary.LittleEndian.Uint32(b))
	b[second+recordHeader+12] ^= 0xff // inside the second record's body
	if err := os.WriteFile(logPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, rec, dmg := mustOpen(t, dir, 0)
	if len(dmg) != 1 || dmg[0].offset != int64(second) || dmg[0].keptAs != logPath+".corrupt" {
		t.Fatalf("damage %+v, want one at offset %d kept as %s", dmg, second, logPath+".corrupt")
	}
	if _, err := os.Stat(dmg[0].keptAs); err != nil {
		t.Fatal(err)
	}
	if len(rec) != 3 || string(rec[0].msg.Data) != "0" || string(rec[1].msg.Data) != "2" || string(rec[2].msg.Data) != "3" {
		t.Fatalf("recovered %d, want the records before and after the damage", len(rec))
	}
	s.close()
	s, rec, dmg = mustOpen(t, dir, 0) // spooled again: still there, no new damage
	defer s.close()
	if len(rec) != 3 || len(dmg) != 0 {
		t.Fatalf("reopened: %d recovered, damage %v", len(rec), dmg)
	}
}

func TestSpoolRollsAndDeletesSettledSegments(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 256)
	es := appendN(t, s, 100)
	if n := len(files(t, dir, "*.log")); n < 5 {
		t.Fatalf("%d segments for 100 records in 256-byte segments", n)
	}
	for _, e := range es[:90] {
		if err := s.settle(e); err != nil {
			t.Fatal(err)
		}
	}
	left := len(files(t, dir, "*.log"))
	s.close()
	s, rec, _ := mustOpen(t, dir, 256)
	if len(rec) != 10 || string(rec[0].msg.Data) != "90" {
		t.Fatalf("recovered %d, want the last 10", len(rec))
	}
	if n := len(files(t, dir, "*.log")); n > left+1 {
		t.Fatalf("%d segments after reopening, %d before", n, left)
	}
	for _, e := range rec {
		if err := e.seg.sp.settle(e); err != nil {
			t.Fatal(err)
		}
	}
	if logs, dones := files(t, dir, "*.log"), files(t, dir, "*.done"); len(logs) != 1 || len(dones) != 1 {
		t.Fatalf("all settled: %v %v, want only the segment being written", logs, dones)
	}
	s.close()
	s, rec, _ = mustOpen(t, dir, 256)
	defer s.close()
	if len(rec) != 0 {
		t.Fatalf("recovered %d after everything was settled", len(rec))
	}
}

func TestSpoolIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 0)
	if _, _, _, err := openSpool(dir, false, 0); !errors.Is(err, ErrSpoolLocked) {
		t.Fatalf("second open: %v, want ErrSpoolLocked", err)
	}
	s.close()
	s, _, _ = mustOpen(t, dir, 0) // released by close
	s.close()
}

func TestSpoolSyncWritesAndSettles(t *testing.T) {
	dir := t.TempDir()
	s, _, _, err := openSpool(dir, true, 128)
	if err != nil {
		t.Fatal(err)
	}
	es := appendN(t, s, 10)
	for _, e := range es {
		if err := s.settle(e); err != nil {
			t.Fatal(err)
		}
	}
	s.close()
	s, rec, _ := mustOpen(t, dir, 128)
	defer s.close()
	if len(rec) != 0 {
		t.Fatalf("recovered %d", len(rec))
	}
}
