package corraltest

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
)

// DeadLetter is one message a JetStream handler dead-lettered (its
// consumer.JetStream.DeadLetter subject), as the stream that keeps the
// dead-letter subject stores it. The fields besides Msg are read from the
// headers Corral adds (consumer.DeadLetterStreamHeader and the others);
// each is zero when the message lacks its header, as one published to the
// subject by other means does.
type DeadLetter struct {
	// Msg is the stored message: the original's data and headers, and
	// Corral's.
	Msg *jetstream.RawStreamMsg
	// Stream and Consumer are those the message was consumed from.
	Stream   string
	Consumer string
	// Subject is the subject it was published to.
	Subject string
	// Sequence is its sequence in Stream.
	Sequence uint64
	// Deliveries is how many times it was delivered.
	Deliveries uint64
	// Error is the text of the handler's last error.
	Error string
}

// DeadLetters returns what is stored now on the dead-letter subject
// subject, in the order it was stored, read from the stream that stores
// subject. Dead letters are kept only by a stream (declare one in
// corral.Config.Streams): a handler whose dead-letter subject no stream
// stores fails to dead-letter and naks instead. DeadLetters fails the
// test when no stream stores subject, when ctx ends first (DefaultTimeout
// when ctx has no deadline), and when the Client is not running.
func (k *Kit) DeadLetters(ctx context.Context, subject string) []DeadLetter {
	k.t.Helper()
	k.started("DeadLetters")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	stream, err := k.storedBy(ctx, subject)
	if err != nil {
		k.t.Fatalf("corraltest: dead letters on %q: %v", subject, err)
	}
	msgs, err := k.readStream(ctx, stream, subject)
	if err != nil {
		k.t.Fatalf("corraltest: dead letters on %q: read stream %s: %v", subject, stream, err)
	}
	return deadLetters(msgs)
}

// WaitDeadLetters waits until at least n messages are stored on the
// dead-letter subject subject, and returns them all as DeadLetters does.
// A dead letter is stored after the handler's call returns, so after
// WaitOutcome has seen the failure, this is the wait for its copy. It
// fails the test, saying how many it found, when ctx ends first
// (DefaultTimeout when ctx has no deadline), or at once when no stream
// stores subject.
func (k *Kit) WaitDeadLetters(ctx context.Context, subject string, n int) []DeadLetter {
	k.t.Helper()
	k.started("WaitDeadLetters")
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	stream, err := k.storedBy(ctx, subject)
	if err != nil {
		k.t.Fatalf("corraltest: dead letters on %q: %v", subject, err)
	}
	msgs, err := k.waitStream(ctx, stream, subject, n)
	if err != nil {
		k.t.Fatalf("corraltest: waited for %d dead letter(s) on %q in stream %s: %v", n, subject, stream, err)
	}
	return deadLetters(msgs)
}

// storedBy names the stream that stores subject.
func (k *Kit) storedBy(ctx context.Context, subject string) (string, error) {
	js, err := k.jetStream(ctx)
	if err != nil {
		return "", err
	}
	name, err := js.StreamNameBySubject(ctx, subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", fmt.Errorf("no stream stores it, so nothing is dead-lettered there: declare one in corral.Config.Streams")
	}
	return name, err
}

func deadLetters(msgs []*jetstream.RawStreamMsg) []DeadLetter {
	out := make([]DeadLetter, 0, len(msgs))
	for _, m := range msgs {
		d := DeadLetter{Msg: m}
		if h := m.Header; h != nil {
			d.Stream = h.Get(consumer.DeadLetterStreamHeader)
			d.Consumer = h.Get(consumer.DeadLetterConsumerHeader)
			d.Subject = h.Get(consumer.DeadLetterSubjectHeader)
			d.Sequence, _ = strconv.ParseUint(h.Get(consumer.DeadLetterSequenceHeader), 10, 64)
			d.Deliveries, _ = strconv.ParseUint(h.Get(consumer.DeadLetterDeliveriesHeader), 10, 64)
			d.Error = h.Get(consumer.DeadLetterErrorHeader)
		}
		out = append(out, d)
	}
	return out
}
