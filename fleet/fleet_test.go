package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// serve runs a Responder for name and id on a connection of its own to
// url, until the returned stop is called (or the test ends).
func serve(t *testing.T, url, name, id string, status func() any) (stop func()) {
	t.Helper()
	nc := natstest.Connect(t, url)
	r, err := fleet.NewResponder(fleet.Config{Identity: fleet.Self(name, id), Status: status}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	// Answering once is being subscribed: a ping of this instance alone
	// tells.
	natstest.Eventually(t, 10*time.Second, func() bool {
		found, err := fleet.Ping(context.Background(), nc, fleet.Query{Name: name, ID: id, Expect: 1, Wait: 100 * time.Millisecond})
		return err == nil && len(found) == 1
	}, func() string { return name + "/" + id + " never answered" })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v, want context.Canceled", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func ids(found []fleet.Instance) []string {
	var out []string
	for _, in := range found {
		out = append(out, in.Name+"/"+in.ID)
	}
	return out
}

// One request finds every process, every instance of a service, or one
// instance; an instance that stopped is missing from the next answers.
func TestPingFindsTheFleet(t *testing.T) {
	srv := natstest.RunServer(t)
	serve(t, srv.URL(), "orders", "o1", nil)
	stopO2 := serve(t, srv.URL(), "orders", "o2", nil)
	serve(t, srv.URL(), "billing", "b1", nil)
	nc := natstest.Connect(t, srv.URL())
	ctx := context.Background()
	for _, tt := range []struct {
		q    fleet.Query
		want string
	}{
		{fleet.Query{}, "[billing/b1 orders/o1 orders/o2]"},
		{fleet.Query{Name: "orders"}, "[orders/o1 orders/o2]"},
		{fleet.Query{Name: "orders", ID: "o2"}, "[orders/o2]"},
		{fleet.Query{Name: "shipping"}, "[]"},
	} {
		found, err := fleet.Ping(ctx, nc, fleet.Query{Name: tt.q.Name, ID: tt.q.ID, Wait: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ids(found)); got != tt.want {
			t.Errorf("ping %+v: %s, want %s", tt.q, got, tt.want)
		}
		for _, in := range found {
			if in.Type != fleet.PingType || in.Host == "" || in.PID == 0 || in.Started.IsZero() || in.Uptime == "" || in.Status != nil {
				t.Errorf("ping %+v: answer %+v, want its identity alone", tt.q, in)
			}
		}
	}
	stopO2()
	found, err := fleet.Ping(ctx, nc, fleet.Query{Name: "orders", Wait: 300 * time.Millisecond})
	if err != nil || fmt.Sprint(ids(found)) != "[orders/o1]" {
		t.Fatalf("after o2 stopped: %v, %v; want orders/o1 alone", ids(found), err)
	}
}

// A status request gets the status the process gives, as JSON, beside
// its identity; a status that cannot be marshalled says so.
func TestStatusCarriesTheProcessStatus(t *testing.T) {
	srv := natstest.RunServer(t)
	type status struct{ Held, Capacity int }
	serve(t, srv.URL(), "orders", "o1", func() any { return status{Held: 3, Capacity: 16} })
	serve(t, srv.URL(), "orders", "o2", func() any { return func() {} })
	nc := natstest.Connect(t, srv.URL())
	found, err := fleet.Status(context.Background(), nc, fleet.Query{Name: "orders", Expect: 2, Wait: 10 * time.Second})
	if err != nil || len(found) != 2 {
		t.Fatalf("status: %v, %v; want two answers", ids(found), err)
	}
	var st status
	if err := json.Unmarshal(found[0].Status, &st); err != nil || st != (status{Held: 3, Capacity: 16}) || found[0].Type != fleet.StatusType {
		t.Errorf("o1: %+v (%s), %v", st, found[0].Status, err)
	}
	if found[1].Status != nil || found[1].Error == "" {
		t.Errorf("o2: status %s, error %q; want no status and why", found[1].Status, found[1].Error)
	}
}

// A queue size out of range is refused at once, naming the field.
func TestQueueSizeIsBounded(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	for _, size := range []int{-1, 1<<16 + 1} {
		_, err := fleet.NewResponder(fleet.Config{Identity: fleet.Identity{Name: "orders", ID: "o1"}, QueueSize: size}, connection.NewFixed(nc))
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "queue_size") {
			t.Errorf("QueueSize %d: %v, want ErrInvalidConfig naming queue_size", size, err)
		}
	}
}

// Names and IDs are subject tokens, refused otherwise at once.
func TestNamesAreTokens(t *testing.T) {
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	for _, in := range []fleet.Identity{{Name: "or.ders", ID: "x"}, {Name: "orders", ID: "a b"}, {Name: "", ID: "x"}} {
		if _, err := fleet.NewResponder(fleet.Config{Identity: in}, connection.NewFixed(nc)); !errors.Is(err, supervisor.ErrInvalidConfig) {
			t.Errorf("NewResponder(%+v): %v, want ErrInvalidConfig", in, err)
		}
	}
	for _, q := range []fleet.Query{{Name: "or*ders"}, {ID: "o1"}, {Name: "orders", ID: "o.1"}} {
		if _, err := fleet.Ping(context.Background(), nc, q); err == nil {
			t.Errorf("Ping(%+v): nil error", q)
		}
	}
}
