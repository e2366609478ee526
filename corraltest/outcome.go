package corraltest

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/supervisor"
)

// Outcome is what one handler call made of one message: the message as
// the handler saw it and what the call returned. It is recorded when the
// call returns, before the Client settles the message (acks, naks or
// dead-letters a JetStream message; answers a request).
type Outcome struct {
	// Handler names the handler the message was delivered to.
	Handler string
	// Subject, Data and Header are the message's, copied.
	Subject string
	Data    []byte
	Header  nats.Header
	// Metadata is a JetStream message's (stream, sequences, delivery
	// count), copied; nil for core messages and requests.
	Metadata *jetstream.MsgMetadata
	// Err is what the call returned: nil when the handler succeeded (a
	// JetStream message is then acked). For a handler that panicked it is
	// a *supervisor.PanicError with the panic's value and stack; the panic
	// goes on to the Client's own recovery, which counts it.
	Err error
	// Took is how long the call took.
	Took time.Duration
}

// String describes the outcome in one line, for test failures.
func (o Outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "handler %q subject %q data %s", o.Handler, o.Subject, quote(o.Data))
	if o.Metadata != nil {
		fmt.Fprintf(&b, " stream %s sequence %d delivery %d", o.Metadata.Stream, o.Metadata.Sequence.Stream, o.Metadata.NumDelivered)
	}
	if o.Err != nil {
		fmt.Fprintf(&b, ": error: %v", o.Err)
	} else {
		b.WriteString(": ok")
	}
	return b.String()
}

// Outcomes returns every outcome of the handler named handler recorded so
// far, in the order the calls returned; an empty handler means every
// handler's. It does not wait, and it does not move the cursor that
// WaitOutcome follows.
func (k *Kit) Outcomes(handler string) []Outcome {
	k.rec.mu.Lock()
	defer k.rec.mu.Unlock()
	return k.rec.matching(handler)
}

// WaitOutcome waits for the next outcome of the handler named handler
// (empty: of any handler) and returns it. Each handler has a cursor: the
// outcomes that WaitOutcome and WaitOutcomes returned for it are not
// returned again, so a test that publishes, waits, publishes and waits
// gets each message's outcome in turn (with several workers, in the order
// the calls returned). It fails the test, listing every outcome recorded,
// when none comes before ctx ends (DefaultTimeout when ctx has no
// deadline). It does not need the Client running: outcomes recorded
// before a Stop are still there.
func (k *Kit) WaitOutcome(ctx context.Context, handler string) Outcome {
	k.t.Helper()
	return k.WaitOutcomes(ctx, handler, 1)[0]
}

// WaitOutcomes is WaitOutcome for the next n outcomes, returned in the
// order the calls returned; n must be at least 1.
func (k *Kit) WaitOutcomes(ctx context.Context, handler string, n int) []Outcome {
	k.t.Helper()
	if n < 1 {
		k.t.Fatalf("corraltest: WaitOutcomes: n is %d, want at least 1", n)
	}
	ctx, cancel := bounded(ctx, DefaultTimeout)
	defer cancel()
	r := k.rec
	for {
		r.mu.Lock()
		seen, changed := r.matching(handler), r.changed
		from := r.cursor[handler]
		if len(seen) >= from+n {
			r.cursor[handler] = from + n
			r.mu.Unlock()
			return seen[from : from+n]
		}
		all := append([]Outcome(nil), r.all...)
		r.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			k.t.Fatalf("corraltest: waited for %d new outcome(s) of %s, got %d (%d taken before): %v\n%s",
				n, handlerName(handler), len(seen)-from, from, ctx.Err(), describe(all, k.handlerNames()))
		}
	}
}

// handlerNames lists the Client's handlers, for failures.
func (k *Kit) handlerNames() []string {
	var names []string
	for _, h := range k.Client.Status().Handlers {
		names = append(names, h.Name)
	}
	return names
}

func handlerName(h string) string {
	if h == "" {
		return "any handler"
	}
	return fmt.Sprintf("handler %q", h)
}

// describe lists the outcomes recorded and the handlers declared.
func describe(all []Outcome, handlers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "handlers declared: %q\n", handlers)
	if len(all) == 0 {
		b.WriteString("no outcome recorded")
		return b.String()
	}
	fmt.Fprintf(&b, "%d outcome(s) recorded:", len(all))
	for _, o := range all {
		b.WriteString("\n\t" + o.String())
	}
	return b.String()
}

// recorder keeps the outcome of every handler call.
type recorder struct {
	mu      sync.Mutex
	all     []Outcome
	changed chan struct{}  // closed and replaced at each outcome
	cursor  map[string]int // by handler name ("": any): outcomes taken
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}), cursor: map[string]int{}}
}

// middleware records each call of next.
func (r *recorder) middleware(next consumer.Handler) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) (err error) {
		start := time.Now()
		o := Outcome{Handler: m.Handler(), Subject: m.Subject(), Data: clone(m.Data()), Header: cloneHeader(m.Header())}
		if md := m.Metadata(); md != nil {
			c := *md
			o.Metadata = &c
		}
		defer func() {
			if v := recover(); v != nil {
				// The stack is still the panic's: record it, then let
				// the panic go on to the Client's recovery.
				o.Err, o.Took = &supervisor.PanicError{Value: v, Stack: debug.Stack()}, time.Since(start)
				r.add(o)
				panic(v)
			}
		}()
		err = next.Handle(ctx, m)
		o.Err, o.Took = err, time.Since(start)
		r.add(o)
		return err
	})
}

func (r *recorder) add(o Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, o)
	close(r.changed)
	r.changed = make(chan struct{})
}

// matching returns a copy of the outcomes of handler ("": all); r.mu is
// held.
func (r *recorder) matching(handler string) []Outcome {
	var out []Outcome
	for _, o := range r.all {
		if handler == "" || o.Handler == handler {
			out = append(out, o)
		}
	}
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneHeader(h nats.Header) nats.Header {
	if h == nil {
		return nil
	}
	out := make(nats.Header, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// quote shows data for a failure, cut at 64 bytes.
func quote(data []byte) string {
	const most = 64
	if len(data) > most {
		return fmt.Sprintf("%q... (%d bytes)", data[:most], len(data))
	}
	return fmt.Sprintf("%q", data)
}
