package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Result is what the checker found.
type Result struct {
	Faults       int
	Published    int // messages the publisher accepted
	Acked        int // of those, acknowledged by their stream
	Processed    int // distinct messages processed
	Lost         int // acknowledged, then not stored or never processed
	Unexpected   int // stored or processed, never published
	Duplicates   int // orders stored more than once
	Redeliveries int // handler runs beyond one per message
	Wedged       int // task slots held with no task running, once settled
	Panics       int64
	Replies      int
	Recoveries   []Recovery
	Problems     []string // every violation, named
}

// Failed reports whether the run broke a promise.
func (r Result) Failed() bool {
	return r.Lost > 0 || r.Unexpected > 0 || r.Duplicates > 0 || r.Wedged > 0 || len(r.Problems) > 0
}

// Add adds o's figures to r's.
func (r *Result) Add(o Result) {
	r.Faults += o.Faults
	r.Published += o.Published
	r.Acked += o.Acked
	r.Processed += o.Processed
	r.Lost += o.Lost
	r.Unexpected += o.Unexpected
	r.Duplicates += o.Duplicates
	r.Redeliveries += o.Redeliveries
	r.Wedged += o.Wedged
	r.Panics += o.Panics
	r.Replies += o.Replies
	r.Recoveries = append(r.Recoveries, o.Recoveries...)
	r.Problems = append(r.Problems, o.Problems...)
}

// Summary is the one-line result the campaign ends with.
func (r Result) Summary() string {
	return fmt.Sprintf("chaos: faults=%d published=%d acked=%d processed_unique=%d lost=%d unexpected=%d duplicates=%d wedged=%d redeliveries=%d recovery_p99_ms=%d",
		r.Faults, r.Published, r.Acked, r.Processed, r.Lost, r.Unexpected, r.Duplicates, r.Wedged, r.Redeliveries, r.recoveryMillis(0.99))
}

// Detail is the rest: panics, replies and the recovery percentiles.
func (r Result) Detail() string {
	return fmt.Sprintf("panics_injected=%d replies_ok=%d recovery_p50_ms=%d recovery_p99_ms=%d",
		r.Panics, r.Replies, r.recoveryMillis(0.5), r.recoveryMillis(0.99))
}

// recoveryMillis is the q-quantile of the recoveries, each the later of
// first ack and first processed after healing.
func (r Result) recoveryMillis(q float64) int64 {
	if len(r.Recoveries) == 0 {
		return 0
	}
	d := make([]time.Duration, len(r.Recoveries))
	for i, rec := range r.Recoveries {
		d[i] = max(rec.Ack, rec.Processed)
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))].Milliseconds()
}

// Check compares the ledger with the orders stream as the server holds
// it at the end.
func Check(ctx context.Context, js jetstream.JetStream, l *Ledger, recoveries []Recovery, panics int64) (Result, error) {
	stored, err := readOrders(ctx, js)
	if err != nil {
		return Result{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Result{Faults: len(recoveries), Published: len(l.attempted), Acked: len(l.acked), Processed: len(l.processed),
		Panics: panics, Replies: l.replies, Recoveries: recoveries}
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	for id := range l.processed {
		if _, ok := l.attempted[id]; !ok {
			r.Unexpected++
			problem("processed %s, never published", id)
		}
	}
	r.Redeliveries = l.runs - len(l.processed)
	for id, n := range stored {
		if _, ok := l.attempted[id]; !ok {
			r.Unexpected++
			problem("stored %s, never published", id)
		}
		if n > 1 {
			r.Duplicates += n - 1
			problem("%s stored %d times", id, n)
		}
		if l.processed[id] == 0 {
			problem("%s stored, never processed", id)
		}
	}
	for id := range l.acked {
		_, inStream := stored[id]
		if (isOrder(id) && !inStream) || l.processed[id] == 0 {
			r.Lost++
			problem("%s acknowledged, then lost (stored %v, processed %d times)", id, inStream, l.processed[id])
		}
	}
	for id, err := range l.failed {
		problem("%s failed for good: %s", id, err)
	}
	checkWatch(ctx, js, l, problem)
	for _, s := range l.badReply {
		problem("request: %s", s)
	}
	for _, s := range l.findings {
		problem("%s", s)
	}
	sort.Strings(r.Problems)
	return r, nil
}

// checkWatch checks that the watcher saw every acknowledged result
// revision, each once and in order. For a revision unseen it says whether
// the bucket holds it, which tells a gap in the watch from a write the
// server lost.
func checkWatch(ctx context.Context, js jetstream.JetStream, l *Ledger, problem func(string, ...any)) {
	bucket, err := js.Stream(ctx, "KV_"+resultsBucket)
	for rev, key := range l.puts {
		if l.watched[rev] > 0 {
			continue
		}
		held := fmt.Sprintf("the bucket: %v", err)
		if err == nil {
			m, gerr := bucket.GetMsg(ctx, rev)
			switch {
			case gerr != nil:
				held = fmt.Sprintf("not in the bucket: %v", gerr)
			default:
				held = fmt.Sprintf("in the bucket as %s", m.Subject)
			}
		}
		problem("result %s revision %d never seen by the watcher (%s)", key, rev, held)
	}
	for rev, n := range l.watched {
		if n > 1 {
			problem("revision %d seen %d times by the watcher", rev, n)
		}
	}
	for _, s := range l.order {
		problem("watcher out of order: %s", s)
	}
}

// readOrders reads the whole orders stream and counts each message id.
func readOrders(ctx context.Context, js jetstream.JetStream) (map[string]int, error) {
	s, err := js.Stream(ctx, ordersStream) // fetches the info: the state read is that of now
	if err != nil {
		return nil, err
	}
	info := s.CachedInfo()
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	stored := map[string]int{}
	for n := uint64(0); n < info.State.Msgs; n++ {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("reading the orders stream after %d of %d: %w", n, info.State.Msgs, err)
		}
		// The payload is the id: a message stored twice under two Msg-Ids
		// is still a duplicate.
		stored[string(m.Data())]++
	}
	return stored, nil
}
