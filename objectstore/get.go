package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/afterfunc"
	"github.com/corral-go/corral/internal/jsapi"
)

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

// Get writes the object name to w, chunk by chunk, and verifies its size
// and digest at the end: [ErrDigestMismatch] means w received corrupt
// data. Only ctx bounds how long it takes. It fails with [ErrNotFound]
// when there is no such object, when the object is replaced or deleted
// while it reads, and when the server sends no chunk for 30 s.
func (s *Store) Get(ctx context.Context, name string, w io.Writer) (*jetstream.ObjectInfo, error) {
	store, err := s.object(ctx, "get", name)
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

// chunks writes the object's chunks to w and verifies them. (nats.go's
// Get buffers what a push consumer delivers, and ends after 5 s when ctx
// has no deadline.)
func (s *Store) chunks(ctx context.Context, store jetstream.ObjectStore, info *jetstream.ObjectInfo, w io.Writer) error {
	h := sha256.New()
	if info.Chunks > 0 {
		_, stream, err := s.streamOf(ctx, store)
		if err != nil {
			return err
		}
		subject := chunkSubject(s.name, info.NUID)
		read := readChunks
		if info.Chunks == 1 {
			read = readChunk
		}
		if err := read(ctx, stream, subject, info, h, w); err != nil {
			return err
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

// readChunk writes the object of one chunk, the last on its subject, read
// with a single direct get, to h and w.
func readChunk(ctx context.Context, stream jetstream.Stream, subject string, info *jetstream.ObjectInfo, h hash.Hash, w io.Writer) error {
	m, err := stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return err
	}
	if uint64(len(m.Data)) != info.Size {
		return fmt.Errorf("%w: %d bytes in 1 chunk, the object has %d", jetstream.ErrDigestMismatch, len(m.Data), info.Size)
	}
	h.Write(m.Data)
	_, err = w.Write(m.Data)
	return err
}

// readChunks writes the object's chunks to h and w, read through an
// ordered pull consumer that asks for getWindow at a time: memory stays
// bounded however slowly w writes.
func readChunks(ctx context.Context, stream jetstream.Stream, subject string, info *jetstream.ObjectInfo, h hash.Hash, w io.Writer) error {
	// The server removes a consumer left behind (a crash) once idle for
	// getIdle; a get removes its own at the end. nats.go re-creates it
	// after a server restart, a few times.
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
	defer afterfunc.Run(ctx, it.Stop)()
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

// GetBytes returns the object name, as Get reads it.
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
