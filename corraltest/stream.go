package corraltest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pollEvery is how often a wait asks the server again: nothing announces
// that a stream has stored a message, so a wait for one polls, within its
// deadline.
const pollEvery = 10 * time.Millisecond

// StreamMsgs returns the messages the stream named stream stores now, in
// sequence order, on the subjects filter selects (wildcards allowed;
// empty: every subject). It reads them one request at a time, with no
// consumer, so it is meant for the few messages of a test. It fails the
// test when the stream does not exist or cannot be read, when ctx ends
// first (DefaultTimeout when ctx has no deadline), and when the Client is
// not running.
func (k *Kit) StreamMsgs(ctx context.Context, stream, filter string) []*jetstream.RawStreamMsg {
	k.t.Helper()
	k.started("StreamMsgs")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	msgs, err := k.readStream(ctx, stream, filter)
	if err != nil {
		k.t.Fatalf("corraltest: read stream %s: %v", stream, err)
	}
	return msgs
}

// WaitStreamMsgs waits until the stream named stream stores at least n
// messages on the subjects filter selects, and returns them all as
// StreamMsgs does. It fails the test, saying how many it found, when ctx
// ends first (DefaultTimeout when ctx has no deadline); a stream that
// does not exist yet is waited for.
func (k *Kit) WaitStreamMsgs(ctx context.Context, stream, filter string, n int) []*jetstream.RawStreamMsg {
	k.t.Helper()
	k.started("WaitStreamMsgs")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	msgs, err := k.waitStream(ctx, stream, filter, n)
	if err != nil {
		k.t.Fatalf("corraltest: waited for %d message(s) on %q in stream %s: %v", n, subjects(filter), stream, err)
	}
	return msgs
}

// waitStream polls the stream's count of messages on filter until it is
// at least n, then reads them.
func (k *Kit) waitStream(ctx context.Context, stream, filter string, n int) ([]*jetstream.RawStreamMsg, error) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	found, counted := 0, false
	var missing error // the stream's absence, when last asked
	for {
		count, err := k.count(ctx, stream, filter)
		switch {
		case ctx.Err() != nil:
		case err == nil && count >= n:
			return k.readStream(ctx, stream, filter)
		case err == nil:
			found, counted, missing = count, true, nil
		case errors.Is(err, jetstream.ErrStreamNotFound):
			missing = err
		default:
			return nil, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			switch {
			case missing != nil:
				return nil, fmt.Errorf("%w: %w", missing, ctx.Err())
			case counted:
				return nil, fmt.Errorf("found %d: %w", found, ctx.Err())
			}
			return nil, fmt.Errorf("not counted once: %w", ctx.Err())
		}
	}
}

// count is how many messages the stream stores on filter.
func (k *Kit) count(ctx context.Context, stream, filter string) (int, error) {
	js, err := k.jetStream(ctx)
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	if filter == "" {
		return int(s.CachedInfo().State.Msgs), nil
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return int(n), nil
}

// readStream reads the stream's messages on filter, up to the last
// sequence it had when the read began, each the first on filter at or
// after the sequence past the one before.
func (k *Kit) readStream(ctx context.Context, stream, filter string) ([]*jetstream.RawStreamMsg, error) {
	js, err := k.jetStream(ctx)
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	state := s.CachedInfo().State
	if filter == "" {
		filter = ">"
	}
	var out []*jetstream.RawStreamMsg
	for seq := state.FirstSeq; state.Msgs > 0 && seq <= state.LastSeq; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("message at or after sequence %d on %q: %w", seq, filter, err)
		}
		if m.Sequence > state.LastSeq {
			break
		}
		out = append(out, m)
		seq = m.Sequence + 1
	}
	return out, nil
}

// Bucket returns the current value of every key of the KV bucket named
// bucket (any bucket, not only those of the Client's configuration);
// deleted and purged keys are left out. It fails the test when the bucket
// does not exist or cannot be read, when ctx ends first (DefaultTimeout
// when ctx has no deadline), and when the Client is not running.
func (k *Kit) Bucket(ctx context.Context, bucket string) map[string][]byte {
	k.t.Helper()
	k.started("Bucket")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	values, err := k.readBucket(ctx, bucket)
	if err != nil {
		k.t.Fatalf("corraltest: read bucket %s: %v", bucket, err)
	}
	return values
}

// readBucket watches every key of the bucket until the watch has
// delivered what the bucket holds, then stops it.
func (k *Kit) readBucket(ctx context.Context, bucket string) (map[string][]byte, error) {
	js, err := k.jetStream(ctx)
	if err != nil {
		return nil, err
	}
	b, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	w, err := b.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, err
	}
	defer func() { _ = w.Stop() }()
	values := map[string][]byte{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("the watch ended after %d keys", len(values))
			}
			if e == nil { // all it held is delivered
				return values, nil
			}
			values[e.Key()] = e.Value()
		case <-ctx.Done():
			return nil, fmt.Errorf("reading its %d keys so far: %w", len(values), ctx.Err())
		}
	}
}

// jetStream is the Client's JetStream on its live connection.
func (k *Kit) jetStream(ctx context.Context) (jetstream.JetStream, error) {
	nc, err := k.Client.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return k.Client.JetStreamAPI().New(nc)
}

func subjects(filter string) string {
	if filter == "" {
		return ">"
	}
	return filter
}
