package consumer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// env is a server, a connection for publishing and one for the handlers.
type env struct {
	t   *testing.T
	srv *natstest.Server
	pub *nats.Conn
	sub *nats.Conn
	rec *natstest.Recorder
	sup *consumer.Group
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, natstest.RunServer(t))
}

// newEnvOn is newEnv on a server of the test's own.
func newEnvOn(t *testing.T, srv *natstest.Server) *env {
	t.Helper()
	e := &env{t: t, srv: srv, rec: natstest.NewRecorder()}
	e.pub = connect(t, e.srv.URL())
	e.sub = connect(t, e.srv.URL())
	e.sup = consumer.NewGroup(connection.NewFixed(e.sub), supervisor.Events{Hook: e.rec.Hook})
	return e
}

// connect connects to url for the test. Overload tests make nats.go drop
// on purpose; its default handler would print each episode.
func connect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	return natstest.Connect(t, url, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
}

// serve runs the supervisor until stop, which returns Serve's error.
func (e *env) serve() (stop func() error) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.sup.Serve(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop
}

// subscribed waits until n handlers have subscribed.
func (e *env) subscribed(n int) {
	e.t.Helper()
	from := 0
	for range n {
		_, i := natstest.WaitFor[consumer.Subscribed](e.t, e.rec, from, 10*time.Second, nil)
		from = i + 1
	}
}

func (e *env) publish(subject string, n int, data []byte) {
	e.t.Helper()
	for range n {
		if err := e.pub.Publish(subject, data); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := e.pub.Flush(); err != nil {
		e.t.Fatal(err)
	}
}

// status returns the handler's status.
func (e *env) status(name string) consumer.Status {
	for _, s := range e.sup.Status() {
		if s.Name == name {
			return s
		}
	}
	e.t.Fatalf("no handler %q", name)
	return consumer.Status{}
}

// eventually polls cond until it holds or 20s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	natstest.Eventually(t, 20*time.Second, cond, func() string { return what })
}

func cleanStop(t *testing.T, stop func() error) {
	t.Helper()
	if err := stop(); !errors.Is(err, context.Canceled) || errors.Is(err, supervisor.ErrShutdownIncomplete) {
		t.Fatalf("Serve: got %v, want a clean stop", err)
	}
}
