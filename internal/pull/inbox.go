package pull

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// ErrStatus wraps a pull request's status the puller cannot recover from:
// the consumer is push based, or a request exceeds the consumer's limits.
var ErrStatus = errors.New("pull refused")

// Statuses of pull requests that are not failures.
var (
	errRequestDone = errors.New("pull request done")
	errRequestLost = errors.New("pull requests lost")
)

// inbox is the subscription pull requests are answered on. When requests
// are presumed lost, a new inbox replaces it: the server checks interest
// before it delivers, so requests it still has for the old one deliver
// nothing once the old one is unsubscribed.
//
// Each inbox keeps its own credits (messages its requests asked for and
// the server has not delivered): what still reaches a replaced one, or the
// end of a request it had, owes nothing to the requests of the new one.
type inbox struct {
	consumer int // the index of its consumer in Puller.targets
	subject  string
	sub      *nats.Subscription
	ended    <-chan struct{} // closed after the subscription's last callback
	credits  atomic.Int64
	// delivered counts the messages it received, so that the puller can
	// tell a request the server filled from one that ran out.
	delivered atomic.Int64
	heard     atomic.Int64 // unix nanoseconds of the last message, heartbeat or request
	// answered is the unix nanoseconds of the last message, heartbeat or
	// end of a request: the consumer answering, where a status may say it
	// cannot.
	answered atomic.Int64
	retired  atomic.Bool // replaced: its statuses are about requests no longer counted
}

// openInboxOf subscribes a fresh inbox for requests to the consumer
// targets[consumer], with no credits, as an input of the owner's pool.
func (p *Puller) openInboxOf(nc *nats.Conn, consumer int) (*inbox, error) {
	in := &inbox{consumer: consumer, subject: nc.NewInbox()}
	sub, err := nc.Subscribe(in.subject, func(msg *nats.Msg) { p.receive(nc, in, msg) })
	if err != nil {
		return nil, err
	}
	in.ended = p.cfg.Feed(sub)
	// Requests bound what arrives; the inbox buffers it all.
	_ = sub.SetPendingLimits(-1, -1)
	in.sub = sub
	return in, nil
}

// live drops the inboxes whose subscription has ended, so that a session
// that replaces inboxes for days does not keep them all.
func live(inboxes []*inbox) []*inbox {
	return slices.DeleteFunc(inboxes, func(in *inbox) bool {
		select {
		case <-in.ended:
			return true
		default:
			return false
		}
	})
}

// drainInboxes unsubscribes so that the server sends no more, while what
// it sent already still reaches the owner, until by. It waits
// for each subscription's last callback, which comes at once when the
// connection is closed: a closed subscription's status never changes
// then, and its Unsubscribe fails.
func (p *Puller) drainInboxes(nc *nats.Conn, inboxes []*inbox, by time.Time) {
	deadline := time.Now().Add(jsapi.Timeout)
	if !by.IsZero() {
		deadline = by
	}
	for _, in := range inboxes {
		if !nc.IsConnected() || in.sub.Drain() != nil {
			_ = in.sub.Unsubscribe() // nothing can arrive; do not wait
		}
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for i, in := range inboxes {
		select {
		case <-in.ended:
		case <-t.C:
			for _, in := range inboxes[i:] {
				_ = in.sub.Unsubscribe()
			}
			return
		}
	}
}

// dropCredits takes n from the inbox's credits, never below zero.
func (in *inbox) dropCredits(n int64) {
	for {
		c := in.credits.Load()
		if in.credits.CompareAndSwap(c, max(c-n, 0)) {
			return
		}
	}
}

// receive is in's callback: messages go to the owner, statuses to the
// session. It never blocks.
func (p *Puller) receive(nc *nats.Conn, in *inbox, msg *nats.Msg) {
	now := time.Now().UnixNano()
	in.heard.Store(now)
	status := msg.Header.Get("Status")
	if len(msg.Data) > 0 || status == "" {
		in.answered.Store(now)
		// Held before its credit is taken, and the session reads credits
		// before held: it never sees room the message already fills.
		// Counted as delivered before too: a session that sees a request's
		// credits gone sees all it delivered (see settle).
		held := p.held.hold()
		in.delivered.Add(1)
		in.dropCredits(1)
		p.sizes.add(msg.Size())
		switch {
		case !held:
			// More than the owner has room for (a request presumed lost
			// delivered after all): back to the server at once.
			p.owner.Refuse(nc, msg)
		case !p.owner.Accept(nc, msg):
			p.held.release()
		}
		if p.tiered() && in.credits.Load() == 0 {
			p.note() // its request is over: what next?
		}
		return
	}
	// A request ended: its undelivered part is no longer owed.
	if n, err := strconv.Atoi(msg.Header.Get("Nats-Pending-Messages")); err == nil && n > 0 {
		in.dropCredits(int64(n))
	}
	if status == "100" { // idle heartbeat or flow control
		in.answered.Store(now)
		if msg.Reply != "" {
			_ = msg.Respond(nil)
		}
		return
	}
	if p.tiered() {
		// With several consumers, an inbox has one request out at a time
		// (see tiers.go): any status but a heartbeat ends it, a no_wait
		// request's 404 or 408 with no count of what it did not deliver.
		in.credits.Store(0)
	}
	err := pullStatus(status, msg.Header.Get("Description"))
	if errors.Is(err, errRequestDone) {
		in.answered.Store(now)
	}
	if in.retired.Load() && (errors.Is(err, errRequestDone) || errors.Is(err, errRequestLost)) {
		// The end or loss of a request the session no longer counts on:
		// the current inbox hears of its own.
		return
	}
	p.post(in.consumer, err)
}

// post hands the session a status of a request to targets[consumer],
// keeping the newest: an older one it replaces is stale.
func (p *Puller) post(consumer int, err error) {
	status := p.targets[consumer].status
	for {
		select {
		case status <- err:
			if consumer > 0 {
				p.note()
			}
			return
		default:
		}
		select {
		case <-status:
		default:
		}
	}
}

// note wakes the session pulling from several consumers.
func (p *Puller) note() {
	select {
	case p.noted <- struct{}{}:
	default:
	}
}

// pullStatus is the meaning of a pull request's status, with its
// description. The matching mirrors nats.go's (checkMsg in
// jetstream/message.go), except that a request that merely ended (no
// messages, expired, batch or byte limit reached) is errRequestDone and
// a leadership change is errRequestLost.
func pullStatus(status, description string) error {
	desc := strings.ToLower(description)
	switch status {
	case "404", "408":
		return errRequestDone
	case "409":
		switch {
		case strings.Contains(desc, "consumer deleted"):
			return jetstream.ErrConsumerDeleted
		case strings.Contains(desc, "leadership change"):
			// The requests went with the old leader, pending or not.
			return fmt.Errorf("%w: %w", errRequestLost, jetstream.ErrConsumerLeadershipChanged)
		case strings.Contains(desc, "server shutdown"):
			return jetstream.ErrServerShutdown
		case strings.Contains(desc, "exceeded max") || strings.Contains(desc, "push based"):
			return fmt.Errorf("%w: %s", ErrStatus, description)
		default:
			return errRequestDone // e.g. max bytes or batch completed: the request is over
		}
	case "503":
		return nats.ErrNoResponders
	case "400":
		return fmt.Errorf("%w: %s", jetstream.ErrBadRequest, description)
	default:
		return fmt.Errorf("%w: status %s %s", ErrStatus, status, description)
	}
}
