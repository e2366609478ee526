package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/internal/jsapi"
)

const (
	// chunkSize is nats.go's default, so that its readers see the same
	// objects.
	chunkSize = 128 << 10
	// putWindow bounds a put's unacknowledged chunks, and its memory.
	putWindow = 8
	// putCleanup bounds the removal of a failed put's chunks.
	putCleanup = 10 * time.Second
	// metaAttempts bounds how often a put's metadata is written again
	// after other puts of the same name replaced the object first.
	metaAttempts = 10
)

// Put stores what r yields as the object name, replacing any object of
// that name once it is complete: an interrupted put (r fails, ctx ends,
// the store is full) leaves the previous object, and no part of the new
// one, visible. A cancelled put returns ctx's error.
//
// The chunks go to a subject of their own, at most 8 unacknowledged at a
// time, and only once the stream has acknowledged every one is the
// object's metadata, which makes it visible, written; then the previous
// version's chunks are removed. (nats.go's Put writes the metadata before
// the chunks are acknowledged: a chunk refused by a full store left a
// visible object without its data, in place of the previous one.)
func (s *Store) Put(ctx context.Context, name string, r io.Reader) (*jetstream.ObjectInfo, error) {
	if name == "" {
		return nil, fmt.Errorf("objectstore: put: %w", jetstream.ErrBadObjectMeta)
	}
	store, err := s.object(ctx, "put", name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.newPut(ctx, store, name)
	if err == nil {
		err = p.write(ctx, r)
	}
	if err != nil {
		return nil, s.fail(store, "put", name, err)
	}
	return p.info, nil
}

// put is one Put's object on the wire.
type put struct {
	js          jetstream.JetStream
	stream      jetstream.Stream
	info        *jetstream.ObjectInfo // the object put
	subject     string                // of the chunks
	metaSubject string
	prev        *jetstream.ObjectInfo // the version replaced, nil if none
	prevSeq     uint64                // prev's sequence, 0 if none
	acks        [putWindow]jetstream.PubAckFuture
}

// newPut looks up the store's stream and the version of the object name
// that the put is to replace.
func (s *Store) newPut(ctx context.Context, store jetstream.ObjectStore, name string) (*put, error) {
	js, stream, err := s.streamOf(ctx, store)
	if err != nil {
		return nil, err
	}
	meta := metaSubject(s.name, name)
	prev, prevSeq, err := lastMeta(ctx, stream, meta)
	if err != nil {
		return nil, err
	}
	id := nuid.Next()
	info := &jetstream.ObjectInfo{Bucket: s.name, NUID: id,
		ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}}}
	return &put{js: js, stream: stream, info: info, subject: chunkSubject(s.name, id), metaSubject: meta,
		prev: prev, prevSeq: prevSeq}, nil
}

// write stores the chunks, then the metadata that makes them the object,
// then removes the chunks of the version it replaced.
func (p *put) write(ctx context.Context, r io.Reader) error {
	size, chunks, digest, err := p.chunks(ctx, r)
	if err != nil {
		p.discard(ctx)
		return err
	}
	p.info.Size, p.info.Chunks, p.info.Digest = size, chunks, digest
	if err := p.meta(ctx); err != nil {
		if !errors.Is(err, errUnknown) {
			p.discard(ctx)
		} // else the chunks stay: better unused chunks than an object without them
		return err
	}
	p.info.ModTime = time.Now().UTC()
	if prev := p.prev; prev != nil && !prev.Deleted && prev.NUID != "" {
		// The previous version is no longer visible: its chunks go, even
		// when ctx has just ended. A failure leaves them stored, never the
		// object broken.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putCleanup)
		_ = p.stream.Purge(cctx, jetstream.WithPurgeSubject(chunkSubject(p.info.Bucket, prev.NUID)))
		cancel()
	}
	return nil
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

// meta writes the object's metadata in place of p.prev, stored at
// p.prevSeq; when it returns nil, p.prev is the version it replaced,
// whose chunks are to go.
//
// The write expects prevSeq as the subject's last sequence: when another
// put replaced the object meanwhile, it is written again in place of that
// one (see replaced), whose chunks would otherwise stay stored for good.
// It carries the put's NUID as Msg-Id: when no answer comes it is sent
// again until the stream answers, for at most putCleanup, then err wraps
// errUnknown. (The stream checks the sequence before duplicates: a write
// whose ack was lost is found by reading the subject back.)
func (p *put) meta(ctx context.Context) error {
	m, err := p.metaMsg()
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), putCleanup)
	defer cancel()
	var unanswered error // the first failure without an answer
	for conflicts := 0; ; {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(p.prevSeq, 10))
		actx, acancel := ctx, context.CancelFunc(func() {})
		if unanswered != nil {
			actx, acancel = context.WithTimeout(cctx, time.Second)
		}
		_, err := p.js.PublishMsg(actx, m)
		acancel()
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return nil
		case jsapi.WrongLastSequence(err):
			stored, err := p.replaced(cctx, conflicts, err)
			if stored || err != nil {
				return err
			}
			conflicts++
			continue
		case errors.As(err, &apiErr):
			return err // the stream refused it
		}
		if unanswered == nil {
			unanswered = err
		}
		if cctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("%w: %w", errUnknown, unanswered)
		}
		select { // a failure that comes at once (disconnected) is not retried in a spin
		case <-time.After(100 * time.Millisecond):
		case <-cctx.Done():
		}
	}
}

// metaMsg is the message that stores the object's metadata, rolling up
// the versions before it.
func (p *put) metaMsg() (*nats.Msg, error) {
	data, err := json.Marshal(p.info)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(p.metaSubject)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	m.Header.Set(jetstream.MsgIDHeader, p.info.NUID)
	m.Data = data
	return m, nil
}

// replaced reads back the metadata after the stream refused the put's
// write, which expected another last sequence (err). stored is true when
// what it holds is this put's own (its ack was lost); otherwise the put
// is to replace what it holds instead, after at most metaAttempts such
// conflicts.
func (p *put) replaced(ctx context.Context, conflicts int, err error) (stored bool, _ error) {
	cur, seq, rerr := lastMeta(ctx, p.stream, p.metaSubject)
	switch {
	case rerr != nil:
		return false, fmt.Errorf("%w: %w", errUnknown, rerr)
	case cur != nil && cur.NUID == p.info.NUID:
		return true, nil // stored, its ack lost
	case conflicts >= metaAttempts:
		return false, fmt.Errorf("replaced by other puts %d times: %w", conflicts, err)
	}
	p.prev, p.prevSeq = cur, seq
	return false, nil
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

// PutBytes stores data as the object name, as Put does.
func (s *Store) PutBytes(ctx context.Context, name string, data []byte) (*jetstream.ObjectInfo, error) {
	return s.Put(ctx, name, bytes.NewReader(data))
}

// PutFile stores the file at path as the object name, as Put does.
func (s *Store) PutFile(ctx context.Context, name, path string) (*jetstream.ObjectInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("objectstore: put %s: %w", name, err)
	}
	defer f.Close()
	return s.Put(ctx, name, f)
}
