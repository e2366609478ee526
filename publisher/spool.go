package publisher

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"golang.org/x/sys/unix"
)

// spool keeps accepted messages on disk until they are settled, so that a
// crash of the application loses none. It is an append-only log in
// segments: NNN.log holds records, NNN.done the sequences of the records
// settled since. A segment is deleted once every record in it is settled
// and a newer one is being written; a new segment always gets an id above
// every file in the directory, so a .done left by a crash never applies to
// new records. A torn record at the end of a segment (a crash while
// writing) is ignored; a bad record followed by more data is damage: the
// segment is set aside as NNN.log.corrupt and its readable unsettled
// records are written again.
//
// A small log of our own rather than a library: the access pattern is one
// writer appending and acknowledging in roughly the same order, which
// needs no index, no compaction and no dependency.
type spool struct {
	dir         string
	sync        bool
	segmentSize int64
	lock        *os.File // holds the flock on dir

	mu     sync.Mutex
	closed bool
	cur    *segment
	segs   map[uint64]*segment
	seq    uint64
}

type segment struct {
	sp       *spool
	id       uint64
	log      *os.File
	done     *os.File
	size     int64
	doneSize int64
	pending  int
}

// spoolDamage is a segment set aside for a bad record.
type spoolDamage struct {
	segment uint64
	offset  int64
	err     error
	keptAs  string
}

const defaultSegmentSize = 16 << 20

// record layout: length (4), crc32 of the rest (4), sequence (8), subject
// length (2), subject, header length (4), header JSON, data.
const recordHeader = 8

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

func readRecord(b []byte) (*entry, int, error) {
	if len(b) < recordHeader {
		return nil, 0, errors.New("short record")
	}
	n := int(binary.LittleEndian.Uint32(b[0:]))
	if n < 14 || n > len(b)-recordHeader {
		return nil, 0, fmt.Errorf("bad record length %d", n)
	}
	body := b[recordHeader : recordHeader+n]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, errors.New("bad checksum")
	}
	e := &entry{seq: binary.LittleEndian.Uint64(body[0:])}
	sl := int(binary.LittleEndian.Uint16(body[8:]))
	if 10+sl+4 > len(body) {
		return nil, 0, errors.New("bad subject length")
	}
	msg := &nats.Msg{Subject: string(body[10 : 10+sl])}
	hl := int(binary.LittleEndian.Uint32(body[10+sl:]))
	rest := body[14+sl:]
	if hl > len(rest) {
		return nil, 0, errors.New("bad header length")
	}
	if hl > 0 {
		if err := json.Unmarshal(rest[:hl], &msg.Header); err != nil {
			return nil, 0, err
		}
	}
	msg.Data = slices.Clone(rest[hl:])
	e.msg, e.size = msg, msgSize(msg)
	return e, recordHeader + n, nil
}

// append writes e and gives it its sequence and segment.
func (s *spool) append(e *entry) error {
	var hdr []byte
	if len(e.msg.Header) > 0 {
		var err error
		if hdr, err = json.Marshal(e.msg.Header); err != nil {
			return fmt.Errorf("publisher: spool: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("publisher: spool: %w", os.ErrClosed)
	}
	if s.cur.size >= s.segmentSize {
		if err := s.roll(s.cur.id + 1); err != nil {
			return err
		}
	}
	s.seq++
	body := make([]byte, 14+len(e.msg.Subject)+len(hdr)+len(e.msg.Data))
	binary.LittleEndian.PutUint64(body[0:], s.seq)
	binary.LittleEndian.PutUint16(body[8:], uint16(len(e.msg.Subject)))
	copy(body[10:], e.msg.Subject)
	binary.LittleEndian.PutUint32(body[10+len(e.msg.Subject):], uint32(len(hdr)))
	copy(body[14+len(e.msg.Subject):], hdr)
	copy(body[14+len(e.msg.Subject)+len(hdr):], e.msg.Data)
	rec := make([]byte, recordHeader+len(body))
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(body)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.ChecksumIEEE(body))
	copy(rec[recordHeader:], body)
	if _, err := s.cur.log.Write(rec); err != nil {
		return fmt.Errorf("publisher: spool: %w", err)
	}
	if s.sync {
		if err := s.cur.log.Sync(); err != nil {
			return fmt.Errorf("publisher: spool: %w", err)
		}
	}
	s.cur.size += int64(len(rec))
	s.cur.pending++
	e.seq, e.seg = s.seq, s.cur
	return nil
}

// settle records that e no longer needs the spool. After close it does
// nothing: the record stays for the next start.
func (s *spool) settle(e *entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	seg := e.seg
	if s.closed || seg == nil {
		return nil
	}
	e.seg = nil
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], e.seq)
	if _, err := seg.done.Write(b[:]); err != nil {
		// A short write would misalign every later settle record.
		_ = seg.done.Truncate(seg.doneSize)
		return fmt.Errorf("publisher: spool: %w", err)
	}
	seg.doneSize += int64(len(b))
	if s.sync {
		if err := seg.done.Sync(); err != nil {
			return fmt.Errorf("publisher: spool: %w", err)
		}
	}
	seg.pending--
	if seg.pending == 0 && seg != s.cur {
		delete(s.segs, seg.id)
		return s.remove(seg)
	}
	return nil
}

// roll starts segment id, which no file in the directory may have.
func (s *spool) roll(id uint64) error {
	logPath, donePath := s.paths(id)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("publisher: spool: %w", err)
	}
	done, err := os.OpenFile(donePath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		_ = log.Close()
		_ = os.Remove(logPath)
		return fmt.Errorf("publisher: spool: %w", err)
	}
	old := s.cur
	s.cur = &segment{sp: s, id: id, log: log, done: done}
	s.segs[id] = s.cur
	if err := s.syncDir(); err != nil {
		return err
	}
	switch {
	case old == nil:
	case old.pending == 0:
		delete(s.segs, old.id)
		return s.remove(old)
	default:
		err := old.log.Close()
		old.log = nil
		if err != nil {
			return fmt.Errorf("publisher: spool: %w", err)
		}
	}
	return nil
}

// remove deletes a settled segment: its .done first, so that a crash in
// between leaves a log whose records are sent again (and deduplicated),
// never settle records without their log.
func (s *spool) remove(seg *segment) error {
	if seg.log != nil {
		_ = seg.log.Close()
		seg.log = nil
	}
	if seg.done != nil {
		_ = seg.done.Close()
		seg.done = nil
	}
	logPath, donePath := s.paths(seg.id)
	for _, p := range []string{donePath, logPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("publisher: spool: %w", err)
		}
	}
	return s.syncDir()
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

// syncDir makes creations and removals durable, with SpoolSync.
func (s *spool) syncDir() error {
	if !s.sync {
		return nil
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("publisher: spool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("publisher: spool: %w", err)
	}
	return nil
}

func (s *spool) paths(id uint64) (string, string) {
	base := filepath.Join(s.dir, fmt.Sprintf("%012d", id))
	return base + ".log", base + ".done"
}

// close closes every file and releases the lock; what is unsettled stays
// for the next start. Later settles do nothing.
func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for _, seg := range s.segs {
		if seg.log != nil {
			_ = seg.log.Close()
		}
		if seg.done != nil {
			_ = seg.done.Close()
		}
	}
	s.segs = map[uint64]*segment{}
	_ = s.lock.Close() // releases the flock
}
