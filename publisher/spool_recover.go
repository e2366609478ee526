package publisher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// spoolDamage is damaged bytes in a segment, which was set aside: skipped
// bytes from offset were not read (0 when the damaged record was whole
// and is kept).
type spoolDamage struct {
	segment uint64
	offset  int64
	skipped int64
	err     error
	keptAs  string
}

// openSpool opens (or creates) the spool in dir, locked against other
// publishers, and returns the messages it holds that were never settled,
// oldest first, and the segments it set aside as damaged.
func openSpool(dir string, sync bool, segmentSize int64) (_ *spool, _ []*entry, _ []spoolDamage, err error) {
	lock, err := lockSpoolDir(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if segmentSize <= 0 {
		segmentSize = defaultSegmentSize
	}
	s := &spool{dir: dir, sync: sync, segmentSize: segmentSize, lock: lock, segs: map[uint64]*segment{}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	logs, dones, maxID, err := s.list()
	if err != nil {
		return nil, nil, nil, err
	}
	recovered, rewrite, damage, err := s.recoverSegments(logs)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.removeOrphanDones(logs, dones); err != nil {
		return nil, nil, nil, err
	}
	if err := s.roll(maxID + 1); err != nil {
		return nil, nil, nil, err
	}
	for _, e := range rewrite {
		if err := s.append(e); err != nil {
			return nil, nil, nil, err
		}
	}
	return s, append(recovered, rewrite...), damage, nil
}

// lockSpoolDir creates dir if need be and takes the flock on its LOCK
// file, which the returned file holds until it is closed. It fails with
// ErrSpoolLocked while another publisher holds it.
func lockSpoolDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("publisher: spool_dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("publisher: spool_dir: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: spool_dir %q", ErrSpoolLocked, dir)
		}
		return nil, fmt.Errorf("publisher: spool_dir %q: lock: %w", dir, err)
	}
	return lock, nil
}

// recoverSegments loads the segments whose logs are logs, oldest first.
// It keeps each that holds unsettled records, whose records it returns as
// recovered, and removes each that holds none. A damaged one it sets
// aside, returning its readable unsettled records to be written again
// (rewrite) and the damage, with the name it was kept under.
func (s *spool) recoverSegments(logs []uint64) (recovered, rewrite []*entry, damage []spoolDamage, _ error) {
	for _, id := range logs {
		seg, entries, dmg, err := s.load(id)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("publisher: spool segment %d: %w", id, err)
		}
		switch {
		case len(dmg) > 0:
			kept, err := s.setAside(id)
			if err != nil {
				return nil, nil, nil, err
			}
			for _, d := range dmg {
				d.keptAs = kept
				damage = append(damage, d)
			}
			rewrite = append(rewrite, entries...)
		case seg.pending == 0:
			if err := s.remove(seg); err != nil {
				return nil, nil, nil, err
			}
		default:
			s.segs[id] = seg
			recovered = append(recovered, entries...)
		}
	}
	return recovered, rewrite, damage, nil
}

// removeOrphanDones removes the settle files, among dones, whose log is
// not among logs: a crash between the removals of a settled segment's
// files (remove) leaves them.
func (s *spool) removeOrphanDones(logs, dones []uint64) error {
	for _, id := range dones {
		if slices.Contains(logs, id) {
			continue
		}
		_, donePath := s.paths(id)
		if err := os.Remove(donePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("publisher: spool: %w", err)
		}
	}
	return nil
}

// list returns the ids of the segments' logs and settle files, sorted, and
// the highest id of any file.
func (s *spool) list() (logs, dones []uint64, maxID uint64, err error) {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("publisher: spool: %w", err)
	}
	for _, n := range names {
		base, ext, ok := strings.Cut(n.Name(), ".")
		id, perr := strconv.ParseUint(base, 10, 64)
		if !ok || perr != nil {
			continue
		}
		maxID = max(maxID, id) // .corrupt files too: their ids are never reused
		switch ext {
		case "log":
			logs = append(logs, id)
		case "done":
			dones = append(dones, id)
		}
	}
	slices.Sort(logs)
	return logs, dones, maxID, nil
}

// load reads a segment's unsettled records and, unless it is damaged,
// opens it for settling.
func (s *spool) load(id uint64) (*segment, []*entry, []spoolDamage, error) {
	logPath, donePath := s.paths(id)
	done, doneSize, err := readSettled(donePath)
	if err != nil {
		return nil, nil, nil, err
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		return nil, nil, nil, err
	}
	seg := &segment{sp: s, id: id, size: int64(len(log)), doneSize: doneSize}
	entries, dmg := s.readRecords(id, log, done)
	if len(dmg) > 0 {
		return seg, entries, dmg, nil // rewritten to a new segment; no seg
	}
	for _, e := range entries {
		e.seg = seg
	}
	seg.pending = len(entries)
	if seg.pending > 0 {
		if seg.done, err = os.OpenFile(donePath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return nil, nil, nil, err
		}
	}
	return seg, entries, nil, nil
}

// readSettled reads a segment's settle file: the sequences it settles,
// and its length. A torn last record (a crash while writing it) is cut
// off the file, or every later one would be misread. A missing file
// settles nothing.
func readSettled(donePath string) (map[uint64]bool, int64, error) {
	done := map[uint64]bool{}
	data, err := os.ReadFile(donePath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return done, 0, nil
	case err != nil:
		return nil, 0, err
	}
	if torn := len(data) % 8; torn != 0 {
		data = data[:len(data)-torn]
		if err := os.Truncate(donePath, int64(len(data))); err != nil {
			return nil, 0, err
		}
	}
	for i := 0; i+8 <= len(data); i += 8 {
		done[binary.LittleEndian.Uint64(data[i:])] = true
	}
	return done, int64(len(data)), nil
}

// readRecords returns the records of segment id's log that done does not
// settle, and the damage it found; it raises s.seq to the highest
// sequence it read. Past a damaged record it reads on from the next whole
// record, so that damage loses only the records it hit.
func (s *spool) readRecords(id uint64, log []byte, done map[uint64]bool) (entries []*entry, dmg []spoolDamage) {
	var last uint64 // the sequence of the last record read in this segment
	for off := 0; off < len(log); {
		e, n, err := readRecord(log[off:])
		if err != nil {
			var d spoolDamage
			var torn bool
			if e, n, d, torn = skipDamage(id, log, off, last, err); torn {
				break // a crash while appending the last record
			}
			dmg = append(dmg, d)
		}
		off += n
		if e == nil {
			continue // lost to the damage
		}
		last = e.seq
		s.seq = max(s.seq, e.seq)
		if !done[e.seq] {
			entries = append(entries, e)
		}
	}
	return entries, dmg
}

// skipDamage reads past the record at off in segment id's log, which
// could not be read (err), up to the next whole record after one with
// sequence last (resync), or the end: it returns the bytes skipped and
// the damage, with the record itself when only its length field was hit
// (repair). torn reports instead what a crash while appending leaves at
// the end of the log, which is no damage.
func skipDamage(id uint64, log []byte, off int, last uint64, err error) (kept *entry, skipped int, d spoolDamage, torn bool) {
	next := resync(log, off+1, last)
	if next == len(log) && tornTail(log[off:]) {
		return nil, 0, spoolDamage{}, true
	}
	d = spoolDamage{segment: id, offset: int64(off), skipped: int64(next - off),
		err: fmt.Errorf("%w: %d bytes not read", err, next-off)}
	if kept, _ = repair(log[off:next]); kept != nil {
		d.skipped, d.err = 0, fmt.Errorf("%w: the record is whole and is kept", err)
	}
	return kept, next - off, d, false
}

// tornTail reports whether b, starting at a record that cannot be read and
// followed by no whole record, is what a crash while appending leaves:
// less than a record header, a record whose declared length runs past the
// end of the file, or zeros. A record that ends exactly at the end of the
// file was written whole, and so is damage; so is one whose declared
// length runs past the end while the bytes there match its checksum (its
// length was hit, not cut).
func tornTail(b []byte) bool {
	if len(b) < recordHeader {
		return true
	}
	if n := binary.LittleEndian.Uint32(b); uint64(recordHeader)+uint64(n) > uint64(len(b)) {
		return crc32.ChecksumIEEE(b[recordHeader:]) != binary.LittleEndian.Uint32(b[4:])
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// resync returns the offset of the first whole record in log at or after
// from, or len(log) if there is none. A record after one with sequence
// last (0: none yet in this segment) has a higher sequence, by at most one
// per record that fits between them: the appends of a segment are
// numbered one after another. Those cheap tests, and the lengths, rule out
// almost every offset before its checksum is computed.
func resync(log []byte, from int, last uint64) int {
	for i := from; i+minRecord <= len(log); i++ {
		if last != 0 {
			seq := binary.LittleEndian.Uint64(log[i+recordHeader:])
			if seq <= last || seq-last > uint64(len(log)/minRecord)+1 {
				continue
			}
		}
		if _, _, err := readRecord(log[i:]); err == nil {
			return i
		}
	}
	return len(log)
}

// repair reads b, the bytes from a record that could not be read to the
// next whole record (or the end of the segment), as one record whose length
// field alone was damaged: it succeeds only if they match the record's
// checksum.
func repair(b []byte) (*entry, error) {
	if len(b) < minRecord {
		return nil, errors.New("short record")
	}
	fixed := slices.Clone(b)
	binary.LittleEndian.PutUint32(fixed, uint32(len(b)-recordHeader))
	e, _, err := readRecord(fixed)
	return e, err
}

// setAside renames a damaged segment's files out of the spool's way and
// returns the log's new path.
func (s *spool) setAside(id uint64) (string, error) {
	logPath, donePath := s.paths(id)
	kept := logPath + ".corrupt"
	if err := os.Rename(logPath, kept); err != nil {
		return "", fmt.Errorf("publisher: spool: %w", err)
	}
	if err := os.Rename(donePath, donePath+".corrupt"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("publisher: spool: %w", err)
	}
	return kept, s.syncDir()
}
