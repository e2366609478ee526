package publisher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// Conns is where the publisher gets its connection: connection.Supervisor,
// or connection.Fixed for a connection the application manages.
type Conns interface {
	Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error)
}

// Buffered publishes to JetStream through a bounded buffer: Publish returns
// once a message is accepted, and the publisher sends it when the
// connection is there, confirms it with the stream's ack, and sends it
// again after a disconnect, a timeout or a transient error. Every message
// carries a Nats-Msg-Id, so a message sent twice is stored once (within
// the stream's duplicate window).
//
// A Buffered is a suture.Service; its methods are safe for concurrent use.
type Buffered struct {
	cfg    Config
	conns  Conns
	events *supervisor.Events
	spool  *spool

	mu       sync.Mutex
	queue    []*entry // accepted, not yet sent, oldest first
	retries  []*entry // failed sends waiting for their due time
	inflight map[*nats.Msg]*entry
	count    int // accepted and not settled
	bytes    int
	space    chan struct{} // closed and replaced when room frees, if anyone waits
	waiting  int           // publishers waiting for room
	handing  int           // messages taken from the queue, not yet handed to nats.go
	current  *sending      // the send loop's connection, nil when not connected
	stopping bool

	work       chan struct{} // something to send, or room in the window
	maxPayload atomic.Int64
	stats      counters

	noStreamMu sync.Mutex
	noStream   map[string]time.Time // subjects found in no stream, and when
}

// entry is one accepted message until it is settled.
type entry struct {
	msg      *nats.Msg
	size     int
	future   *Future
	attempts int
	due      time.Time
	noStream bool     // the last send found no stream responding
	sender   *sending // the send in flight, nil when not in flight
	seq      uint64
	seg      *segment
}

// Future is the outcome of one published message.
type Future struct {
	done chan struct{}
	ack  *jetstream.PubAck
	err  error
}

func newFuture() *Future { return &Future{done: make(chan struct{})} }

// Done is closed once the message is acknowledged by the stream or has
// failed for good.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result is the stream's ack or the final error; call it after Done.
func (f *Future) Result() (*jetstream.PubAck, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	default:
		return nil, errors.New("publisher: not settled yet")
	}
}

// Wait waits for the outcome, or until ctx ends (the message stays
// buffered and is still sent).
func (f *Future) Wait(ctx context.Context) (*jetstream.PubAck, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *Future) settle(ack *jetstream.PubAck, err error) {
	f.ack, f.err = ack, err
	close(f.done)
}

// New validates cfg and returns a publisher that sends when served. With a
// spool directory, messages a previous run left unsettled are queued
// first.
func New(cfg Config, conns Conns) (*Buffered, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Buffered{cfg: cfg, conns: conns, events: cfg.Events, inflight: map[*nats.Msg]*entry{},
		space: make(chan struct{}), work: make(chan struct{}, 1), noStream: map[string]time.Time{}}
	p.maxPayload.Store(1 << 20) // nats-server's default, until connected
	if cfg.SpoolDir != "" {
		s, recovered, err := openSpool(cfg.SpoolDir, cfg.SpoolSync)
		if err != nil {
			return nil, err
		}
		p.spool = s
		for _, e := range recovered {
			e.future = newFuture()
			p.queue = append(p.queue, e)
			p.count++
			p.bytes += e.size
		}
		if len(recovered) > 0 {
			p.events.Emit(SpoolRecovered{EventTime: p.events.Now(), Messages: len(recovered), Dir: cfg.SpoolDir})
		}
	}
	return p, nil
}

// String names the service in the tree.
func (p *Buffered) String() string { return "publisher" }

// Option sets a header on a published message.
type Option func(h nats.Header)

// WithMsgID sets the message's Nats-Msg-Id instead of a generated one.
func WithMsgID(id string) Option {
	return func(h nats.Header) { h.Set(jetstream.MsgIDHeader, id) }
}

// WithExpectStream fails the publish unless it lands in stream.
func WithExpectStream(stream string) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedStreamHeader, stream) }
}

// WithExpectLastSequence fails the publish unless the stream's last
// sequence is seq.
func WithExpectLastSequence(seq uint64) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedLastSeqHeader, fmt.Sprint(seq)) }
}

// WithExpectLastSequencePerSubject fails the publish unless the last
// sequence on its subject is seq.
func WithExpectLastSequencePerSubject(seq uint64) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(seq)) }
}

// WithExpectLastMsgID fails the publish unless the stream's last message
// has Nats-Msg-Id id.
func WithExpectLastMsgID(id string) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedLastMsgIDHeader, id) }
}

// Publish accepts data for subject into the buffer and returns at once
// with the Future of its ack. The data is copied. When the buffer is full
// it fails with ErrBufferFull, or waits for room until ctx ends (on_full:
// block). A message too large for the server fails with ErrTooLarge.
func (p *Buffered) Publish(ctx context.Context, subject string, data []byte, opts ...Option) (*Future, error) {
	return p.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, opts...)
}

// PublishMsg is Publish for a message with headers. msg is copied.
func (p *Buffered) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...Option) (*Future, error) {
	e, err := p.prepare(msg, opts)
	if err != nil {
		return nil, err
	}
	if err := p.accept(ctx, e, false); err != nil {
		return nil, err
	}
	return e.future, nil
}

// PublishSync publishes and waits for the stream's ack. When nothing
// older waits to be sent it publishes at once from this goroutine, as
// nats.go's synchronous publish does; otherwise, or when that fails, the
// message takes its turn in the buffer like any other. If ctx ends first,
// the message stays buffered and is still sent.
func (p *Buffered) PublishSync(ctx context.Context, subject string, data []byte, opts ...Option) (*jetstream.PubAck, error) {
	e, err := p.prepare(&nats.Msg{Subject: subject, Data: data}, opts)
	if err != nil {
		return nil, err
	}
	if err := p.accept(ctx, e, true); err != nil {
		return nil, err
	}
	return e.future.Wait(ctx)
}

// prepare copies msg into a new entry with its Msg-Id and options.
func (p *Buffered) prepare(msg *nats.Msg, opts []Option) (*entry, error) {
	if err := subject.Validate(msg.Subject, false); err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	m := &nats.Msg{Subject: msg.Subject, Data: append([]byte(nil), msg.Data...), Header: nats.Header{}}
	for k, v := range msg.Header {
		m.Header[k] = append([]string(nil), v...)
	}
	for _, o := range opts {
		o(m.Header)
	}
	if m.Header.Get(jetstream.MsgIDHeader) == "" {
		m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	}
	size := len(m.Data) + len(m.Subject) + headerSize(m.Header)
	if limit := p.maxPayload.Load(); int64(size) > limit {
		return nil, fmt.Errorf("%w: %d bytes, the server accepts %d", ErrTooLarge, size, limit)
	}
	return &entry{msg: m, size: size, future: newFuture()}, nil
}

func headerSize(h nats.Header) int {
	n := 0
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// accept waits for room (or fails) and queues e, or sends it at once when
// nothing older waits: asynchronously, or synchronously with sync.
func (p *Buffered) accept(ctx context.Context, e *entry, sync bool) error {
	p.mu.Lock()
	for {
		if p.stopping {
			p.mu.Unlock()
			return ErrStopped
		}
		if p.count < p.cfg.BufferMsgs && p.bytes+e.size <= int(p.cfg.BufferBytes) || p.count == 0 {
			break
		}
		if p.cfg.OnFull == Error {
			p.mu.Unlock()
			p.stats.rejected.Add(1)
			return ErrBufferFull
		}
		space := p.space
		p.waiting++
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.waiting--
			p.mu.Unlock()
			p.stats.rejected.Add(1)
			return fmt.Errorf("%w: %w", ErrBufferFull, ctx.Err())
		case <-space:
		}
		p.mu.Lock()
		p.waiting--
	}
	if p.spool != nil {
		if err := p.spool.append(e); err != nil {
			p.mu.Unlock()
			return err
		}
	}
	p.count++
	p.bytes += e.size
	p.stats.published.Add(1)
	// Nothing older waits to be sent: send from this goroutine rather than
	// hand over to the send loop. Later messages of this caller cannot
	// overtake it, and the hand-over is most of a publish's cost.
	if snd := p.current; snd != nil && len(p.queue) == 0 && len(p.retries) == 0 && p.handing == 0 &&
		len(p.inflight) < p.cfg.MaxInFlight {
		p.handing++
		p.inflight[e.msg] = e
		e.sender = snd
		p.mu.Unlock()
		if sync {
			p.sendSync(ctx, e, snd)
		} else {
			p.send(e, snd)
		}
		return nil
	}
	p.queue = append(p.queue, e)
	p.mu.Unlock()
	p.wake()
	return nil
}

func (p *Buffered) wake() {
	select {
	case p.work <- struct{}{}:
	default:
	}
}

// settle ends e with its ack or final error and frees its room.
func (p *Buffered) settle(e *entry, ack *jetstream.PubAck, err error) {
	if p.spool != nil {
		if serr := p.spool.settle(e); serr != nil {
			p.events.Emit(SpoolError{EventTime: p.events.Now(), Err: serr})
		}
	}
	p.mu.Lock()
	p.count--
	p.bytes -= e.size
	if p.waiting > 0 {
		close(p.space)
		p.space = make(chan struct{})
	}
	p.mu.Unlock()
	switch {
	case err == nil:
		p.stats.acked.Add(1)
		if ack.Duplicate {
			p.stats.duplicates.Add(1)
		}
	case errors.Is(err, ErrStopped):
	default:
		p.stats.failed.Add(1)
		p.failedEvent(e, err)
	}
	e.future.settle(ack, err)
}
