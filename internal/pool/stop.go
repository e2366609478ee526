package pool

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// AddInput registers an input, something that puts items: Stop closes the
// queue only once every input's done has been called, so that nothing
// puts on a closed queue. done may be called more than once. AddInput
// must not be called once Stop has begun.
func (p *Pool[T]) AddInput() (done func()) {
	p.inputs.Add(1)
	var once sync.Once
	return func() { once.Do(p.inputs.Done) }
}

// Feed registers sub, whose callback puts items, as an input that ends
// after sub's last callback: once sub is unsubscribed or drained, or its
// connection closed. The channel it returns is closed then too.
func (p *Pool[T]) Feed(sub *nats.Subscription) <-chan struct{} {
	done := p.AddInput()
	ended := make(chan struct{})
	var once sync.Once
	end := func(string) {
		once.Do(func() {
			done()
			close(ended)
		})
	}
	// nats.go calls it when the subscription's goroutine exits, which a
	// closed connection makes it do, though its status never changes.
	sub.SetClosedHandler(end)
	if !sub.IsValid() {
		// Closed before the handler was set: nats.go may not call it.
		end("")
	}
	return ended
}

// Abort makes the workers hand every item they take from now on to
// Work.Return instead of running it, so that a stop returns what is
// queued rather than finishing it. Items running are not affected.
func (p *Pool[T]) Abort() { p.aborted.Store(true) }

// Stop ends the pool once its inputs have ended (their owner drains or
// unsubscribes them). Until deadline, workers run what is queued; after
// Abort, what is queued goes to Work.Return at once instead, and only the
// items running may finish. When deadline passes, the pool stops hard: it
// aborts, returns what is queued, cancels the handlers' ctx, and a Put
// waiting for room gives up. Stop returns once every worker has, which a
// handler that ignores its ctx delays past deadline; the handlers' ctx is
// cancelled by then. What an unstarted pool holds goes to Work.Return.
// Stop is called once.
func (p *Pool[T]) Stop(deadline time.Time) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	inputsDone := make(chan struct{})
	go func() {
		p.inputs.Wait()
		close(inputsDone)
	}()
	select {
	case <-inputsDone:
	case <-timer.C:
		p.stopHard()
		<-inputsDone // a waiting Put gives up once hard is closed
	}
	// Nothing puts any more: workers run down the queue and exit. Once
	// aborted, what is queued is returned at once, by whichever of Stop
	// and the workers takes it first, rather than when a worker is free.
	// No worker starts from now on, and a queue nothing was put in is
	// made here without room, only to be closed.
	p.spawnMu.Lock()
	p.spawned = true
	p.spawnMu.Unlock()
	p.opening.Do(func() {
		p.queue = make(chan T)
		p.opened.Store(true)
	})
	close(p.queue)
	if p.aborted.Load() || !p.started.Load() {
		p.returnQueued()
	}
	workersDone := make(chan struct{})
	go func() {
		p.running.Wait()
		close(workersDone)
	}()
	select {
	case <-workersDone:
	case <-timer.C:
		p.stopHard()
		p.returnQueued()
		<-workersDone
	}
	p.cancel()
}

// returnQueued hands what is queued to Work.Return; the queue is closed.
func (p *Pool[T]) returnQueued() {
	for item := range p.queue {
		p.work.Return(item)
	}
}

// Cut ends a stop's grace period now, as its deadline passing would: no
// item starts any more, and the running handlers' ctx is cancelled. It
// may come before Stop or during it; Stop is still called.
func (p *Pool[T]) Cut() { p.stopHard() }

// stopHard ends the grace period: no item starts any more and running
// handlers are cancelled.
func (p *Pool[T]) stopHard() {
	p.aborted.Store(true)
	p.cancel()
	p.hardOnce.Do(func() { close(p.hard) })
}

// CutOff reports whether err is a handler giving up because the stop cut
// it off: the stop's deadline has passed, cancelling the handlers' ctx,
// and err is context.Canceled. Such an item did not fail; it was not
// allowed to finish.
func (p *Pool[T]) CutOff(err error) bool {
	return p.base.Err() != nil && errors.Is(err, context.Canceled)
}
