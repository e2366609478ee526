package streamwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
)

// streamDeletedTmpl is the subject of the advisory nats-server sends when
// the stream %s is deleted.
const streamDeletedTmpl = "$JS.EVENT.ADVISORY.STREAM.DELETED.%s"

// watch runs the watch on nc until ctx ends, gone closes (jsapi.ErrConnGone), the
// stream is deleted (errStreamDeleted), the consumer loses messages or
// is lost (errReset) or something fails.
func (w *Watch) watch(ctx context.Context, nc *nats.Conn, gone <-chan struct{}) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	watching := make(chan struct{})
	defer close(watching)
	wg.Go(func() { w.followConn(gone, watching, cancel) })
	// A consumer would follow a re-created stream from the old position,
	// skipping its first messages: stop, and start again as new.
	sub, err := nc.Subscribe(fmt.Sprintf(streamDeletedTmpl, w.cfg.Stream), func(*nats.Msg) {
		cancel(errStreamDeleted)
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	cons, pass, err := w.consumer(ctx, wctx, nc)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullHeartbeat(heartbeat))
	if err != nil {
		return err
	}
	defer it.Stop()
	if w.onStart != nil {
		w.onStart()
	}
	// Next waits for a message, deaf to wctx: stopping the iterator ends
	// it.
	stopped := make(chan struct{})
	defer close(stopped)
	wg.Go(func() {
		select {
		case <-wctx.Done():
			it.Stop()
		case <-stopped:
		}
	})
	return w.deliver(ctx, wctx, it, pass)
}

// followConn ends the watch's run through cancel when the connection is
// gone for good (jsapi.ErrConnGone) or has reconnected (errReset): the
// consumer's pull requests, and a consumer on a server that restarted,
// did not survive it. It returns when watching closes.
func (w *Watch) followConn(gone, watching <-chan struct{}, cancel context.CancelCauseFunc) {
	st, changed := w.src.Observe()
	reconnects := st.Stats.Reconnects
	for {
		select {
		case <-gone:
			cancel(jsapi.ErrConnGone)
			return
		case <-watching:
			return
		case <-changed:
			st, changed = w.src.Observe()
			if st.State == connection.StateConnected && st.Stats.Reconnects != reconnects {
				cancel(errReset)
				return
			}
		}
	}
}

// consumer declares the stream (Prepare), looks it up and creates the
// consumer that goes on from where the watch is; when nothing is pending,
// the current values are all delivered. wctx is ctx, ended early when the
// watch must start again.
//
// The consumer is an ordered consumer's kind (ephemeral, in memory, one
// replica, no acks), but not nats.go's OrderedConsumer: that one, when
// its consumer is lost (a node lost, a server restarted), creates it
// again by itself with requests of 10s that nothing cancels, holding the
// lock that stopping it takes, so that a watch asked to stop then did
// not within its shutdown timeout, and one whose retries ran out failed.
// The watch starts again from its position instead (errReset), each
// request bounded by its context.
func (w *Watch) consumer(ctx, wctx context.Context, nc *nats.Conn) (cons jetstream.Consumer, p pass, err error) {
	js, err := w.cfg.API.New(nc)
	if err != nil {
		return nil, pass{}, err
	}
	actx, acancel := context.WithTimeout(wctx, jsapi.Timeout)
	defer acancel()
	s, err := w.stream(actx, js)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return nil, pass{}, context.Cause(wctx)
		}
		return nil, pass{}, err
	}
	// A stream created anew (deleted, or a memory stream lost in a restart)
	// holds only messages never delivered.
	if created := s.CachedInfo().Created.UnixNano(); w.created.Swap(created) != created && w.started.Load() {
		w.last.Store(0)
		w.snapshot.Store(0)
	}
	cc, err := w.position(actx, s)
	if err != nil {
		return nil, pass{}, err
	}
	// One name for every try: a try the server answered too late
	// declared the same consumer.
	cc.Name = nuid.Next()
	if cons, err = jsapi.Ask(actx, func(ctx context.Context) (jetstream.Consumer, error) {
		return s.CreateOrUpdateConsumer(ctx, cc)
	}); err != nil {
		return nil, pass{}, err
	}
	acancel()
	w.started.Store(true)
	if !w.initialDone.Load() && (w.cfg.UpdatesOnly || cons.CachedInfo().NumPending == 0) {
		if err := w.signalInitial(ctx); err != nil {
			return nil, pass{}, err
		}
	}
	switch {
	case cc.DeliverPolicy == jetstream.DeliverLastPerSubjectPolicy:
		p.lastPerSubject = true
	case cc.DeliverPolicy == jetstream.DeliverByStartSequencePolicy && cc.OptStartSeq <= w.snapshot.Load():
		p.replay = s
	}
	return cons, p, nil
}

// pass is how a consumer reads the stream.
type pass struct {
	// lastPerSubject: the current values. nats-server reads them after
	// the snapshot, and would skip a message stored in between and
	// superseded at once; the watch starts again by sequence at the
	// first message above the snapshot.
	lastPerSubject bool
	// replay, the stream, when the consumer goes by sequence through
	// messages at or below the snapshot: those superseded there are
	// passed over.
	replay jetstream.Stream
}

// position is the configuration of a consumer of s that starts where the
// watch is.
func (w *Watch) position(ctx context.Context, s jetstream.Stream) (jetstream.ConsumerConfig, error) {
	oc := jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, Replicas: 1, MemoryStorage: true,
		InactiveThreshold: inactiveThreshold}
	if len(w.cfg.Filters) == 1 {
		oc.FilterSubject = w.cfg.Filters[0]
	} else {
		oc.FilterSubjects = w.cfg.Filters
	}
	switch {
	case w.cfg.UpdatesOnly && !w.started.Load():
		info, err := s.Info(ctx)
		if err != nil {
			return oc, err
		}
		// What the stream holds now counts as delivered, once and for all.
		w.last.Store(info.State.LastSeq)
		w.started.Store(true)
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.State.LastSeq+1
	case !w.initialDone.Load() && !w.cfg.UpdatesOnly:
		lastSeq := s.CachedInfo().State.LastSeq
		if !w.started.Load() {
			w.snapshot.Store(lastSeq)
		}
		if lastSeq <= w.snapshot.Load() && lastSeq > 0 {
			// Start the current values, or start them again when nothing
			// was stored since they were first read: last-per-subject
			// then names the same messages, in stream order, and those
			// at or below last, delivered before, are skipped. A stream
			// never written to has none: it is read by sequence from the
			// start, so that its first message does not end the pass.
			oc.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
			break
		}
		// Messages were stored since: the last per subject now would skip
		// those that were superseded meanwhile, changes the watch must
		// deliver. Go on by sequence after last; deliver passes over the
		// messages at or below the snapshot that were not current then.
		fallthrough
	default:
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, w.last.Load()+1
	}
	return oc, nil
}

// deliver passes what it reads from the consumer to Deliver, each
// message once, until wctx ends or reading fails.
func (w *Watch) deliver(ctx, wctx context.Context, it jetstream.MessagesContext, p pass) error {
	var delivered uint64 // the consumer's sequence of the last message read
	for {
		msg, err := it.Next(jetstream.NextContext(wctx))
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case wctx.Err() != nil:
				return context.Cause(wctx)
			case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, jetstream.ErrConnectionClosed):
				return jsapi.ErrConnGone
			case errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, jetstream.ErrConsumerDeleted):
				return errReset
			}
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		// Without acks, a message lost on its way is not sent again.
		if meta.Sequence.Consumer != delivered+1 {
			return errReset
		}
		delivered = meta.Sequence.Consumer
		seq := meta.Sequence.Stream
		if p.lastPerSubject && seq > w.snapshot.Load() {
			return errSnapshot
		}
		if seq > w.last.Load() { // else delivered before a resume
			current := true
			if p.replay != nil && seq <= w.snapshot.Load() {
				if current, err = w.current(wctx, p.replay, msg.Subject(), seq); err != nil {
					switch {
					case ctx.Err() != nil:
						return ctx.Err()
					case wctx.Err() != nil:
						return context.Cause(wctx)
					}
					return fmt.Errorf("sequence %d: %w", seq, err)
				}
			}
			if current {
				if err := w.cfg.Deliver(ctx, msg); err != nil {
					return fmt.Errorf("deliver sequence %d: %w", seq, callbackError{err})
				}
			}
			w.last.Store(seq)
		}
		if !w.initialDone.Load() && meta.NumPending == 0 {
			if err := w.signalInitial(ctx); err != nil {
				return err
			}
		}
	}
}

// current reports whether the message seq on subject, at or below the
// snapshot, was its subject's last there: a current value when the watch
// started, to deliver, rather than a revision superseded before. A
// replica behind the leader may answer a direct get and find no later
// message: a superseded revision is then delivered, once and in order
// still, never one skipped. It costs a request per message, only when the
// watch starts again during the current values while messages are stored.
func (w *Watch) current(ctx context.Context, s jetstream.Stream, subject string, seq uint64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	next, err := s.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(subject))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	return next.Sequence > w.snapshot.Load(), nil
}

// stream declares the stream (Prepare) and looks it up.
func (w *Watch) stream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	for again := w.cfg.Missing != nil; ; again = false {
		if w.cfg.Prepare != nil {
			if err := w.cfg.Prepare(ctx); err != nil {
				return nil, err
			}
		}
		s, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, w.cfg.Stream) })
		if again && errors.Is(err, jetstream.ErrStreamNotFound) {
			w.cfg.Missing()
			continue
		}
		return s, err
	}
}

func (w *Watch) signalInitial(ctx context.Context) error {
	if w.cfg.InitialDone != nil {
		if err := w.cfg.InitialDone(ctx); err != nil {
			return callbackError{err}
		}
	}
	w.initialDone.Store(true)
	return nil
}
