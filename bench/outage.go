package main

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

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/publisher"
)

// The outage scenario publishes n messages, each with its own Msg-Id, to a
// fresh file stream; when a third are acknowledged the server shuts down,
// stays down for outageFor and starts again on the same port and store.
// It reports the time until every message is acknowledged, the recovery
// (server back -> first ack), and what the stream holds: 0 lost, 0
// duplicated. Both sides reconnect with the same settings: every 50ms.
const (
	outageStream = "BENCHOUTAGE"
	outageFor    = time.Second
	reconnect    = 50 * time.Millisecond
)

type outage struct {
	e       *env
	n       int
	ids     []string
	acked   []atomic.Bool
	count   atomic.Int64
	fault   chan struct{} // closed at n/3 acked
	done    chan struct{} // closed when all are acked
	up      atomic.Int64  // unix ns the server was back
	firstUp atomic.Int64  // unix ns of the first ack after that
	faulted sync.WaitGroup
	start   time.Time
	faultMu sync.Once
	doneMu  sync.Once
	err     error
}

func newOutage(e *env, n int) *outage {
	o := &outage{e: e, n: n, ids: make([]string, n), acked: make([]atomic.Bool, n),
		fault: make(chan struct{}), done: make(chan struct{})}
	for i := range o.ids {
		o.ids[i] = nuid.Next()
	}
	return o
}

// inject waits for the fault point, then stops and restarts the server.
// wait (deferred by the caller) returns only once the server is up again.
func (o *outage) inject(ctx context.Context) {
	o.faulted.Go(func() {
		select {
		case <-o.fault:
		case <-ctx.Done():
			return
		}
		o.e.srv.Shutdown()
		time.Sleep(outageFor)
		if err := o.e.srv.Start(); err != nil {
			o.err = err
			return
		}
		o.up.Store(time.Now().UnixNano())
	})
}

func (o *outage) wait() { o.faulted.Wait() }

func (o *outage) ack(i int) {
	if up := o.up.Load(); up != 0 {
		o.firstUp.CompareAndSwap(0, time.Now().UnixNano())
	}
	if !o.acked[i].CompareAndSwap(false, true) {
		return
	}
	c := o.count.Add(1)
	if c == int64(o.n/3) {
		o.faultMu.Do(func() { close(o.fault) })
	}
	if c == int64(o.n) {
		o.doneMu.Do(func() { close(o.done) })
	}
}

// result checks the stream and reports the round.
func (o *outage) result(ctx context.Context, js jetstream.JetStream) (sample, error) {
	total := time.Since(o.start)
	o.e.stopClock()
	o.wait()
	if o.err != nil {
		return sample{}, o.err
	}
	st, err := js.Stream(ctx, outageStream)
	if err != nil {
		return sample{}, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return sample{}, err
	}
	stored := int(info.State.Msgs)
	lost, dups := max(o.n-stored, 0), max(stored-o.n, 0)
	recovery := -1.0 // the fault came after the last ack: no recovery to see
	if first := o.firstUp.Load(); first != 0 {
		recovery = float64(first-o.up.Load()) / float64(time.Millisecond)
	}
	return sample{value: float64(total) / float64(time.Millisecond), msgs: o.n,
		extra: map[string]float64{"recovery_ms": recovery, "lost": float64(lost), "dups": float64(dups)}}, nil
}

// outageWindow bounds the raw loop's unacked messages, and on either side
// the futures handed to the collector (a full hand-over waits for it).
const outageWindow = 4000

// rawOutage is the raw baseline: an async-publish loop with a 4,000
// window and a 2s ack timeout that publishes every failed message again
// with its Msg-Id.
func rawOutage(ctx context.Context, e *env, n int) (sample, error) {
	nc, err := connect(e, nats.ReconnectWait(reconnect), nats.ReconnectJitter(time.Millisecond, time.Millisecond),
		nats.MaxReconnects(-1))
	if err != nil {
		return sample{}, err
	}
	defer nc.Close()
	if _, err := e.freshStream(ctx, nc, outageStream, outageStream); err != nil {
		return sample{}, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(outageWindow), jetstream.WithPublishAsyncTimeout(2*time.Second))
	if err != nil {
		return sample{}, err
	}
	o := newOutage(e, n)
	ictx, cancel := context.WithCancel(ctx)
	defer o.wait()
	defer cancel()
	o.inject(ictx)

	futures := make(chan pendingAck, outageWindow)
	retry := make(chan int, n)
	var collector sync.WaitGroup
	defer collector.Wait()
	defer cancel()
	collector.Go(func() { o.collect(ictx, futures, retry) })
	e.startClock()
	o.start = time.Now()
	next := 0
	for {
		var i int
		if next < n {
			select {
			case i = <-retry:
			default:
				i, next = next, next+1
			}
		} else {
			select {
			case i = <-retry:
			case <-o.done:
				return o.result(ctx, js)
			case <-ctx.Done():
				return sample{}, fmt.Errorf("%d of %d acked: %w", o.count.Load(), n, ctx.Err())
			}
		}
		if o.acked[i].Load() {
			continue
		}
		msg := &nats.Msg{Subject: outageStream, Data: payload, Header: nats.Header{jetstream.MsgIDHeader: []string{o.ids[i]}}}
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			// Stalled, or the connection is not there: wait a little
			// and publish it again.
			time.Sleep(time.Millisecond)
			retry <- i
			continue
		}
		select {
		case futures <- pendingAck{i, f}:
		case <-ctx.Done():
			return sample{}, ctx.Err()
		}
	}
}

// pendingAck is the raw loop's message i, waiting for its ack.
type pendingAck struct {
	i int
	f jetstream.PubAckFuture
}

// collect settles the raw loop's futures in the order they were sent:
// an ack counts message i, a failure hands it back to the loop through
// retry (sized for every message, so it never blocks). It returns when
// ctx ends.
func (o *outage) collect(ctx context.Context, futures <-chan pendingAck, retry chan<- int) {
	for {
		var p pendingAck
		select {
		case p = <-futures:
		case <-ctx.Done():
			return
		}
		select {
		case <-p.f.Ok():
			o.ack(p.i)
		case <-p.f.Err():
			if !o.acked[p.i].Load() {
				retry <- p.i
			}
		case <-ctx.Done():
			return
		}
	}
}

// corralOutage publishes through the Client's buffered publisher (block
// when full, every other setting its default), which retries by itself.
func corralOutage(ctx context.Context, e *env, n int) (sample, error) {
	c, err := startCorralOn(ctx, e, corral.Config{
		Connection: connection.Config{ReconnectWait: reconnect, MaxReconnectWait: reconnect, ReconnectJitter: time.Millisecond},
		Publisher:  publisher.Config{OnFull: publisher.Block},
	}, outageStream, outageStream)
	if err != nil {
		return sample{}, err
	}
	defer c.stop()
	o := newOutage(e, n)
	ictx, cancel := context.WithCancel(ctx)
	defer o.wait()
	defer cancel()
	o.inject(ictx)

	type pending struct {
		i int
		f *publisher.Future
	}
	futures := make(chan pending, outageWindow)
	failed := make(chan error, 1)
	var collector sync.WaitGroup
	defer collector.Wait()
	defer cancel()
	collector.Go(func() {
		for {
			var p pending
			select {
			case p = <-futures:
			case <-ictx.Done():
				return
			}
			if _, err := p.f.Wait(ictx); err != nil {
				if !errors.Is(err, context.Canceled) {
					select {
					case failed <- fmt.Errorf("message %d: %w", p.i, err):
					default:
					}
				}
				return
			}
			o.ack(p.i)
		}
	})
	e.startClock()
	o.start = time.Now()
	for i := range n {
		f, err := c.Publish(ctx, outageStream, payload, publisher.WithMsgID(o.ids[i]))
		if err != nil {
			return sample{}, err
		}
		select {
		case futures <- pending{i, f}:
		case err := <-failed:
			return sample{}, err
		case <-ctx.Done():
			return sample{}, ctx.Err()
		}
	}
	select {
	case <-o.done:
	case err := <-failed:
		return sample{}, err
	case <-ctx.Done():
		return sample{}, fmt.Errorf("%d of %d acked: %w", o.count.Load(), n, ctx.Err())
	}
	// The stream is read on the connection the Client has now.
	nc, err := c.Conn(ctx)
	if err != nil {
		return sample{}, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return sample{}, err
	}
	return o.result(ctx, js)
}
