package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// discover sends a micro control request and decodes each of the n
// replies it waits for into a T.
func discover[T any](t *testing.T, nc *nats.Conn, verb micro.Verb, name, id string, n int) []T {
	t.Helper()
	subject, err := micro.ControlSubject(verb, name, id)
	if err != nil {
		t.Fatal(err)
	}
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		t.Fatal(err)
	}
	out := make([]T, 0, n)
	for range n {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("%s: %d of %d replies: %v", subject, len(out), n, err)
		}
		var v T
		if err := json.Unmarshal(m.Data, &v); err != nil {
			t.Fatalf("%s: %v: %s", subject, err, m.Data)
		}
		out = append(out, v)
	}
	return out
}

// Request handlers are micro services: two endpoints sharing a service
// name are one service, a handler without one is its own service (its
// name, 0.0.0). PING, INFO and STATS answer for all services, by name, and
// by instance, in micro's shapes; STATS are the handlers' counters.
func TestRequestHandlersAreMicroServices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orders := consumer.Service{Name: "orders", Version: "1.2.0", Description: "the orders"}
	fail := consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		if string(m.Data()) == "bad" {
			return consumer.Reply{}, consumer.Errorf(400, "bad order")
		}
		return consumer.Reply{Data: []byte("ok")}, nil
	})
	for name, cfg := range map[string]consumer.Config{
		"create": {Subject: "orders.create", QueueGroup: "orders", Service: orders},
		"cancel": {Subject: "orders.cancel", Service: consumer.Service{Name: "orders"}},
		"prices": {Subject: "prices.get"},
	} {
		if err := e.sup.HandleRequest(name, cfg, fail); err != nil {
			t.Fatal(err)
		}
	}
	stop := e.serve()
	eventually(t, "ready", func() bool {
		return e.status("create").Ready && e.status("cancel").Ready && e.status("prices").Ready
	})

	pings := discover[micro.Ping](t, e.pub, micro.PingVerb, "", "", 2)
	got := map[string]micro.Ping{}
	for _, p := range pings {
		if p.Type != micro.PingResponseType || p.ID == "" {
			t.Fatalf("ping: got %+v", p)
		}
		got[p.Name] = p
	}
	if got["orders"].Version != "1.2.0" || got["prices"].Version != "0.0.0" {
		t.Fatalf("services: got %+v, want orders 1.2.0 and prices 0.0.0", got)
	}

	id := got["orders"].ID
	info := discover[micro.Info](t, e.pub, micro.InfoVerb, "orders", "", 1)[0]
	slices.SortFunc(info.Endpoints, func(a, b micro.EndpointInfo) int { return strings.Compare(a.Name, b.Name) })
	want := []micro.EndpointInfo{{Name: "cancel", Subject: "orders.cancel", Metadata: map[string]string{}},
		{Name: "create", Subject: "orders.create", QueueGroup: "orders", Metadata: map[string]string{}}}
	if info.ID != id || info.Type != micro.InfoResponseType || info.Description != "the orders" ||
		!slices.EqualFunc(info.Endpoints, want, func(a, b micro.EndpointInfo) bool {
			return a.Name == b.Name && a.Subject == b.Subject && a.QueueGroup == b.QueueGroup
		}) {
		t.Fatalf("info: got %+v", info)
	}

	for _, data := range []string{"ok", "ok", "bad"} {
		if _, err := e.pub.Request("orders.create", []byte(data), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "3 handled", func() bool { c := e.status("create").Counters; return c.Processed+c.Failed == 3 })
	stats := discover[micro.Stats](t, e.pub, micro.StatsVerb, "orders", id, 1)[0]
	var create *micro.EndpointStats
	for _, es := range stats.Endpoints {
		if es.Name == "create" {
			create = es
		}
	}
	if stats.Type != micro.StatsResponseType || stats.Started.IsZero() || len(stats.Endpoints) != 2 || create == nil {
		t.Fatalf("stats: got %+v", stats)
	}
	if create.NumRequests != 3 || create.NumErrors != 1 || create.LastError != "service error 400: bad order" ||
		create.ProcessingTime <= 0 || create.AverageProcessingTime != create.ProcessingTime/3 {
		t.Fatalf("create's stats: got %+v", create)
	}
	cleanStop(t, stop)
}

// What Corral answers has the keys nats.go's own micro service answers,
// and both are found by the same discovery request.
func TestMicroAnswersAsMicroDoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.HandleRequest("ours", consumer.Config{Subject: "ours"}, echo()); err != nil {
		t.Fatal(err)
	}
	theirs, err := micro.AddService(e.pub, micro.Config{Name: "theirs", Version: "1.0.0",
		Endpoint: &micro.EndpointConfig{Subject: "theirs", Handler: micro.HandlerFunc(func(r micro.Request) { _ = r.Respond(nil) })}})
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Stop()
	stop := e.serve()
	eventually(t, "ready", func() bool { return e.status("ours").Ready })
	for _, verb := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
		replies := discover[map[string]any](t, e.pub, verb, "", "", 2)
		byName := map[any]map[string]any{}
		for _, r := range replies {
			byName[r["name"]] = r
		}
		ours, mine := byName["ours"], byName["theirs"]
		if ours == nil || mine == nil {
			t.Fatalf("%s: got %v, want ours and theirs", verb, replies)
		}
		if a, b := slices.Sorted(maps.Keys(ours)), slices.Sorted(maps.Keys(mine)); !slices.Equal(a, b) {
			t.Fatalf("%s keys: got %v, micro's are %v", verb, a, b)
		}
		if verb == micro.StatsVerb {
			a := ours["endpoints"].([]any)[0].(map[string]any)
			b := mine["endpoints"].([]any)[0].(map[string]any)
			if ak, bk := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)); !slices.Equal(ak, bk) {
				t.Fatalf("endpoint stats keys: got %v, micro's are %v", ak, bk)
			}
		}
	}
	cleanStop(t, stop)
}

// A service stops answering when its last endpoint is removed, and not
// before.
func TestServiceGoesWithItsLastEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := consumer.Service{Name: "pair"}
	for _, name := range []string{"one", "two"} {
		if err := e.sup.HandleRequest(name, consumer.Config{Subject: "pair." + name, Service: svc}, echo()); err != nil {
			t.Fatal(err)
		}
	}
	stop := e.serve()
	eventually(t, "ready", func() bool { return e.status("one").Ready && e.status("two").Ready })
	ping, _ := micro.ControlSubject(micro.PingVerb, "pair", "")
	if err := e.sup.Remove(context.Background(), "one"); err != nil {
		t.Fatal(err)
	}
	info := discover[micro.Info](t, e.pub, micro.InfoVerb, "pair", "", 1)[0]
	if len(info.Endpoints) != 1 || info.Endpoints[0].Name != "two" {
		t.Fatalf("info after removing one: got %+v", info.Endpoints)
	}
	if err := e.sup.Remove(context.Background(), "two"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no service once its endpoints are gone", func() bool {
		_, err := e.pub.Request(ping, nil, 5*time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
	cleanStop(t, stop)
}

// The services answer again on the connection made when the first one
// closed for good.
func TestMicroFollowsAReplacedConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	events := supervisor.Events{}
	conn, err := connection.New(connection.Config{Servers: []string{srv.URL()}, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	g := consumer.NewGroup(conn, events)
	if err := g.HandleRequest("svc", consumer.Config{Subject: "svc"}, echo()); err != nil {
		t.Fatal(err)
	}
	tree := supervisor.NewTree("t", events)
	if err := tree.Add("connection", conn, supervisor.Policy{RestartDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := tree.Add("consumers", g, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()
	pub := connect(t, srv.URL())
	eventually(t, "ready", func() bool { return g.Status()[0].Ready })
	first := discover[micro.Ping](t, pub, micro.PingVerb, "svc", "", 1)[0]

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	old, _, err := conn.Conn(wctx)
	wcancel()
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	eventually(t, "ready on the new connection", func() bool { return conn.Status().Generation == 2 && g.Status()[0].Ready })
	if again := discover[micro.Ping](t, pub, micro.PingVerb, "svc", first.ID, 1)[0]; again.ID != first.ID {
		t.Fatalf("after the replacement: got %+v, want the same instance %s", again, first.ID)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A service's name and version are checked as micro checks them, the
// endpoints of one service must agree on its version, and only request
// handlers are services.
func TestServiceConfigIsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.HandleRequest("a", consumer.Config{Subject: "a", Service: consumer.Service{Name: "s", Version: "1.0.0"}}, echo()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  consumer.Config
		want string
	}{
		{"b", consumer.Config{Subject: "b", Service: consumer.Service{Name: "s.x"}},
			`consumer: handler "b": invalid config: service.name "s.x": letters, digits, '-' and '_' only`},
		{"c", consumer.Config{Subject: "c", Service: consumer.Service{Version: "v1"}},
			`consumer: handler "c": invalid config: service.version "v1": not a semantic version (1.2.3)`},
		{"d", consumer.Config{Subject: "d", Service: consumer.Service{Name: "s", Version: "2.0.0"}},
			`consumer: handler "d": invalid config: service.version "2.0.0": service "s" is version 1.0.0`},
	} {
		if err := e.sup.HandleRequest(tt.name, tt.cfg, echo()); !errors.Is(err, supervisor.ErrInvalidConfig) || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
	}
	err := e.sup.Handle("plain", consumer.Config{Subject: "p", Service: consumer.Service{Name: "s"}},
		consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil }))
	if !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("a service on a plain handler: got %v", err)
	}
	if n := len(e.sup.Status()); n != 1 {
		t.Fatalf("handlers: got %d, want only a", n)
	}
}

// An endpoint that joins a service while it answers discovery, giving the
// service its version, races no answer (run with -race): the version is
// read under the group's lock, and the service then reports it.
func TestServiceVersionSetWhileAnswering(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.HandleRequest("first", consumer.Config{Subject: "v.first", Service: consumer.Service{Name: "versioned"}}, echo()); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	eventually(t, "ready", func() bool { return e.status("first").Ready })
	ping, _ := micro.ControlSubject(micro.PingVerb, "versioned", "")
	stopPinging, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stopPinging:
				return
			default:
				_, _ = e.pub.Request(ping, nil, 5*time.Second)
			}
		}
	}()
	if err := e.sup.HandleRequest("second", consumer.Config{Subject: "v.second", Service: consumer.Service{Name: "versioned", Version: "1.2.3"}}, echo()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second endpoint ready", func() bool { return e.status("second").Ready })
	close(stopPinging)
	<-done
	got := discover[micro.Ping](t, e.pub, micro.PingVerb, "versioned", "", 1)[0]
	if got.Version != "1.2.3" {
		t.Fatalf("version after the second endpoint joined: %q, want 1.2.3", got.Version)
	}
	cleanStop(t, stop)
}
