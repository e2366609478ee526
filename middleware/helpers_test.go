package middleware_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// env is a server, a connection for publishing, one for the handlers and
// their buckets, and a group of handlers.
type env struct {
	t     *testing.T
	pub   *nats.Conn
	src   connection.Source
	js    jetstream.JetStream
	rec   *natstest.Recorder
	group *consumer.Group
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := natstest.RunServer(t)
	e := &env{t: t, rec: natstest.NewRecorder()}
	e.pub = natstest.Connect(t, srv.URL())
	e.src = connection.NewFixed(natstest.Connect(t, srv.URL()))
	var err error
	if e.js, err = jetstream.New(e.pub); err != nil {
		t.Fatal(err)
	}
	e.group = consumer.NewGroup(e.src, supervisor.Events{Hook: e.rec.Hook})
	return e
}

// stream declares a stream of subjects.
func (e *env) stream(name string, subjects ...string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects}); err != nil {
		e.t.Fatal(err)
	}
}

// bucket opens a bucket of bytes on the handlers' connection.
func (e *env) bucket(name string, cfg kv.Config) *kv.Bucket[[]byte] {
	e.t.Helper()
	b, err := kv.Open(name, cfg, e.src, codec.Bytes{})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// publish publishes data to subject, with a Nats-Msg-Id when id is set,
// to JetStream when js is true.
func (e *env) publish(subject, data, id string, js bool) {
	e.t.Helper()
	m := nats.NewMsg(subject)
	m.Data = []byte(data)
	if id != "" {
		m.Header.Set(nats.MsgIdHdr, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if js {
		_, err = e.js.PublishMsg(ctx, m)
	} else if err = e.pub.PublishMsg(m); err == nil {
		err = e.pub.FlushWithContext(ctx)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// serve runs e's group until the test stops it with the returned
// function, which fails the test unless the group stopped cleanly; it
// returns once handlers more handlers have subscribed.
func (e *env) serve(handlers int) (stop func()) {
	e.t.Helper()
	return e.serveGroup(e.group, handlers)
}

// serveGroup is serve for another group than e's.
func (e *env) serveGroup(g *consumer.Group, handlers int) (stop func()) {
	e.t.Helper()
	from := e.rec.Len()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, supervisor.ErrShutdownIncomplete) {
				e.t.Errorf("Serve: got %v, want a clean stop", err)
			}
		})
	}
	e.t.Cleanup(stop)
	for range handlers {
		_, i := natstest.WaitFor[consumer.Subscribed](e.t, e.rec, from, 10*time.Second, nil)
		from = i + 1
	}
	return stop
}

// counters returns the handler's counters.
func (e *env) counters(name string) consumer.Counters {
	for _, s := range e.group.Status() {
		if s.Name == name {
			return s.Counters
		}
	}
	e.t.Fatalf("no handler %q", name)
	return consumer.Counters{}
}

// eventually polls cond until it holds or 20s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	natstest.Eventually(t, 20*time.Second, cond, func() string { return what })
}

// runs counts handler calls by payload.
type runs struct {
	mu sync.Mutex
	n  map[string]int
}

func newRuns() *runs { return &runs{n: map[string]int{}} }

func (r *runs) add(m *consumer.Msg) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[string(m.Data())]++
	return r.n[string(m.Data())]
}

func (r *runs) get() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// skips records the messages a Dedup skips, as "<data> <key>", in order:
// its add is a DedupConfig.OnDuplicate.
type skips struct {
	mu  sync.Mutex
	got []string
}

func (s *skips) add(m *consumer.Msg, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, string(m.Data())+" "+key)
}

func (s *skips) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}
