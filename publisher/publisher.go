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

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/subject"
)

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
	src    connection.Source
	events *event.Emitter

	mu       sync.Mutex
	spool    *spool
	queue    []*entry // accepted, not yet sent, oldest first
	retries  []*entry // to be sent again, in accept order
	checks   []*entry // refused for an expectation: does the stream hold them?
	inflight map[*nats.Msg]*entry
	count    int // accepted and not settled
	bytes    int
	order    uint64        // the last accept stamp
	space    chan struct{} // closed and replaced when room frees, if anyone waits
	waiting  int           // publishers waiting for room
	handing  int           // messages taken from the queue, not yet handed to nats.go
	direct   int           // of which PublishSync callers hand over themselves
	current  *sending      // the send loop's connection, nil when not connected
	serving  bool
	stopping bool // Publish is refused
	closed   bool // a stop has collected what is left: late returns are undelivered

	work       chan struct{} // something to send, or room in the window
	maxPayload atomic.Int64
	stats      counters

	noStreamMu sync.Mutex
	noStream   map[string]time.Time // subjects found in no stream, and when
}

// entry is one accepted message until it is settled.
type entry struct {
	msg       *nats.Msg
	size      int
	future    *Future
	order     uint64 // accept order: re-sends go out by it
	attempts  int    // sends that failed other than by a lost connection
	due       time.Time
	noStream  bool     // the last send found no stream responding
	sender    *sending // the send in flight, nil when not in flight
	sent      bool     // handed to nats.go at least once: the stream may hold it
	sends     int      // times handed to nats.go
	lastErr   error
	recovered bool // from the spool: no caller holds its Future
	settled   bool
	seq       uint64
	seg       *segment
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
// spool directory, New opens and locks it, and messages a previous run
// left unsettled are queued first; Close releases it if the publisher is
// never served.
func New(cfg Config, src connection.Source) (*Buffered, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Buffered{cfg: cfg, src: src, events: event.New(cfg.Events), inflight: map[*nats.Msg]*entry{},
		space: make(chan struct{}), work: make(chan struct{}, 1), noStream: map[string]time.Time{}}
	p.maxPayload.Store(1 << 20) // nats-server's default, until connected
	if err := p.openSpool(); err != nil {
		return nil, err
	}
	return p, nil
}

// openSpool opens the configured spool and queues what it holds; the
// caller holds p.mu or owns p alone.
func (p *Buffered) openSpool() error {
	if p.cfg.SpoolDir == "" || p.spool != nil {
		return nil
	}
	s, recovered, damage, err := openSpool(p.cfg.SpoolDir, p.cfg.SpoolSync, p.cfg.segmentSize)
	if err != nil {
		return err
	}
	p.spool = s
	for _, d := range damage {
		p.events.Emit(SpoolCorrupt{EventTime: p.events.Stamp(), Dir: p.cfg.SpoolDir, Segment: d.segment,
			Offset: d.offset, Err: d.err, KeptAs: d.keptAs})
	}
	for _, e := range recovered {
		p.order++
		e.order, e.future, e.recovered = p.order, newFuture(), true
		p.queue = append(p.queue, e)
		p.count++
		p.bytes += e.size
	}
	if len(recovered) > 0 {
		p.events.Emit(SpoolRecovered{EventTime: p.events.Stamp(), Messages: len(recovered), Dir: p.cfg.SpoolDir})
	}
	return nil
}

// Close ends a publisher that is not being served, as a stop does without
// the flush: every buffered message is reported (to OnUndelivered, or left
// in the spool) and the spool is released. Serve stops by itself when its
// ctx ends; Close is for a publisher never served, or not served again.
// Serve may still be called after it.
func (p *Buffered) Close() error {
	p.mu.Lock()
	serving, closed := p.serving, p.closed
	p.mu.Unlock()
	if serving {
		return ErrServing
	}
	if closed {
		return nil
	}
	return p.stop(context.Background(), nil)
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

// Publish accepts data for subject into the buffer and returns with the
// Future of its ack; the send loop sends it. The data is copied. When the
// buffer is full it fails with ErrBufferFull, or waits for room until ctx
// ends (on_full: block). A message too large for the server fails with
// ErrTooLarge. With a spool, Publish returns once the message is written
// there (and fsynced, with SpoolSync).
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
// older waits to be sent it hands the message to nats.go from this
// goroutine, which then may block while nats.go flushes a full write
// buffer; otherwise the message takes its turn in the buffer like any
// other. If ctx ends first, the message stays buffered and is still sent.
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
	m := &nats.Msg{Subject: msg.Subject, Data: append([]byte(nil), msg.Data...), Header: copyHeader(msg.Header)}
	for _, o := range opts {
		o(m.Header)
	}
	if m.Header.Get(jetstream.MsgIDHeader) == "" {
		m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	}
	if size, limit := payloadSize(m), p.maxPayload.Load(); int64(size) > limit {
		return nil, fmt.Errorf("%w: %d bytes of data and headers, the server accepts %d", ErrTooLarge, size, limit)
	}
	return &entry{msg: m, size: msgSize(m), future: newFuture()}, nil
}

func copyHeader(h nats.Header) nats.Header {
	c := make(nats.Header, len(h)+1)
	for k, v := range h {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// msgSize is what a message counts against BufferBytes.
func msgSize(m *nats.Msg) int { return len(m.Subject) + payloadSize(m) }

// payloadSize is what nats-server checks against its max payload: the data
// and the encoded headers ("NATS/1.0\r\n", "Key: value\r\n" each, "\r\n").
func payloadSize(m *nats.Msg) int {
	n := len(m.Data)
	if len(m.Header) == 0 {
		return n
	}
	n += len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

// accept waits for room (or fails) and queues e; with sync, it sends e
// at once when nothing older waits.
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
	p.order++
	e.order = p.order
	p.count++
	p.bytes += e.size
	p.stats.published.Add(1)
	// A synchronous caller waits anyway: it sends from its own goroutine
	// rather than hand over to the send loop, which is most of the cost of
	// one publish. Publish always hands over, so that it never blocks in
	// nats.go's flush of a full write buffer.
	if snd := p.current; sync && snd != nil && len(p.queue) == 0 && len(p.retries) == 0 && p.handing == 0 &&
		len(p.inflight) < p.cfg.MaxInFlight {
		p.handing++
		p.inflight[e.msg] = e
		e.sender, e.sent = snd, true
		e.sends++
		p.direct++
		p.mu.Unlock()
		p.send(e, snd)
		p.mu.Lock()
		p.direct--
		p.mu.Unlock()
		p.wake()
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

// settle ends e with its ack, or with a final error (then e also goes to
// OnUndelivered), and takes it out of the spool.
func (p *Buffered) settle(e *entry, ack *jetstream.PubAck, err error) {
	if !p.release(e) {
		return
	}
	if e.seg != nil {
		if serr := e.seg.sp.settle(e); serr != nil {
			p.events.Emit(SpoolError{EventTime: p.events.Stamp(), Err: serr})
		}
	}
	if err == nil {
		p.stats.acked.Add(1)
		if ack.Duplicate {
			p.stats.duplicates.Add(1)
		}
	} else {
		p.stats.failed.Add(1)
		p.failedEvent(e, err)
		p.report(e, err)
	}
	e.future.settle(ack, err)
}

// undeliver ends e, not delivered by a stop: with a spool it stays there
// for the next start, without one it goes to OnUndelivered.
func (p *Buffered) undeliver(e *entry) {
	if !p.release(e) {
		return
	}
	if e.seg != nil {
		e.future.settle(nil, fmt.Errorf("%w: %w", ErrStopped, ErrSpooled))
		return
	}
	errs := []error{ErrStopped}
	if e.sent {
		errs = append(errs, ErrMaybeStored)
	}
	err := errors.Join(append(errs, e.lastErr)...)
	p.stats.undelivered.Add(1)
	p.report(e, err)
	e.future.settle(nil, err)
}

// release frees e's room, once: it reports whether e was still unsettled.
func (p *Buffered) release(e *entry) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.settled {
		return false
	}
	e.settled = true
	p.count--
	p.bytes -= e.size
	if p.waiting > 0 {
		close(p.space)
		p.space = make(chan struct{})
	}
	return true
}

// report hands a message that was not stored to OnUndelivered, with its
// headers (its Nats-Msg-Id among them).
func (p *Buffered) report(e *entry, err error) {
	if p.cfg.OnUndelivered == nil {
		return
	}
	p.cfg.OnUndelivered(&nats.Msg{Subject: e.msg.Subject, Header: copyHeader(e.msg.Header),
		Data: append([]byte(nil), e.msg.Data...)}, err)
}
