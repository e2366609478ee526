package publisher

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
)

// Buffered publishes to JetStream through a bounded buffer: [Buffered.Publish]
// returns once a message is accepted, and the publisher sends it when the
// connection is there, confirms it with the stream's ack, and sends it
// again after a disconnect, a timeout or a transient error. Every message
// carries a Nats-Msg-Id, so a message sent twice is stored once (within
// the stream's duplicate window).
//
// A Buffered is a suture.Service ([Buffered.Serve]); its methods are safe
// for concurrent use.
type Buffered struct {
	cfg    Config
	src    connection.Source
	events *event.Emitter

	mu       sync.Mutex
	spool    *spool
	queue    []*entry // accepted, not yet sent, oldest first
	retries  []*entry // to be sent again, in accept order
	refused  []*entry // refused for an expectation on a re-send: does the stream hold them?
	inflight map[*nats.Msg]*entry
	count    int // accepted and not settled
	bytes    int
	order    uint64        // the last accept stamp
	space    chan struct{} // closed and replaced when room frees, if anyone waits
	waiters  int           // publishers waiting for room
	// taken counts the messages taken out of line (queue, retries,
	// refused) and not yet handed to nats.go, put back or settled: while
	// one is, a PublishSync caller must not send directly, or it could
	// overtake it.
	taken       int
	directSends int           // of taken, those PublishSync callers hand over themselves
	session     *session      // the send loop's session, nil when not connected
	readyChange chan struct{} // closed and replaced when session turns nil or non-nil
	serving     bool
	stopping    bool // Publish is refused
	closed      bool // a stop has collected what is left: late returns are undelivered

	// declared is, for PublishSync callers, the server's last refusal of
	// Config.Streams (done closed) while no declaration succeeded since,
	// or else the next declaration's outcome.
	declared *declaration

	work       chan struct{} // something to send, or room in the window
	maxPayload atomic.Int64
	stats      counters

	noStreamMu sync.Mutex
	noStream   map[string]time.Time // subjects found in no stream, and when
}

// entry is one accepted message until it is settled. Its path, file by
// file, goes one way: publish.go checks it (message.go) and admits it to
// the buffer (buffer.go, and the spool, spool.go); the send loop (loop.go,
// which serve.go runs on each connection) takes it from the buffer and
// hands it to nats.go (send.go), unless its PublishSync caller did so
// itself (send.go too); nats.go's answer settles it (settle.go), after
// retry.go decided whether and when it is sent again, or the loop has
// resolve.go look for it in the stream; stop.go reports what a stop
// leaves. No file calls back into one that calls it: whatever has work
// for the send loop wakes it through work.go.
type entry struct {
	msg      *nats.Msg
	size     int
	future   *Future
	order    uint64 // accept order: re-sends go out by it
	attempts int    // sends that failed other than by a lost connection
	due      time.Time
	noStream bool     // the last send found no stream responding
	session  *session // the session the send in flight went out on, nil when not in flight
	sent     bool     // handed to nats.go at least once: the stream may hold it
	sends    int      // times handed to nats.go
	lastErr  error
	settled  bool
	seq      uint64   // its record's sequence in the spool
	seg      *segment // its record's spool segment; nil without a spool, or once settled there
	// recovered is a message a previous run left in the spool: no caller
	// holds its Future.
	recovered bool
}

// New validates cfg and returns a publisher that sends on the connections
// of src when served. With a spool directory, New opens and locks it
// ([ErrSpoolLocked] if another publisher holds it), and messages a
// previous run left unsettled are queued first; [Buffered.Close] releases
// it if the publisher is never served. New starts no goroutine.
func New(cfg Config, src connection.Source) (*Buffered, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Buffered{cfg: cfg, src: src, events: event.New(cfg.Events), inflight: map[*nats.Msg]*entry{},
		space: make(chan struct{}), declared: newDeclaration(), work: make(chan struct{}, 1), noStream: map[string]time.Time{}, readyChange: make(chan struct{})}
	p.maxPayload.Store(1 << 20) // nats-server's default, until connected
	refused, err := p.recoverSpool()
	if err != nil {
		return nil, err
	}
	p.failRecovered(refused)
	return p, nil
}

// recoverSpool opens the configured spool and queues the messages a
// previous run left in it, before any new one; the caller holds p.mu or
// owns p alone. It returns, counted in the buffer and not queued, those
// that Publish refuses now (a spool of an older version may hold them):
// the caller fails them with failRecovered once p.mu is free.
func (p *Buffered) recoverSpool() ([]*entry, error) {
	if p.cfg.SpoolDir == "" || p.spool != nil {
		return nil, nil
	}
	s, recovered, damage, err := openSpool(p.cfg.SpoolDir, p.cfg.SpoolSync, p.cfg.segmentSize)
	if err != nil {
		return nil, err
	}
	p.spool = s
	for _, d := range damage {
		p.events.Emit(SpoolCorrupt{EventTime: p.events.Stamp(), Dir: p.cfg.SpoolDir, Segment: d.segment,
			Offset: d.offset, Err: d.err, KeptAs: d.keptAs})
	}
	var refused []*entry
	for _, e := range recovered {
		p.order++
		e.order, e.future, e.recovered = p.order, newFuture(), true
		p.count++
		p.bytes += e.size
		if e.lastErr = checkMsg(e.msg); e.lastErr != nil {
			refused = append(refused, e) // sent, it would be refused, or close the connection, every time
			continue
		}
		p.queue = append(p.queue, e)
	}
	if len(recovered) > 0 {
		p.events.Emit(SpoolRecovered{EventTime: p.events.Stamp(), Messages: len(recovered), Dir: p.cfg.SpoolDir})
	}
	return refused, nil
}

// failRecovered settles, as failed with the error Publish would give now,
// the spooled messages recoverSpool did not queue.
func (p *Buffered) failRecovered(refused []*entry) {
	for _, e := range refused {
		p.settle(e, nil, e.lastErr)
	}
}

// Close ends a publisher that is not being served, as a stop does without
// the flush: every buffered message is reported (to [Config.OnUndelivered],
// or left in the spool) and the spool is released. It returns [ErrServing]
// while Serve runs: Serve stops by itself when its ctx ends, and Close is
// for a publisher never served, or not served again. Closing twice does
// nothing; Serve may still be called after it.
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

// String returns "publisher", the service's name in the supervision tree.
func (p *Buffered) String() string { return "publisher" }

// Status is a snapshot of the publisher.
type Status struct {
	// Buffered and BufferedBytes are the messages accepted and not yet
	// settled: queued, in flight or waiting to be retried.
	Buffered      int
	BufferedBytes int
	// InFlight is the messages sent and not yet acknowledged.
	InFlight int
	// Published counts accepted messages; Acked those a stream stored;
	// Duplicates those it had stored already (a re-send); Retried the
	// sends made again; Failed the messages that failed for good;
	// Refused those a stream did not store because an expectation
	// (WithExpectLastSequence...) did not hold, the answer a
	// compare-and-set asked for; Rejected the Publish calls refused for a
	// full buffer; Undelivered the messages not delivered by a stop without
	// a spool.
	Published, Acked, Duplicates, Retried, Failed, Refused, Rejected, Undelivered uint64
	// Spooled is whether accepted messages are kept in a spool.
	Spooled bool
	// Ready is true while Serve sends on a connection where the configured
	// streams are declared: a message published now is sent at once.
	Ready bool
}

// Status returns a snapshot of the publisher's buffer and counts.
func (p *Buffered) Status() Status {
	st, _ := p.Observe()
	return st
}

// Observe returns a snapshot of the publisher and a channel closed at the
// next change of its Ready, so that a caller waits for it without
// polling.
func (p *Buffered) Observe() (Status, <-chan struct{}) {
	p.mu.Lock()
	st := Status{Buffered: p.count, BufferedBytes: p.bytes, InFlight: len(p.inflight), Spooled: p.spool != nil,
		Ready: p.session != nil}
	changed := p.readyChange
	p.mu.Unlock()
	c := &p.stats
	st.Published, st.Acked, st.Duplicates = c.published.Load(), c.acked.Load(), c.duplicates.Load()
	st.Retried, st.Failed, st.Rejected, st.Undelivered = c.retried.Load(), c.failed.Load(), c.rejected.Load(), c.undelivered.Load()
	st.Refused = c.refused.Load()
	return st, changed
}

// counters are the publisher's counts since it was created.
type counters struct {
	published, acked, retried, failed, refused, rejected, duplicates, undelivered atomic.Uint64

	failMu     sync.Mutex
	lastFailAt time.Time
	failsSince uint64
}
