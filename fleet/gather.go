package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/subject"
)

// DefaultWait is how long Ping and Status gather answers when the Query
// does not say.
const DefaultWait = time.Second

// Query says whom to ask and how long to wait for their answers.
type Query struct {
	// Name, if set, asks the instances of that service only; ID, with
	// Name, the one instance.
	Name, ID string
	// Wait is how long answers are gathered. Default DefaultWait.
	Wait time.Duration
	// Expect, if set, stops gathering once that many have answered.
	Expect int
}

// Ping asks the processes q names who they are, and returns those that
// answered within q.Wait, by name and ID. It fails only when the request
// cannot be sent or ctx ends before the wait; processes that do not
// answer are simply missing.
func Ping(ctx context.Context, nc *nats.Conn, q Query) ([]Instance, error) {
	return gather(ctx, nc, VerbPing, q)
}

// Status asks the processes q names for their status, as Ping does.
func Status(ctx context.Context, nc *nats.Conn, q Query) ([]Instance, error) {
	return gather(ctx, nc, VerbStatus, q)
}

func gather(ctx context.Context, nc *nats.Conn, verb string, q Query) ([]Instance, error) {
	if q.ID != "" && q.Name == "" {
		return nil, fmt.Errorf("fleet: an instance ID (%q) needs the service's name", q.ID)
	}
	for _, f := range []struct{ field, v string }{{"name", q.Name}, {"id", q.ID}} {
		if f.v == "" {
			continue
		}
		if err := subject.ValidName(f.v); err != nil {
			return nil, fmt.Errorf("fleet: %s %w", f.field, err)
		}
	}
	wait := q.Wait
	if wait <= 0 {
		wait = DefaultWait
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// Answers are small, and many come at once: none may be dropped by
	// nats.go's pending limits before they are read.
	_ = sub.SetPendingLimits(-1, -1)
	asked := Subject(verb, q.Name, q.ID)
	if err := nc.PublishRequest(asked, inbox, nil); err != nil {
		return nil, fmt.Errorf("fleet: ask %s: %w", asked, err)
	}
	gctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var found []Instance
	for q.Expect <= 0 || len(found) < q.Expect {
		m, err := sub.NextMsgWithContext(gctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			break // the wait is over
		}
		var in Instance
		if json.Unmarshal(m.Data, &in) == nil && in.ID != "" {
			found = append(found, in)
		}
	}
	slices.SortFunc(found, func(a, b Instance) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return found, nil
}
