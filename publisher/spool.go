package publisher

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// spool keeps accepted messages on disk until they are settled, so that a
// crash of the application loses none. It is an append-only log in
// segments: NNN.log holds records, NNN.done the sequences of the records
// settled since. A segment is deleted once every record in it is settled
// and a newer one is being written; a new segment always gets an id above
// every file in the directory, so a .done left by a crash never applies to
// new records. A torn record at the end of a segment (a crash while
// writing: its declared length runs past the end) is ignored; any other
// unreadable bytes are damage: the segment is set aside as
// NNN.log.corrupt and its readable unsettled records, before and after
// the damage, are written again.
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

// segment is one log file of the spool and its settle file.
type segment struct {
	sp       *spool
	id       uint64
	log      *os.File // nil unless this is the segment being written
	done     *os.File
	size     int64
	doneSize int64
	pending  int // records not yet settled
}

const defaultSegmentSize = 16 << 20

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
	rec, err := encodeRecord(s.seq+1, e.msg, hdr)
	if err != nil {
		return err
	}
	s.seq++
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

// paths returns the files of segment id: its log and its settle records.
func (s *spool) paths(id uint64) (logPath, donePath string) {
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
