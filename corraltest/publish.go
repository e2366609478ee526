package corraltest

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publish publishes data to subject through the Client's buffered
// publisher (corral.Client.PublishSync) and returns once a stream has
// stored it, with the stream's ack. It fails the test when the publish
// fails (no stream stores subject, the publisher refuses it) or ctx ends
// first (DefaultTimeout when ctx has no deadline), and when the Client
// is not running.
func (k *Kit) Publish(ctx context.Context, subject string, data []byte) *jetstream.PubAck {
	k.t.Helper()
	return k.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data})
}

// PublishMsg is Publish for a message with headers, through
// corral.Client.PublishMsg: a Nats-Msg-Id header is kept as the message's
// id, so the stream stores a message published twice with one id once.
func (k *Kit) PublishMsg(ctx context.Context, msg *nats.Msg) *jetstream.PubAck {
	k.t.Helper()
	k.started("PublishMsg")
	subject := "<nil msg>"
	if msg != nil {
		subject = msg.Subject
	}
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	f, err := k.Client.PublishMsg(ctx, msg)
	if err != nil {
		k.t.Fatalf("corraltest: publish to %q: %v", subject, err)
	}
	ack, err := f.Wait(ctx)
	if err != nil {
		k.t.Fatalf("corraltest: publish to %q: no ack from a stream: %v", subject, err)
	}
	return ack
}

// PublishJSON is Publish of v encoded as JSON, the encoding
// consumer.Typed handlers decode by default. It fails the test when v
// does not encode.
func (k *Kit) PublishJSON(ctx context.Context, subject string, v any) *jetstream.PubAck {
	k.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		k.t.Fatalf("corraltest: publish to %q: encode %T as JSON: %v", subject, v, err)
	}
	return k.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data})
}

// PublishCore publishes data to subject on core NATS
// (corral.Client.PublishCore) and flushes the connection: when it
// returns, the server has received the message and passed it on to the
// subscriptions it had. Core NATS says nothing of what a handler did with
// it: wait for that with WaitOutcome. It fails the test when the publish
// or the flush fails, or ctx ends first (DefaultTimeout when ctx has no
// deadline), and when the Client is not running.
func (k *Kit) PublishCore(ctx context.Context, subject string, data []byte) {
	k.t.Helper()
	k.started("PublishCore")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	if err := k.Client.PublishCore(ctx, subject, data); err != nil {
		k.t.Fatalf("corraltest: core publish to %q: %v", subject, err)
	}
	nc, err := k.Client.Conn(ctx)
	if err != nil {
		k.t.Fatalf("corraltest: core publish to %q: %v", subject, err)
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		k.t.Fatalf("corraltest: core publish to %q: flush: %v", subject, err)
	}
}

// Request sends data to subject (corral.Client.Request) and returns the
// reply. It fails the test on any error, a service error the responder
// answered with included: to test a handler that refuses a request, call
// Client.Request and look at its error (a *consumer.ServiceError). It
// waits until ctx ends, DefaultTimeout when ctx has no deadline.
func (k *Kit) Request(ctx context.Context, subject string, data []byte) *nats.Msg {
	k.t.Helper()
	k.started("Request")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	reply, err := k.Client.Request(ctx, subject, data)
	if err != nil {
		k.t.Fatalf("corraltest: request to %q: %v", subject, err)
	}
	return reply
}
