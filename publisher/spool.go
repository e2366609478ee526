package publisher

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// spool keeps accepted messages on disk until they are settled, so that a
// crash of the application loses none. It is an append-only log in
// segments: NNN.log holds records, NNN.done the sequences of the records
// settled since. A segment is deleted once every record in it is settled
// and a newer one is being written. A torn record at the end of a segment
// (a crash while writing) fails its checksum and is ignored.
//
// A small log of our own rather than a library: the access pattern is one
// writer appending and acknowledging in roughly the same order, which
// needs no index, no compaction and no dependency.
type spool struct {
	dir  string
	sync bool

	mu   sync.Mutex
	cur  *segment
	segs map[uint64]*segment
	seq  uint64
}

type segment struct {
	id      uint64
	log     *os.File
	done    *os.File
	size    int64
	pending int
}

const segmentSize = 16 << 20

// record layout: length (4), crc32 of the rest (4), sequence (8), subject
// length (2), subject, header length (4), header JSON, data.
const recordHeader = 8

// openSpool opens (or creates) the spool in dir and returns the messages
// it holds that were never settled, oldest first.
func openSpool(dir string, sync bool) (*spool, []*entry, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("publisher: spool: %w", err)
	}
	s := &spool{dir: dir, sync: sync, segs: map[uint64]*segment{}}
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, nil, err
	}
	var ids []uint64
	for _, n := range names {
		id, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64)
		if err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var recovered []*entry
	for _, id := range ids {
		seg, entries, err := s.load(id)
		if err != nil {
			return nil, nil, fmt.Errorf("publisher: spool segment %d: %w", id, err)
		}
		if seg.pending == 0 {
			s.remove(seg)
			continue
		}
		s.segs[id] = seg
		recovered = append(recovered, entries...)
		for _, e := range entries {
			s.seq = max(s.seq, e.seq)
		}
	}
	next := uint64(1)
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	if err := s.roll(next); err != nil {
		return nil, nil, err
	}
	return s, recovered, nil
}

// load reads a segment's unsettled records and opens it for settling.
func (s *spool) load(id uint64) (*segment, []*entry, error) {
	logPath, donePath := s.paths(id)
	done := map[uint64]bool{}
	if data, err := os.ReadFile(donePath); err == nil {
		for i := 0; i+8 <= len(data); i += 8 {
			done[binary.LittleEndian.Uint64(data[i:])] = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	f, err := os.Open(logPath)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	seg := &segment{id: id}
	var entries []*entry
	r := bufio.NewReader(f)
	for {
		e, n, err := readRecord(r)
		if err != nil {
			break // end of the log, or a torn last record
		}
		seg.size += int64(n)
		if done[e.seq] {
			continue
		}
		e.seg = seg
		seg.pending++
		entries = append(entries, e)
	}
	if seg.pending > 0 {
		if seg.done, err = os.OpenFile(donePath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return nil, nil, err
		}
	}
	return seg, entries, nil
}

func readRecord(r io.Reader) (*entry, int, error) {
	var head [recordHeader]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, 0, err
	}
	n := binary.LittleEndian.Uint32(head[0:])
	if n < 14 || n > 1<<30 {
		return nil, 0, errors.New("bad record length")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, 0, err
	}
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(head[4:]) {
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
	msg.Data = rest[hl:]
	e.msg, e.size = msg, len(msg.Data)+len(msg.Subject)
	return e, recordHeader + int(n), nil
}

// append writes e and gives it its sequence.
func (s *spool) append(e *entry) error {
	var hdr []byte
	if len(e.msg.Header) > 0 {
		var err error
		if hdr, err = json.Marshal(e.msg.Header); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.size >= segmentSize {
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

// settle records that e no longer needs the spool.
func (s *spool) settle(e *entry) error {
	if e.seg == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seg := e.seg
	e.seg = nil
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], e.seq)
	if _, err := seg.done.Write(b[:]); err != nil {
		return fmt.Errorf("publisher: spool: %w", err)
	}
	seg.pending--
	if seg.pending == 0 && seg != s.cur {
		s.remove(seg)
		delete(s.segs, seg.id)
	}
	return nil
}

func (s *spool) roll(id uint64) error {
	logPath, donePath := s.paths(id)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("publisher: spool: %w", err)
	}
	done, err := os.OpenFile(donePath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		_ = log.Close()
		return fmt.Errorf("publisher: spool: %w", err)
	}
	if old := s.cur; old != nil && old.pending == 0 {
		s.remove(old)
		delete(s.segs, old.id)
	} else if old != nil {
		_ = old.log.Close()
		old.log = nil
	}
	s.cur = &segment{id: id, log: log, done: done}
	s.segs[id] = s.cur
	return nil
}

func (s *spool) remove(seg *segment) {
	if seg.log != nil {
		_ = seg.log.Close()
	}
	if seg.done != nil {
		_ = seg.done.Close()
	}
	logPath, donePath := s.paths(seg.id)
	_ = os.Remove(logPath)
	_ = os.Remove(donePath)
}

func (s *spool) paths(id uint64) (string, string) {
	base := filepath.Join(s.dir, fmt.Sprintf("%012d", id))
	return base + ".log", base + ".done"
}

// close closes every file; what is unsettled stays for the next start.
func (s *spool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range s.segs {
		if seg.log != nil {
			_ = seg.log.Close()
		}
		if seg.done != nil {
			_ = seg.done.Close()
		}
	}
	s.segs = map[uint64]*segment{}
}
