package publisher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// spoolDamage is a segment set aside for a bad record.
type spoolDamage struct {
	segment uint64
	offset  int64
	err     error
	keptAs  string
}

// openSpool opens (or creates) the spool in dir, locked against other
// publishers, and returns the messages it holds that were never settled,
// oldest first, and the segments it set aside as damaged.
func openSpool(dir string, sync bool, segmentSize int64) (_ *spool, _ []*entry, _ []spoolDamage, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("publisher: spool_dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("publisher: spool_dir: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, nil, fmt.Errorf("%w: spool_dir %q", ErrSpoolLocked, dir)
		}
		return nil, nil, nil, fmt.Errorf("publisher: spool_dir %q: lock: %w", dir, err)
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
	var recovered, rewrite []*entry
	var damage []spoolDamage
	for _, id := range logs {
		seg, entries, dmg, err := s.load(id)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("publisher: spool segment %d: %w", id, err)
		}
		switch {
		case dmg != nil:
			if dmg.keptAs, err = s.setAside(id); err != nil {
				return nil, nil, nil, err
			}
			damage = append(damage, *dmg)
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
	for _, id := range dones { // settle records whose log is gone
		if !slices.Contains(logs, id) {
			_, donePath := s.paths(id)
			if err := os.Remove(donePath); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, nil, fmt.Errorf("publisher: spool: %w", err)
			}
		}
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
func (s *spool) load(id uint64) (*segment, []*entry, *spoolDamage, error) {
	logPath, donePath := s.paths(id)
	done := map[uint64]bool{}
	data, err := os.ReadFile(donePath)
	switch {
	case err == nil:
		if torn := len(data) % 8; torn != 0 {
			// A torn settle record: drop it, or every later one is misread.
			data = data[:len(data)-torn]
			if err := os.Truncate(donePath, int64(len(data))); err != nil {
				return nil, nil, nil, err
			}
		}
		for i := 0; i+8 <= len(data); i += 8 {
			done[binary.LittleEndian.Uint64(data[i:])] = true
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, nil, nil, err
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		return nil, nil, nil, err
	}
	seg := &segment{sp: s, id: id, size: int64(len(log)), doneSize: int64(len(data))}
	var entries []*entry
	var dmg *spoolDamage
	for off := 0; off < len(log); {
		e, n, err := readRecord(log[off:])
		if err != nil {
			if !tornTail(log[off:]) {
				dmg = &spoolDamage{segment: id, offset: int64(off), err: err}
			}
			break
		}
		off += n
		s.seq = max(s.seq, e.seq)
		if done[e.seq] {
			continue
		}
		entries = append(entries, e)
	}
	if dmg != nil {
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

// tornTail reports whether b, starting at a record that cannot be read, is
// what a crash while appending leaves: a record that runs to the end of
// the file or past it, or zeros.
func tornTail(b []byte) bool {
	if len(b) < recordHeader {
		return true
	}
	if n := binary.LittleEndian.Uint32(b); uint64(recordHeader)+uint64(n) >= uint64(len(b)) {
		return true
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
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
