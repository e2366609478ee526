package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// scan calls fn with every record whose subject matches filter and that
// was stored before the scan began, in stream order, until fn fails or
// ctx ends. With headersOnly the records come without their tasks' data.
// Records stored since are left to the next scan: a scan that followed
// them would not end while workers claim and finish tasks.
func (l *ledger) scan(ctx context.Context, filter string, headersOnly bool, fn func(record) error) error {
	return scanStream(ctx, l.held, []string{filter}, 1, headersOnly, func(m *jetstream.RawStreamMsg) error {
		return fn(parseRecord(m))
	})
}

// errStopScan, returned by a scan's fn, ends the scan without an error.
var errStopScan = errors.New("scan stopped")

// scanStream calls fn with every message of stream on filters, from the
// sequence start to the stream's last when the scan began, in stream
// order, until fn fails (errStopScan: ends the scan) or ctx ends. The
// stream's messages may be removed meanwhile (a work queue's acked
// copies): those are passed over.
//
// It reads through ephemeral consumers of its own, not an ordered one
// (nats.go re-creates an ordered consumer without end once its connection
// is gone), and it checks that it received every record the server
// delivered: a fetch can end before its batch has all arrived, and the
// consumer counts what was dropped as delivered all the same, so a scan
// that trusted it would skip records it never saw, and the recoverer
// would leave a dead worker's tasks held for good. A scan that finds such
// a gap reads again from the first record it missed.
func scanStream(ctx context.Context, stream jetstream.Stream, filters []string, start uint64, headersOnly bool,
	fn func(*jetstream.RawStreamMsg) error) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("scan %v: %w", filters, err)
	}
	s := scanner{stream: stream, filters: filters, headersOnly: headersOnly, fn: fn, next: max(start, 1), last: info.State.LastSeq}
	for s.next <= s.last {
		done, err := s.pass(ctx)
		if errors.Is(err, errStopScan) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("scan %v: %w", filters, err)
		}
		if done {
			return nil
		}
	}
	return nil
}

// scanner is one scan: where it has read up to, and up to where it reads.
type scanner struct {
	stream      jetstream.Stream
	filters     []string
	headersOnly bool
	fn          func(*jetstream.RawStreamMsg) error
	next, last  uint64 // the first message not yet read; the last to read
}

// errGap is a record delivered to a scan that did not reach it.
var errGap = errors.New("records delivered and not received")

// pass reads from s.next through one consumer, until the records end
// (done) or a gap is found (not done: read again from s.next).
func (s *scanner) pass(ctx context.Context) (done bool, err error) {
	// The held stream keeps one record per subject, so every record is its
	// subject's last: reading from a sequence on reads current records. (A
	// work queue's stream takes no consumer that overlaps its own: it is
	// read message by message, see Queue.List.)
	cons, err := s.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubjects: s.filters,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: s.next,
		AckPolicy: jetstream.AckNonePolicy, HeadersOnly: s.headersOnly, MemoryStorage: true,
		InactiveThreshold: scanIdle})
	if err != nil {
		return false, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
		defer cancel()
		_ = s.stream.DeleteConsumer(dctx, cons.CachedInfo().Name)
	}()
	var received uint64 // deliveries of this consumer received, in order
	pending := cons.CachedInfo().NumPending
	var fresh unheard
	for pending > 0 {
		n, end, err := s.batch(ctx, cons, int(min(pending, scanBatch)), &received)
		switch {
		case errors.Is(err, errGap):
			return false, nil
		case fresh.again(ctx, err):
			continue
		case err != nil && ctx.Err() != nil:
			return false, ctx.Err()
		case err != nil:
			return false, err
		case end:
			return true, nil
		}
		fresh.heard()
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err
		}
		if info.Delivered.Consumer > received {
			return false, nil // the end of the batch was dropped
		}
		if n == 0 && info.NumPending >= pending {
			return false, fmt.Errorf("%d records pending and none delivered", info.NumPending)
		}
		pending = info.NumPending
	}
	return true, nil
}

// batch fetches up to n records and calls fn with each; it reports end
// once it reaches a record stored after the scan began. received is
// updated to what the consumer delivered. A record that comes after a gap
// fails it with errGap.
func (s *scanner) batch(ctx context.Context, cons jetstream.Consumer, n int, received *uint64) (int, bool, error) {
	// Not FetchNoWait: nats.go ends one a second after it was sent,
	// arrived or not, which a loaded server or a slow link outlasts. The
	// records are there, so the server answers as soon as it can.
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(scanWait))
	if err != nil {
		return 0, false, err
	}
	got := 0
	for m := range batch.Messages() {
		meta, err := m.Metadata()
		if err != nil {
			return got, false, err
		}
		if meta.Sequence.Consumer != *received+1 {
			return got, false, errGap
		}
		*received = meta.Sequence.Consumer
		if meta.Sequence.Stream > s.last {
			return got, true, nil
		}
		got++
		raw := &jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: meta.Sequence.Stream, Header: m.Headers(),
			Data: m.Data(), Time: meta.Timestamp}
		s.next = meta.Sequence.Stream + 1
		if err := s.fn(raw); err != nil {
			return got, false, err
		}
	}
	return got, false, batch.Error()
}

// scanWait bounds a fetch of a scan: the records are there, so it is
// reached only when some were removed since they were counted.
const scanWait = 5 * time.Second

// scanIdle is how long a scan's consumer outlives its scan when the scan
// could not delete it (its process died).
const scanIdle = time.Minute

// scanBatch bounds the records a scan asks for at a time.
const scanBatch = 1000
