package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// trace records the order in which middleware and handlers run.
type trace struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.steps = append(tr.steps, s)
	tr.mu.Unlock()
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.steps)
}

// mark is a middleware that records entering and leaving.
func (tr *trace) mark(name string) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			tr.add(name + ">")
			err := next.Handle(ctx, m)
			tr.add("<" + name)
			return err
		})
	}
}

// The group's middleware is outermost, in the order Use added it (before
// or after the handler was declared), then the handler's own in the order
// of Config.Middleware; a nil middleware is skipped.
func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tr := &trace{}
	e.sup.Use(tr.mark("g1"), nil, tr.mark("g2"))
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		tr.add("handler")
		return nil
	})
	cfg := consumer.Config{Subject: "mw", Middleware: []consumer.Middleware{tr.mark("c1"), nil, tr.mark("c2")}}
	if err := e.sup.Handle("mw", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.sup.Use(tr.mark("g3"))
	stop := e.serve()
	e.subscribed(1)
	e.publish("mw", 1, nil)
	eventually(t, "handled", func() bool { return e.status("mw").Counters.Processed == 1 })
	cleanStop(t, stop)
	want := []string{"g1>", "g2>", "g3>", "c1>", "c2>", "handler", "<c2", "<c1", "<g3", "<g2", "<g1"}
	if got := tr.get(); !slices.Equal(got, want) {
		t.Fatalf("order: got %v, want %v", got, want)
	}
}

// Middleware added while the group serves applies to the messages started
// after Use returns.
func TestMiddlewareUseWhileServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tr := &trace{}
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		tr.add(string(m.Data()))
		return nil
	})
	if err := e.sup.Handle("live", consumer.Config{Subject: "live"}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("live", 1, []byte("before"))
	eventually(t, "first handled", func() bool { return e.status("live").Counters.Processed == 1 })
	e.sup.Use(tr.mark("late"))
	e.publish("live", 1, []byte("after"))
	eventually(t, "second handled", func() bool { return e.status("live").Counters.Processed == 2 })
	cleanStop(t, stop)
	if got, want := tr.get(), []string{"before", "late>", "after", "<late"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A panic in a middleware is recovered per message like one in the
// handler: counted, reported, and the worker goes on with the next.
func TestMiddlewarePanicIsRecovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sup.Use(func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			if string(m.Data()) == "boom" {
				panic("middleware boom")
			}
			return next.Handle(ctx, m)
		})
	})
	handled := make(chan string, 2)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		handled <- string(m.Data())
		return nil
	})
	if err := e.sup.Handle("p", consumer.Config{Subject: "p"}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("p", 1, []byte("boom"))
	e.publish("p", 1, []byte("fine"))
	if got := <-handled; got != "fine" {
		t.Fatalf("handled %q, want fine", got)
	}
	ev, _ := natstest.WaitFor[consumer.HandlerPanicked](t, e.rec, 0, 10*time.Second, nil)
	if ev.Handler != "p" || ev.Err == nil || ev.Err.Value != "middleware boom" {
		t.Fatalf("panic event: %+v", ev)
	}
	eventually(t, "counted", func() bool { return e.status("p").Counters.Processed == 1 })
	cleanStop(t, stop)
	if c := e.status("p").Counters; c.Panicked != 1 || c.Failed != 1 {
		t.Fatalf("counters: %+v, want 1 panicked, 1 failed", c)
	}
}

// The handler's timeout bounds its middleware: a middleware waiting on its
// ctx sees it end, and a request is answered 504.
func TestMiddlewareTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stuck := func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			<-ctx.Done() // never returns unless the timeout ends ctx
			return ctx.Err()
		})
	}
	h := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		t.Error("the handler ran past a middleware that does not call it")
		return consumer.Reply{}, nil
	})
	cfg := consumer.Config{Subject: "slow", Timeout: 50 * time.Millisecond, Middleware: []consumer.Middleware{stuck}}
	if err := e.sup.HandleRequest("slow", cfg, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	reply, err := e.pub.Request("slow", nil, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if se := consumer.ResponseError(reply); se == nil || se.Code != 504 {
		t.Fatalf("got %v, want a 504", se)
	}
	cleanStop(t, stop)
}

// Middleware around a request handler sees the handler's error, service
// errors included, and the reply passes through it; what it returns is
// what the caller is answered.
func TestMiddlewareRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var seenErrs []string
	auth := func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			if m.Header().Get("Token") != "ok" {
				return consumer.Errorf(401, "no token")
			}
			err := next.Handle(ctx, m)
			mu.Lock()
			seenErrs = append(seenErrs, errText(err))
			mu.Unlock()
			return err
		})
	}
	e.sup.Use(auth)
	runs := 0
	h := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		runs++ // one worker
		if string(m.Data()) == "missing" {
			return consumer.Reply{}, consumer.Errorf(404, "missing")
		}
		return consumer.Reply{Data: []byte("price of " + string(m.Data()))}, nil
	})
	if err := e.sup.HandleRequest("auth", consumer.Config{Subject: "auth"}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	call := func(data, token string) (string, *consumer.ServiceError) {
		t.Helper()
		msg := nats.NewMsg("auth")
		msg.Data = []byte(data)
		if token != "" {
			msg.Header.Set("Token", token)
		}
		reply, err := e.pub.RequestMsg(msg, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return string(reply.Data), consumer.ResponseError(reply)
	}
	if data, se := call("pen", "ok"); data != "price of pen" || se != nil {
		t.Fatalf("got %q, %v; want the handler's reply", data, se)
	}
	if _, se := call("missing", "ok"); se == nil || se.Code != 404 {
		t.Fatalf("got %v, want the handler's 404", se)
	}
	if _, se := call("pen", ""); se == nil || se.Code != 401 {
		t.Fatalf("got %v, want the middleware's 401", se)
	}
	cleanStop(t, stop)
	if want := []string{"<nil>", "service error 404: missing"}; !slices.Equal(seenErrs, want) || runs != 2 {
		t.Fatalf("middleware saw %q after %d runs, want %q after 2", seenErrs, runs, want)
	}
}

// A middleware that returns a nil handler fails each message with an
// error naming it, instead of panicking.
func TestMiddlewareReturningNil(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	broken := func(consumer.Handler) consumer.Handler { return nil }
	h := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		return consumer.Reply{}, nil
	})
	cfg := consumer.Config{Subject: "nilmw", Middleware: []consumer.Middleware{func(next consumer.Handler) consumer.Handler { return next }, broken}}
	if err := e.sup.HandleRequest("nilmw", cfg, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	reply, err := e.pub.Request("nilmw", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "consumer: config middleware 1 returned a nil handler"
	if se := consumer.ResponseError(reply); se == nil || se.Code != 500 || se.Description != want {
		t.Fatalf("got %v, want a 500 %q", se, want)
	}
	cleanStop(t, stop)
	if c := e.status("nilmw").Counters; c.Panicked != 0 || c.Failed != 1 {
		t.Fatalf("counters: %+v", c)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// Middleware for every handler of a group, and for one handler: the
// group's runs outside the handler's own, both inside the handler's
// timeout and panic recovery.
func ExampleGroup_Use() {
	step := func(name string) consumer.Middleware {
		return func(next consumer.Handler) consumer.Handler {
			return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
				fmt.Println("enter", name)
				defer fmt.Println("leave", name)
				return next.Handle(ctx, m)
			})
		}
	}
	done := make(chan struct{})
	exampleGroup(func(g *consumer.Group) int {
		g.Use(step("group"))
		cfg := consumer.Config{Subject: "orders.created", Middleware: []consumer.Middleware{step("own")}}
		_ = g.Handle("orders", cfg, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			fmt.Println("handle", string(m.Data()))
			return nil
		}))
		g.Use(func(next consumer.Handler) consumer.Handler { // after the handler: still applies
			return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
				defer close(done)
				return next.Handle(ctx, m)
			})
		})
		return 1
	}, func(ctx context.Context, nc *nats.Conn) {
		_ = nc.Publish("orders.created", []byte("order 1"))
		<-done
	})
	// Output:
	// enter group
	// enter own
	// handle order 1
	// leave own
	// leave group
}
