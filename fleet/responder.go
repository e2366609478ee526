package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// Config says who a Responder answers as, and what.
type Config struct {
	// Identity is the process's: Name and ID are required, each a subject
	// token (no whitespace, '.', '*', '>', '/' or '\'); Started and Uptime
	// are the Responder's own.
	Identity Identity
	// Status, if set, returns the status a VerbStatus request gets, which
	// is marshalled as JSON; without it, such a request gets the Identity
	// alone.
	Status func() any
	// Events says where the Responder's events (Answering) go.
	Events supervisor.Events
	// QueueSize bounds the requests waiting to be answered, one at a time;
	// past it nats.go drops them, and their askers count the process as
	// not answering. Range 0 to 65536; default 64.
	QueueSize int
}

// defaultQueueSize is Config.QueueSize's default: more askers at once
// than a fleet's operators and dashboards make.
const defaultQueueSize = 64

// Responder answers the fleet's requests for one process, on whatever
// connection src has, following its replacements. It is a suture.Service.
type Responder struct {
	cfg       Config
	src       connection.Source
	events    *event.Emitter
	started   atomic.Pointer[time.Time]
	answering atomic.Bool
}

// NewResponder returns a Responder for cfg on src. It fails with
// supervisor.ErrInvalidConfig when cfg's Name or ID is not a subject
// token, or its QueueSize is out of range.
func NewResponder(cfg Config, src connection.Source) (*Responder, error) {
	for _, f := range []struct{ field, v string }{{"name", cfg.Identity.Name}, {"id", cfg.Identity.ID}} {
		if err := subject.ValidName(f.v); err != nil {
			return nil, fmt.Errorf("fleet: %w: %s %w", supervisor.ErrInvalidConfig, f.field, err)
		}
	}
	switch {
	case cfg.QueueSize < 0 || cfg.QueueSize > 1<<16:
		return nil, fmt.Errorf("fleet: %w: queue_size must be between 0 and 65536, got %d", supervisor.ErrInvalidConfig, cfg.QueueSize)
	case cfg.QueueSize == 0:
		cfg.QueueSize = defaultQueueSize
	}
	return &Responder{cfg: cfg, src: src, events: event.New(cfg.Events)}, nil
}

// String names the Responder for the supervisor: "discovery".
func (r *Responder) String() string { return "discovery" }

// Subjects are the subjects the Responder listens on.
func (r *Responder) Subjects() []string {
	in := r.cfg.Identity
	return []string{Prefix + ".*", Prefix + ".*." + in.Name, Prefix + ".*." + in.Name + "." + in.ID}
}

// Identity is who the Responder answers as, with its uptime now.
func (r *Responder) Identity() Identity {
	in := r.cfg.Identity
	if started := r.started.Load(); started != nil {
		in.Started = *started
		in.Uptime = time.Since(*started).Round(time.Second).String()
	}
	return in
}

// Answering reports whether the server has the Responder's subscriptions
// on the current connection, as far as it knows.
func (r *Responder) Answering() bool { return r.answering.Load() }

// Serve answers requests until ctx ends, on each connection src gives in
// turn. It returns ctx.Err() then, or an error when it cannot subscribe.
func (r *Responder) Serve(ctx context.Context) error {
	now := time.Now()
	r.started.CompareAndSwap(nil, &now)
	defer r.answering.Store(false)
	for {
		nc, gone, err := r.src.Conn(ctx)
		if err != nil {
			return err
		}
		// The subjects share one channel, read here: an idle process
		// spends no goroutine per subject on being discoverable.
		requests := make(chan *nats.Msg, r.cfg.QueueSize)
		var subs []*nats.Subscription
		for _, s := range r.Subjects() {
			sub, err := nc.ChanSubscribe(s, requests)
			if err != nil {
				unsubscribe(subs)
				return fmt.Errorf("fleet: subscribe to %s: %w", s, err)
			}
			subs = append(subs, sub)
		}
		// Once the server has them: a request sent from now on, from any
		// connection, is answered.
		fctx, cancel := context.WithTimeout(ctx, flushWait)
		err = nc.FlushWithContext(fctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			unsubscribe(subs)
			return fmt.Errorf("fleet: subscribe: %w", err)
		}
		r.answering.Store(true)
		r.events.Emit(Answering{EventTime: r.events.Stamp(), Name: r.cfg.Identity.Name, ID: r.cfg.Identity.ID})
		if err := r.answerUntil(ctx, gone, requests); err != nil {
			unsubscribe(subs)
			return err
		}
		// Closed for good: its subscriptions went with it.
		r.answering.Store(false)
	}
}

// answerUntil answers what arrives on requests until ctx ends (it returns
// ctx.Err()) or the connection is gone (nil).
func (r *Responder) answerUntil(ctx context.Context, gone <-chan struct{}, requests <-chan *nats.Msg) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return nil
		case m := <-requests:
			r.answer(m)
		}
	}
}

// flushWait bounds the wait for the server to confirm the subscriptions.
const flushWait = 5 * time.Second

func unsubscribe(subs []*nats.Subscription) {
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
}

// answer replies to one request; it ignores verbs it does not know, which
// a later version may ask.
func (r *Responder) answer(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	verb, _, _ := strings.Cut(strings.TrimPrefix(m.Subject, Prefix+"."), ".")
	reply := Instance{Identity: r.Identity()}
	switch verb {
	case VerbPing:
		reply.Type = PingType
	case VerbStatus:
		reply.Type = StatusType
		if r.cfg.Status != nil {
			st, err := json.Marshal(r.cfg.Status())
			if err != nil {
				reply.Error = "status: " + err.Error()
			} else {
				reply.Status = st
			}
		}
	default:
		return
	}
	body, err := json.Marshal(reply)
	if err != nil {
		return
	}
	// A reply lost with the connection is a process that did not answer.
	_ = m.Respond(body)
}
