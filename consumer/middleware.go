package consumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Middleware wraps a handler: it returns a [Handler] that does its own
// work around calling next, or answers without calling it. Middleware is
// declared for every handler of a [Group] with [Group.Use] and for one
// handler with [Config].Middleware, and applies to request handlers too.
//
// The order, outermost first: Corral's per-message timeout and panic
// recovery; the group's middleware, in the order Use added them; the
// handler's own, in the order of Config.Middleware; then the handler. So
// a middleware's ctx ends with the handler's Timeout, a panic in a
// middleware is recovered and counted like one in the handler, and what a
// middleware returns settles the message as the handler's result would
// (nil acks a JetStream message, an error naks it, Terminal terminates
// it). Middleware sees every message the handler would; it does not see a
// JetStream message that can no longer be acked, or one that can only be
// dead-lettered again.
//
// For a request handler, next runs the handler and keeps its reply; the
// error next returns is the handler's, service errors included, and the
// error the middleware returns is what the caller is answered. A
// middleware that returns nil without calling next answers with an empty
// reply.
//
// A nil Middleware is skipped; one that returns a nil Handler makes the
// message fail with an error naming its position.
type Middleware func(next Handler) Handler

// groupMiddleware is what Group.Use declared: an immutable list, replaced
// whole by each Use, so that every handler's chain can tell it changed.
type groupMiddleware struct {
	mu   sync.Mutex // serialises Use
	list atomic.Pointer[[]Middleware]
}

// Use adds middleware around every handler of the group, declared before
// or after, outside each handler's own [Config].Middleware; mw[0] is the
// outermost of those added by this call, and each call's middleware is
// inside that of earlier calls. Middleware added while the group serves
// applies to the messages each handler starts after Use returns. Use is
// safe for concurrent use.
func (g *Group) Use(mw ...Middleware) {
	g.mw.mu.Lock()
	defer g.mw.mu.Unlock()
	var list []Middleware
	if old := g.mw.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, mw...)
	g.mw.list.Store(&list)
}

// wrap returns h inside the group's middleware and own.
func (g *Group) wrap(h Handler, own []Middleware) Handler {
	return &chain{group: &g.mw, own: append([]Middleware(nil), own...), inner: h}
}

// wrapRequest returns h inside the group's middleware and own: the chain
// runs with a slot in its ctx where its innermost handler keeps h's reply.
func (g *Group) wrapRequest(h RequestHandler, own []Middleware) RequestHandler {
	c := g.wrap(HandlerFunc(func(ctx context.Context, m *Msg) error {
		reply, err := h.HandleRequest(ctx, m)
		if slot, ok := ctx.Value(replyKey{}).(*Reply); ok {
			*slot = reply
		}
		return err
	}), own)
	return RequestFunc(func(ctx context.Context, m *Msg) (Reply, error) {
		var reply Reply
		err := c.Handle(context.WithValue(ctx, replyKey{}, &reply), m)
		return reply, err
	})
}

type replyKey struct{}

// chain is a handler inside its middleware. The chain is built once, and
// again when Use has changed the group's list.
type chain struct {
	group *groupMiddleware
	own   []Middleware
	inner Handler
	built atomic.Pointer[builtChain]
}

type builtChain struct {
	from *[]Middleware // the group's list it was built from
	h    Handler
}

// Handle runs m through the middleware and the handler.
func (c *chain) Handle(ctx context.Context, m *Msg) error {
	from := c.group.list.Load()
	b := c.built.Load()
	if b == nil || b.from != from {
		// Workers racing here build equal chains; either may be kept.
		b = &builtChain{from: from, h: c.build(from)}
		c.built.Store(b)
	}
	return b.h.Handle(ctx, m)
}

// build applies the handler's own middleware, innermost last, then the
// group's.
func (c *chain) build(group *[]Middleware) Handler {
	var all []Middleware
	if group != nil {
		all = append(all, *group...)
	}
	all = append(all, c.own...)
	h := c.inner
	for i := len(all) - 1; i >= 0; i-- {
		if all[i] == nil {
			continue
		}
		if h = all[i](h); h == nil || isNilFunc(h) {
			h = nilMiddleware(i, len(all)-len(c.own))
		}
	}
	return h
}

func isNilFunc(h Handler) bool {
	f, ok := h.(HandlerFunc)
	return ok && f == nil
}

// nilMiddleware fails every message: the middleware at position i of the
// chain (the group's first, then the handler's) returned a nil Handler.
func nilMiddleware(i, groupLen int) Handler {
	where := fmt.Sprintf("group middleware %d", i)
	if i >= groupLen {
		where = fmt.Sprintf("config middleware %d", i-groupLen)
	}
	return HandlerFunc(func(context.Context, *Msg) error {
		return fmt.Errorf("consumer: %s returned a nil handler", where)
	})
}
