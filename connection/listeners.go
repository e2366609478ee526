package connection

import (
	"errors"
	"sync"

	"github.com/nats-io/nats.go"
)

// listeners are what dependents asked to hear of nats.go's asynchronous
// errors: slow consumers of their subscriptions, and errors that belong
// to no subscription. Supervisor and Fixed share them.
type listeners struct {
	mu       sync.Mutex
	claims   map[*nats.Subscription]func()
	asyncFns map[uint64]func(*nats.Conn, error)
	asyncID  uint64
}

func (l *listeners) claimSlowConsumer(sub *nats.Subscription, report func()) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims == nil {
		l.claims = map[*nats.Subscription]func(){}
	}
	l.claims[sub] = report
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.claims, sub)
	}
}

func (l *listeners) onAsyncError(fn func(nc *nats.Conn, err error)) (release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asyncFns == nil {
		l.asyncFns = map[uint64]func(*nats.Conn, error){}
	}
	l.asyncID++
	id := l.asyncID
	l.asyncFns[id] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.asyncFns, id)
	}
}

// dispatch hands err, as nats.go's error handler reports it, to whoever
// claimed it. It reports whether anyone did; an error nobody claimed is
// the connection's to report. A subscription-less error is handed to
// every async-error listener, and still reported by the connection.
func (l *listeners) dispatch(nc *nats.Conn, sub *nats.Subscription, err error) (claimed bool) {
	if sub != nil {
		if !errors.Is(err, nats.ErrSlowConsumer) {
			return false
		}
		l.mu.Lock()
		report := l.claims[sub]
		l.mu.Unlock()
		if report == nil {
			return false
		}
		report()
		return true
	}
	l.mu.Lock()
	fns := make([]func(*nats.Conn, error), 0, len(l.asyncFns))
	for _, fn := range l.asyncFns {
		fns = append(fns, fn)
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(nc, err)
	}
	return false
}
