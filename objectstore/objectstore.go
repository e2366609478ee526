package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/redeclare"
	"github.com/corral-go/corral/internal/streamwatch"
	"github.com/corral-go/corral/internal/subject"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error.
	ErrInvalidConfig = conf.ErrInvalid
	// ErrNotFound: no such object. Also matches jetstream.ErrObjectNotFound.
	ErrNotFound = errors.New("objectstore: object not found")
	// ErrDigestMismatch: what was read does not match the object's
	// digest. Also matches jetstream.ErrDigestMismatch.
	ErrDigestMismatch = errors.New("objectstore: digest mismatch")
	// ErrStoreNotFound: a bound store does not exist, or the store
	// disappeared (deleted, or a memory store lost in a server restart);
	// unless bound, the next call declares it again.
	ErrStoreNotFound = errors.New("objectstore: store not found")
)

// Config declares an object store.
type Config struct {
	// Description is shown by tools.
	Description string `yaml:"description"`
	// TTL removes objects this long after they were put. Default none.
	TTL time.Duration `yaml:"ttl"`
	// MaxBytes bounds the store. Default unlimited.
	MaxBytes conf.ByteSize `yaml:"max_bytes"`
	// Storage is file (default) or memory.
	Storage string `yaml:"storage"`
	// Replicas is the number of copies in a cluster. Default 1.
	Replicas int `yaml:"replicas"`
	// Compression compresses stored chunks (S2).
	Compression bool `yaml:"compression"`
	// Bind uses the existing store as it is and fails when it does not
	// exist. Default false: the store is created, or updated to match.
	Bind bool `yaml:"bind"`
}

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	p := conf.NewProblems("")
	if c.TTL < 0 || c.MaxBytes < 0 {
		p.Addf("", "ttl and max_bytes must not be negative")
	}
	switch c.Storage {
	case "", "file", "memory":
	default:
		p.Addf("storage", "%q is not one of file, memory", c.Storage)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		p.Addf("replicas", "must be between 1 and 5, got %d", c.Replicas)
	}
	return p.Err()
}

// Store is an object store that follows the connection: after it is
// replaced, the next call uses the new one. Objects are streamed in
// chunks, so their size does not bound memory. Its methods are safe for
// concurrent use.
type Store struct {
	name string
	cfg  Config
	src  connection.Source

	declared redeclare.Declared[jetstream.ObjectStore]

	mu        sync.Mutex
	jsConn    *nats.Conn
	js        jetstream.JetStream // one per connection
	streamFor jetstream.ObjectStore
	stream    jetstream.Stream // streamFor's stream, once looked up
}

// Open returns the store name, declared (or bound) on first use.
func Open(name string, cfg Config, src connection.Source) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("objectstore: %s: %w", name, err)
	}
	if err := ValidStoreName(name); err != nil {
		return nil, err
	}
	return &Store{name: name, cfg: cfg, src: src}, nil
}

// ValidStoreName reports whether name can name a store: letters, digits,
// - and _ only.
func ValidStoreName(name string) error {
	if err := subject.ValidBucket(name); err != nil {
		return fmt.Errorf("objectstore: %w: store %w", ErrInvalidConfig, err)
	}
	return nil
}

// Name is the store's name.
func (s *Store) Name() string { return s.name }

// Raw is the nats.go store on the current connection.
func (s *Store) Raw(ctx context.Context) (jetstream.ObjectStore, error) { return s.current(ctx) }

// current is the store declared on the current connection.
func (s *Store) current(ctx context.Context) (jetstream.ObjectStore, error) {
	nc, _, err := s.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	store, err := s.declared.Get(ctx, nc, func(ctx context.Context) (jetstream.ObjectStore, error) {
		return s.declare(ctx, nc)
	})
	if err != nil {
		return nil, fmt.Errorf("objectstore: open %s: %w", s.name, err)
	}
	return store, nil
}

func (s *Store) declare(ctx context.Context, nc *nats.Conn) (jetstream.ObjectStore, error) {
	js, err := s.jetStream(nc)
	if err != nil {
		return nil, err
	}
	if s.cfg.Bind {
		store, err := js.ObjectStore(ctx, s.name)
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrStoreNotFound, err)
		}
		return store, err
	}
	oc := jetstream.ObjectStoreConfig{Bucket: s.name, Description: s.cfg.Description, TTL: s.cfg.TTL,
		MaxBytes: int64(s.cfg.MaxBytes), Replicas: max(s.cfg.Replicas, 1), Compression: s.cfg.Compression}
	if oc.MaxBytes == 0 {
		oc.MaxBytes = -1
	}
	if s.cfg.Storage == "memory" {
		oc.Storage = jetstream.MemoryStorage
	}
	return js.CreateOrUpdateObjectStore(ctx, oc)
}

// jetStream is the JetStream context of nc. One per connection: its first
// async publish subscribes for replies until the connection closes. Acks
// that never come (a dead path) fail after jsapi.Timeout instead of holding
// a put.
func (s *Store) jetStream(nc *nats.Conn) (jetstream.JetStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jsConn == nc && s.js != nil {
		return s.js, nil
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(jsapi.Timeout))
	if err != nil {
		return nil, err
	}
	s.jsConn, s.js = nc, js
	return js, nil
}

// streamOf is the stream of store, looked up once per declaration.
func (s *Store) streamOf(ctx context.Context, store jetstream.ObjectStore) (jetstream.JetStream, jetstream.Stream, error) {
	s.mu.Lock()
	js, stream := s.js, s.stream
	if s.streamFor != store {
		stream = nil
	}
	s.mu.Unlock()
	if stream != nil {
		return js, stream, nil
	}
	stream, err := js.Stream(ctx, "OBJ_"+s.name)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.streamFor, s.stream = store, stream
	s.mu.Unlock()
	return js, stream, nil
}

// fail wraps err from a call on store; when the store's stream is gone it
// also drops store, so that the next call declares the store again.
func (s *Store) fail(store jetstream.ObjectStore, op, name string, err error) error {
	if jsapi.StreamMissing(err) {
		s.declared.Missing(store)
	}
	return wrap(op, name, err)
}

func wrap(op, name string, err error) error {
	switch {
	case jsapi.StreamMissing(err):
		return fmt.Errorf("%w: %s %s: %w", ErrStoreNotFound, op, name, err)
	case errors.Is(err, jetstream.ErrObjectNotFound), errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("%w: %s %s: %w", ErrNotFound, op, name, err)
	case errors.Is(err, jetstream.ErrDigestMismatch):
		return fmt.Errorf("%w: %s %s: %w", ErrDigestMismatch, op, name, err)
	}
	return fmt.Errorf("objectstore: %s %s: %w", op, name, err)
}

// Put stores what r yields as the object name, replacing any object of
// that name once it is complete: an interrupted put (r fails, ctx ends,
// the store is full) leaves the previous object, and no part of the new
// one, visible.
//
// The chunks go to a subject of their own, at most putWindow unacked at
// a time, and only once the stream has acknowledged every one is the
// object's metadata, which makes it visible, written; then the previous
// version's chunks are removed. (nats.go's Put writes the metadata before
// the chunks are acknowledged: a chunk refused by a full store left a
// visible object without its data, in place of the previous one.)
func (s *Store) Put(ctx context.Context, name string, r io.Reader) (*jetstream.ObjectInfo, error) {
	if name == "" {
		return nil, fmt.Errorf("objectstore: put: %w", jetstream.ErrBadObjectMeta)
	}
	store, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	js, stream, err := s.streamOf(ctx, store)
	if err != nil {
		return nil, s.fail(store, "put", name, err)
	}
	metaSubject := "$O." + s.name + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	prev, prevSeq, err := lastMeta(ctx, stream, metaSubject)
	if err != nil {
		return nil, s.fail(store, "put", name, err)
	}
	id := nuid.Next()
	p := &put{js: js, stream: stream, subject: "$O." + s.name + ".C." + id, metaSubject: metaSubject}
	info := &jetstream.ObjectInfo{Bucket: s.name, NUID: id,
		ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}}}
	size, chunks, digest, err := p.chunks(ctx, r)
	if err != nil {
		p.discard(ctx)
		return nil, s.fail(store, "put", name, err)
	}
	info.Size, info.Chunks, info.Digest = size, chunks, digest
	prev, err = p.meta(ctx, info, prev, prevSeq)
	if err != nil {
		if !errors.Is(err, errUnknown) {
			p.discard(ctx)
		} // else the chunks stay: better unused chunks than an object without them
		return nil, s.fail(store, "put", name, err)
	}
	info.ModTime = time.Now().UTC()
	if prev != nil && !prev.Deleted && prev.NUID != "" {
		// The previous version is no longer visible: its chunks go, even
		// when ctx has just ended. A failure leaves them stored, never the
		// object broken.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putCleanup)
		_ = stream.Purge(cctx, jetstream.WithPurgeSubject("$O."+s.name+".C."+prev.NUID))
		cancel()
	}
	return info, nil
}

// errUnknown: no answer tells whether the object's metadata was stored.
var errUnknown = errors.New("not known whether the object was stored")

const (
	// chunkSize is nats.go's default, so that its readers see the same
	// objects.
	chunkSize = 128 << 10
	// putWindow bounds a put's unacknowledged chunks, and its memory.
	putWindow = 8
	// putCleanup bounds the removal of a failed put's chunks.
	putCleanup = 10 * time.Second
)

// put is one Put's chunks on the wire.
type put struct {
	js          jetstream.JetStream
	stream      jetstream.Stream
	subject     string // of the chunks
	metaSubject string
	acks        [putWindow]jetstream.PubAckFuture
}

// chunks sends what r yields and waits until every chunk is acknowledged.
func (p *put) chunks(ctx context.Context, r io.Reader) (size uint64, n uint32, digest string, err error) {
	var bufs [putWindow][]byte
	h := sha256.New()
	for {
		slot := n % putWindow
		// A buffer is reused once its chunk is stored: nats.go keeps the
		// message until then.
		if err := p.wait(ctx, slot); err != nil {
			return 0, 0, "", err
		}
		if bufs[slot] == nil {
			bufs[slot] = make([]byte, chunkSize)
		}
		got, rerr := fill(r, bufs[slot])
		if err := ctx.Err(); err != nil {
			return 0, 0, "", err
		}
		if got > 0 {
			h.Write(bufs[slot][:got])
			ack, err := p.js.PublishMsgAsync(&nats.Msg{Subject: p.subject, Data: bufs[slot][:got]})
			if err != nil {
				return 0, 0, "", err
			}
			p.acks[slot] = ack
			size += uint64(got)
			n++
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, 0, "", rerr
		}
	}
	for slot := range uint32(putWindow) {
		if err := p.wait(ctx, slot); err != nil {
			return 0, 0, "", err
		}
	}
	return size, n, jetstream.GetObjectDigestValue(h), nil
}

// fill reads into buf until it is full or r fails; only io.EOF from r
// ends the object (io.ReadFull would pass a reader's own
// io.ErrUnexpectedEOF, a truncated body, off as the end).
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// wait waits for the ack of the chunk in slot, if any.
func (p *put) wait(ctx context.Context, slot uint32) error {
	ack := p.acks[slot]
	if ack == nil {
		return nil
	}
	select {
	case <-ack.Ok():
		p.acks[slot] = nil
		return nil
	case err := <-ack.Err():
		p.acks[slot] = nil
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// metaAttempts bounds how often a put's metadata is written again after
// other puts of the same name replaced the object first.
const metaAttempts = 10

// meta writes the object's metadata in place of prev's, stored at
// prevSeq, and returns the version it replaced, whose chunks are to go.
//
// The write expects prevSeq as the subject's last sequence: when another
// put replaced the object meanwhile, it is written again in place of that
// one, whose chunks would otherwise stay stored for good. It carries the
// put's NUID as Msg-Id: when no answer comes it is sent again until the
// stream answers, for at most putCleanup, then err wraps errUnknown. (The
// stream checks the sequence before duplicates: a write whose ack was
// lost is found by reading the subject back.)
func (p *put) meta(ctx context.Context, info, prev *jetstream.ObjectInfo, prevSeq uint64) (*jetstream.ObjectInfo, error) {
	data, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(p.metaSubject)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Header.Set(jetstream.MsgIDHeader, info.NUID)
	m.Data = data
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putCleanup)
	defer cancel()
	var unanswered error // the first failure without an answer
	for conflicts := 0; ; {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(prevSeq, 10))
		actx, acancel := ctx, context.CancelFunc(func() {})
		if unanswered != nil {
			actx, acancel = context.WithTimeout(cctx, time.Second)
		}
		_, err := p.js.PublishMsg(actx, m)
		acancel()
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return prev, nil
		case jsapi.WrongLastSequence(err):
			cur, seq, rerr := lastMeta(cctx, p.stream, p.metaSubject)
			switch {
			case rerr != nil:
				return nil, fmt.Errorf("%w: %w", errUnknown, rerr)
			case cur != nil && cur.NUID == info.NUID:
				return prev, nil // stored, its ack lost
			case conflicts >= metaAttempts:
				return nil, fmt.Errorf("replaced by other puts %d times: %w", conflicts, err)
			}
			conflicts++
			prev, prevSeq = cur, seq
			continue
		case errors.As(err, &apiErr):
			return nil, err // the stream refused it
		}
		if unanswered == nil {
			unanswered = err
		}
		if cctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			return nil, fmt.Errorf("%w: %w", errUnknown, unanswered)
		}
		select { // a failure that comes at once (disconnected) is not retried in a spin
		case <-time.After(100 * time.Millisecond):
		case <-cctx.Done():
		}
	}
}

// lastMeta is the object's metadata as stored at subject, and its
// sequence; nil and 0 when there is none. Metadata that does not decode
// is returned as nil with its sequence: it names no chunks to remove.
func lastMeta(ctx context.Context, stream jetstream.Stream, subject string) (*jetstream.ObjectInfo, uint64, error) {
	m, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return nil, m.Sequence, nil
	}
	return &info, m.Sequence, nil
}

// discard removes what a failed put stored, once the chunks still on the
// wire have landed or failed.
func (p *put) discard(ctx context.Context) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putCleanup)
	defer cancel()
	for _, ack := range p.acks {
		if ack == nil {
			continue
		}
		select {
		case <-ack.Ok():
		case <-ack.Err():
		case <-cctx.Done():
		}
	}
	_ = p.stream.Purge(cctx, jetstream.WithPurgeSubject(p.subject))
}

// PutBytes stores data as the object name.
func (s *Store) PutBytes(ctx context.Context, name string, data []byte) (*jetstream.ObjectInfo, error) {
	return s.Put(ctx, name, bytes.NewReader(data))
}

// PutFile stores the file at path as the object name.
func (s *Store) PutFile(ctx context.Context, name, path string) (*jetstream.ObjectInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("objectstore: put %s: %w", name, err)
	}
	defer f.Close()
	return s.Put(ctx, name, f)
}

// Get writes the object name to w, chunk by chunk, and verifies its digest
// at the end: ErrDigestMismatch means w received corrupt data.
func (s *Store) Get(ctx context.Context, name string, w io.Writer) (*jetstream.ObjectInfo, error) {
	store, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	info, err := store.GetInfo(ctx, name)
	if err != nil {
		return nil, s.fail(store, "get", name, err)
	}
	if info.Opts != nil && info.Opts.Link != nil {
		// A link: nats.go follows it, to this store or another.
		res, err := store.Get(ctx, name)
		if err != nil {
			return nil, s.fail(store, "get", name, err)
		}
		defer res.Close()
		if _, err := io.Copy(w, res); err != nil {
			return nil, s.fail(store, "get", name, err)
		}
		return res.Info()
	}
	if err := s.chunks(ctx, store, info, w); err != nil {
		return nil, s.fail(store, "get", name, err)
	}
	return info, nil
}

// errChunksGone: the object was replaced or deleted during a get.
var errChunksGone = fmt.Errorf("%w: its chunks are gone (replaced or deleted during the get)", jetstream.ErrObjectNotFound)

const (
	// getWindow bounds the chunks a get has asked for and not yet written.
	getWindow = 4
	// chunkWait: a chunk the stream holds comes at once; none for this
	// long means it is gone or the server unreachable.
	chunkWait = 30 * time.Second
	// chunkProbe: after waiting this long for a chunk, a get asks whether
	// any remain.
	chunkProbe = 2 * time.Second
	// resetAttempts bounds nats.go's re-creation of a get's consumer (1 s
	// apart and doubling, about 7 s), which would otherwise go on for ever
	// against a deleted store.
	resetAttempts = 4
	// getIdle: a get's consumer that nobody pulls from for this long is
	// removed by the server. Longer than a slow writer takes for a chunk
	// would do no harm either: nats.go re-creates it where it left off.
	getIdle = time.Minute
)

// chunks writes the object's chunks to w, read through an ordered pull
// consumer that asks for getWindow at a time: memory stays bounded however
// slowly w writes, and only ctx bounds the time it takes. (nats.go's Get
// buffers what a push consumer delivers, and ends after 5 s when ctx has
// no deadline.)
func (s *Store) chunks(ctx context.Context, store jetstream.ObjectStore, info *jetstream.ObjectInfo, w io.Writer) error {
	h := sha256.New()
	subject := "$O." + s.name + ".C." + info.NUID
	if info.Chunks == 1 {
		// One chunk, the last on its subject: a single direct get.
		_, stream, err := s.streamOf(ctx, store)
		if err != nil {
			return err
		}
		m, err := stream.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return err
		}
		if uint64(len(m.Data)) != info.Size {
			return fmt.Errorf("%w: %d bytes in 1 chunk, the object has %d", jetstream.ErrDigestMismatch, len(m.Data), info.Size)
		}
		h.Write(m.Data)
		if _, err := w.Write(m.Data); err != nil {
			return err
		}
	}
	if info.Chunks > 1 {
		_, stream, err := s.streamOf(ctx, store)
		if err != nil {
			return err
		}
		// The server removes a consumer left behind (a crash) once idle
		// for getIdle; a get removes its own at the end. nats.go re-creates
		// it after a server restart, a few times.
		cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject}, InactiveThreshold: getIdle, MaxResetAttempts: resetAttempts})
		if err != nil {
			return err
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
			defer cancel()
			_ = stream.DeleteConsumer(dctx, cons.CachedInfo().Name)
		}()
		if cons.CachedInfo().NumPending == 0 {
			return errChunksGone
		}
		it, err := cons.Messages(jetstream.PullMaxMessages(getWindow))
		if err != nil {
			return err
		}
		defer it.Stop()
		// Next re-creating the consumer does not watch ctx; stopping the
		// iterator ends it.
		defer context.AfterFunc(ctx, it.Stop)()
		var size uint64
		for i := range info.Chunks {
			m, err := nextChunk(ctx, cons, it)
			if err != nil {
				return err
			}
			data := m.Data()
			size += uint64(len(data))
			h.Write(data)
			if _, err := w.Write(data); err != nil {
				return err
			}
			if meta, err := m.Metadata(); err == nil && meta.NumPending == 0 && i+1 < info.Chunks {
				return errChunksGone
			}
		}
		if size != info.Size {
			return fmt.Errorf("%w: %d bytes in %d chunks, the object has %d", jetstream.ErrDigestMismatch,
				size, info.Chunks, info.Size)
		}
	}
	want, err := jetstream.DecodeObjectDigest(info.Digest)
	if err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return jetstream.ErrDigestMismatch
	}
	return nil
}

// nextChunk waits for the next chunk. A chunk the stream holds comes at
// once: when none came for chunkProbe and the consumer has none pending,
// the object was replaced or deleted meanwhile; none for chunkWait, the
// server is out of reach.
func nextChunk(ctx context.Context, cons jetstream.Consumer, it jetstream.MessagesContext) (jetstream.Msg, error) {
	for waited := time.Duration(0); ; waited += chunkProbe {
		cctx, cancel := context.WithTimeout(ctx, chunkProbe)
		m, err := it.Next(jetstream.NextContext(cctx))
		cancel()
		switch {
		case err == nil:
			return m, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return nil, err
		case waited+chunkProbe >= chunkWait:
			return nil, fmt.Errorf("no chunk for %v: %w", chunkWait, err)
		}
		info, err := cons.Info(ctx)
		switch {
		case jsapi.StreamMissing(err):
			return nil, err
		case err == nil && info.NumPending == 0:
			return nil, errChunksGone
		}
	}
}

// GetBytes returns the object name.
func (s *Store) GetBytes(ctx context.Context, name string) ([]byte, error) {
	var b bytes.Buffer
	if _, err := s.Get(ctx, name, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// GetFile writes the object name to path, through a temporary file renamed
// once the digest is verified: path never holds a partial or corrupt
// object.
func (s *Store) GetFile(ctx context.Context, name, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("objectstore: get %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := s.Get(ctx, name, tmp); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("objectstore: get %s: %w", name, err)
	}
	return os.Rename(tmp.Name(), path)
}

// Info describes the object name.
func (s *Store) Info(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	store, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	info, err := store.GetInfo(ctx, name)
	if err != nil {
		return nil, s.fail(store, "info", name, err)
	}
	return info, nil
}

// List describes every object in the store.
func (s *Store) List(ctx context.Context) ([]*jetstream.ObjectInfo, error) {
	store, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(store, "list", "", err)
	}
	return infos, nil
}

// Delete removes the object name.
func (s *Store) Delete(ctx context.Context, name string) error {
	store, err := s.current(ctx)
	if err != nil {
		return err
	}
	if err := store.Delete(ctx, name); err != nil {
		return s.fail(store, "delete", name, err)
	}
	return nil
}

// AddLink makes name a link to the object target of this store: getting
// name gets target.
func (s *Store) AddLink(ctx context.Context, name, target string) (*jetstream.ObjectInfo, error) {
	store, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	to, err := store.GetInfo(ctx, target)
	if err != nil {
		return nil, s.fail(store, "link", target, err)
	}
	info, err := store.AddLink(ctx, name, to)
	if err != nil {
		return nil, s.fail(store, "link", name, err)
	}
	return info, nil
}

// Change is one change of a watched store: an object put, or deleted
// (Info.Deleted), or Synced once the current objects have been delivered.
type Change struct {
	Info   *jetstream.ObjectInfo
	Synced bool
}

// WatchFunc receives each change of a store, once and in order. An error
// fails the watch, which is restarted per its policy and delivers that
// change again.
type WatchFunc func(ctx context.Context, c Change) error

// Watch returns a supervised watch of the store (a suture.Service) named
// name: it delivers the current objects (unless updatesOnly), then every
// change, and after an error, a server restart or a replaced connection
// resumes after the last change it delivered, with no gap among the
// changes the store still holds and no duplicate. The store is declared
// (or bound) before it is watched.
func (s *Store) Watch(name string, updatesOnly bool, fn WatchFunc) *streamwatch.Watch {
	store, src := s.name, s.src
	var declared jetstream.ObjectStore // by Prepare; the watch calls Prepare and Missing in turn
	return streamwatch.New(streamwatch.Config{
		Name: name, Stream: "OBJ_" + store, Filters: []string{"$O." + store + ".M.>"}, UpdatesOnly: updatesOnly,
		Deliver: func(ctx context.Context, m jetstream.Msg) error {
			var info jetstream.ObjectInfo
			if err := json.Unmarshal(m.Data(), &info); err != nil {
				return fmt.Errorf("objectstore: watch %s: %w", store, err)
			}
			if meta, err := m.Metadata(); err == nil {
				info.ModTime = meta.Timestamp
			}
			return fn(ctx, Change{Info: &info})
		},
		InitialDone: func(ctx context.Context) error { return fn(ctx, Change{Synced: true}) },
		// The store may have been declared before and deleted since: the
		// watch then declares it again rather than fail until another call
		// does.
		Prepare: func(ctx context.Context) (err error) {
			declared, err = s.current(ctx)
			return err
		},
		Missing: func() { s.declared.Missing(declared) },
	}, src)
}
