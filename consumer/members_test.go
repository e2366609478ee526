package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func echo() consumer.RequestFunc {
	return func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		return consumer.Reply{Data: m.Data()}, nil
	}
}

// A handler declared while the group serves starts at once, beside those
// declared before, and is supervised and counted like them.
func TestHandlerDeclaredWhileServingStarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.HandleRequest("before", consumer.Config{Subject: "live.before"}, echo()); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	if err := e.sup.HandleRequest("after", consumer.Config{Subject: "live.after"}, echo()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the live handler ready", func() bool { return e.status("after").Ready })
	for _, subject := range []string{"live.before", "live.after"} {
		if reply, err := e.pub.Request(subject, []byte(subject), 5*time.Second); err != nil || string(reply.Data) != subject {
			t.Fatalf("%s: got %v, %v", subject, reply, err)
		}
	}
	if st := e.status("after"); st.Child.State != supervisor.Running || st.Counters.Processed != 1 {
		t.Fatalf("live handler: got %s, %+v; want running, 1 processed", st.Child.State, st.Counters)
	}
	cleanStop(t, stop)
	if st := e.status("after"); st.Child.State != supervisor.Stopped {
		t.Fatalf("live handler after Serve: got %s, want stopped", st.Child.State)
	}
}

// Remove drains a running handler: it stops taking requests at once, the
// one in flight finishes and is answered, and Remove returns only then;
// the name is free again afterwards.
func TestRemoveDrainsTheHandler(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started, release := make(chan struct{}), make(chan struct{})
	h := consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		if string(m.Data()) == "slow" {
			close(started)
			<-release
		}
		return consumer.Reply{Data: []byte("done " + string(m.Data()))}, nil
	})
	cfg := consumer.Config{Subject: "rm.x", Workers: 2, Restart: supervisor.Policy{ShutdownTimeout: 30 * time.Second}}
	if err := e.sup.HandleRequest("rm", cfg, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	slow := make(chan *nats.Msg, 1)
	go func() {
		reply, _ := e.pub.Request("rm.x", []byte("slow"), 30*time.Second)
		slow <- reply
	}()
	<-started

	removed := make(chan error, 1)
	go func() { removed <- e.sup.Remove(context.Background(), "rm") }()
	eventually(t, "no responders once removal began", func() bool {
		_, err := e.pub.Request("rm.x", []byte("fast"), 5*time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
	select {
	case err := <-removed:
		t.Fatalf("Remove returned %v while a request was in flight", err)
	default:
	}
	close(release)
	if reply := <-slow; reply == nil || string(reply.Data) != "done slow" {
		t.Fatalf("in-flight request: got %v, want its answer", reply)
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if n := len(e.sup.Status()); n != 0 {
		t.Fatalf("handlers after Remove: got %d, want 0", n)
	}
	if err := e.sup.HandleRequest("rm", consumer.Config{Subject: "rm.x"}, echo()); err != nil {
		t.Fatalf("declaring the name again: %v", err)
	}
	eventually(t, "the new handler ready", func() bool { return e.status("rm").Ready })
	cleanStop(t, stop)
}

// A JetStream handler removed while running keeps its durable consumer:
// another instance, or the same handler declared again, resumes it.
func TestRemoveKeepsTheDurableConsumer(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "RMJS", Subjects: []string{"rmjs.>"}})
	seen := newSeen()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		seen.add(m)
		return nil
	})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "RMJS"}}
	stop := e.serve()
	if err := e.sup.Handle("rmjs", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("rmjs.a", 3)
	eventually(t, "3 handled", func() bool { return seen.unique() == 3 })
	if err := e.sup.Remove(context.Background(), "rmjs"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := e.js.Consumer(ctx, "RMJS", "rmjs")
	if err != nil {
		t.Fatalf("durable consumer after Remove: %v", err)
	}
	if got := cons.CachedInfo().AckFloor.Stream; got != 3 {
		t.Fatalf("ack floor: got %d, want 3", got)
	}
	e.publishSeq("rmjs.a", 2)
	if err := e.sup.Handle("rmjs", cfg, h); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return seen.total() == 5 }, func() string {
		return fmt.Sprintf("the 2 published while removed handled: %d handled, handler %+v", seen.total(), e.status("rmjs"))
	})
	if c := e.status("rmjs").Counters; c.Received != 2 || c.Redelivered != 0 {
		t.Fatalf("declared again: got %+v, want the 2 new messages, none redelivered", c)
	}
	cleanStop(t, stop)
}

// Remove of a name no handler has fails; before Serve it forgets the
// handler, which then never runs.
func TestRemoveWhileNotServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.Remove(context.Background(), "nope"); !errors.Is(err, consumer.ErrNotDeclared) || err.Error() != `consumer: handler "nope": not declared` {
		t.Fatalf("unknown name: got %v", err)
	}
	if err := e.sup.HandleRequest("gone", consumer.Config{Subject: "gone"}, echo()); err != nil {
		t.Fatal(err)
	}
	if err := e.sup.Remove(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.sup.Remove(context.Background(), "gone"); !errors.Is(err, consumer.ErrNotDeclared) {
		t.Fatalf("second Remove: got %v, want ErrNotDeclared", err)
	}
	stop := e.serve()
	if n := len(e.sup.Status()); n != 0 {
		t.Fatalf("handlers: got %d, want 0", n)
	}
	cleanStop(t, stop)
	if _, err := e.pub.Request("gone", nil, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request to the removed handler: got %v, want no responders", err)
	}
}

// While Serve stops (a handler still finishing its message), Handle and
// Remove fail with ErrStopping; nothing starts that the stop would miss.
func TestDeclaringWhileStoppingFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started, release := make(chan struct{}), make(chan struct{})
	h := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		close(started)
		<-release
		return nil
	})
	cfg := consumer.Config{Subject: "stopping", Restart: supervisor.Policy{ShutdownTimeout: 30 * time.Second}}
	if err := e.sup.Handle("busy", cfg, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("stopping", 1, nil)
	<-started
	subs := e.srv.Raw().NumSubscriptions()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// The stop has begun once the server has dropped the interest.
	eventually(t, "unsubscribed", func() bool { return e.srv.Raw().NumSubscriptions() < subs })
	err := e.sup.HandleRequest("late", consumer.Config{Subject: "late"}, echo())
	if !errors.Is(err, consumer.ErrStopping) {
		t.Fatalf("Handle while stopping: got %v, want ErrStopping", err)
	}
	if err := e.sup.Remove(context.Background(), "busy"); !errors.Is(err, consumer.ErrStopping) {
		t.Fatalf("Remove while stopping: got %v, want ErrStopping", err)
	}
	close(release)
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v", err)
	}
	if n := len(e.sup.Status()); n != 1 {
		t.Fatalf("handlers: got %d, want only busy", n)
	}
}

// Handle and Remove racing the end of Serve: each either takes effect
// before the stop (and the stop stops what started), or fails with
// ErrStopping, or, once Serve has returned, declares for the next Serve.
// Nothing panics, nothing is left running (TestMain's leak check), and
// Serve stops cleanly.
func TestDeclaringRacesTheStop(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		e := newEnv(t)
		stop := e.serve()
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 20 {
			wg.Go(func() {
				name := fmt.Sprintf("h%d", i)
				err := e.sup.HandleRequest(name, consumer.Config{Subject: "race." + name}, echo())
				errs <- err
				rmErr := e.sup.Remove(context.Background(), name)
				if err != nil && errors.Is(rmErr, consumer.ErrNotDeclared) {
					return // never declared
				}
				errs <- rmErr
			})
		}
		if err := stop(); !errors.Is(err, context.Canceled) || errors.Is(err, supervisor.ErrShutdownIncomplete) {
			t.Fatalf("round %d: Serve: got %v", round, err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, consumer.ErrStopping) {
				t.Fatalf("round %d: got %v, want nil or ErrStopping", round, err)
			}
		}
		for _, st := range e.sup.Status() {
			if st.Child.State == supervisor.Running {
				t.Fatalf("round %d: %s still running after Serve", round, st.Name)
			}
		}
	}
}

// NotReady names the handlers Status calls not Ready: all of them before
// the group serves, none once each has subscribed.
func TestNotReadyNamesWhatStatusCallsNotReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	for _, name := range []string{"a", "b"} {
		if err := e.sup.Handle(name, consumer.Config{Subject: "ready." + name}, noop); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.sup.NotReady(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("before serving: %v, want [a b]", got)
	}
	stop := e.serve()
	e.subscribed(2)
	if got := e.sup.NotReady(); len(got) != 0 {
		t.Fatalf("subscribed: %v still not ready", got)
	}
	for _, st := range e.sup.Status() {
		if !st.Ready {
			t.Fatalf("Status calls %s not ready", st.Name)
		}
	}
	cleanStop(t, stop)
}

// AllReady agrees with NotReady: false while any handler is not ready,
// wherever it is among them and wherever the last call stopped, true once
// none is.
func TestAllReadyAgreesWithNotReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	// b's stream does not exist: b never becomes ready.
	for _, h := range []struct {
		name string
		cfg  consumer.Config
	}{
		{"a", consumer.Config{Subject: "ready.a"}},
		{"b", consumer.Config{JetStream: consumer.JetStream{Stream: "MISSING"}}},
		{"c", consumer.Config{Subject: "ready.c"}},
	} {
		if err := e.sup.Handle(h.name, h.cfg, noop); err != nil {
			t.Fatal(err)
		}
	}
	if e.sup.AllReady() {
		t.Fatal("before serving: AllReady, want not")
	}
	stop := e.serve()
	e.subscribed(2)
	for range 3 { // from wherever the last call stopped
		if got := e.sup.NotReady(); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("NotReady: %v, want [b]", got)
		}
		if e.sup.AllReady() {
			t.Fatal("AllReady with b not ready")
		}
	}
	if err := e.sup.Remove(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	if got := e.sup.NotReady(); len(got) != 0 || !e.sup.AllReady() {
		t.Fatalf("after removing b: NotReady %v, AllReady %v; want none, true", got, e.sup.AllReady())
	}
	cleanStop(t, stop)
}
