package stream_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
)

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"ORDERS": true, "a-b_c": true, strings.Repeat("n", stream.MaxNameLen): true,
		"": false, strings.Repeat("n", stream.MaxNameLen+1): false, "a.b": false, "a*": false, "a>": false,
		"a/b": false, `a\b`: false, "a b": false, "a\fb": false, "a\u00a0b": false,
	} {
		if err := stream.ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%.40q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// Declare reports what the server refused: only a change it cannot make
// to an existing stream reads as one.
func TestDeclareReportsTheServersRefusal(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	orders := stream.Config{Subjects: []string{"orders.>"}}
	if _, err := orders.Declare(ctx, js, "ORDERS"); err != nil {
		t.Fatal(err)
	}
	const inPlace = "cannot be changed in place"
	for _, tc := range []struct {
		name, desc string
		cfg        stream.Config
		code       jetstream.ErrorCode
	}{
		// nats.go lets a form feed through; the server refuses the name.
		{"A\fB", "stream name is required", orders, 10052},
		{"OTHER", "subjects overlap", orders, 10065},
		{strings.Repeat("n", stream.MaxNameLen+1), "too long", stream.Config{Subjects: []string{"long"}}, 10052},
	} {
		_, err := tc.cfg.Declare(ctx, js, tc.name)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != tc.code || !strings.Contains(err.Error(), tc.desc) ||
			strings.Contains(err.Error(), inPlace) {
			t.Errorf("declare %.20q: %v, want the server's %d %q, not %q", tc.name, err, tc.code, tc.desc, inPlace)
		}
	}
	orders.Storage = "memory"
	if _, err := orders.Declare(ctx, js, "ORDERS"); err == nil || !strings.Contains(err.Error(), inPlace) {
		t.Errorf("changing the storage: %v, want %q", err, inPlace)
	}
}

// A stream that asks for message schedules is declared with them and with
// rollups, which the server requires beside them; one declared before
// without them is updated in place, keeping its messages; and they cannot
// be turned off again.
func TestDeclareWithSchedules(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jobs := stream.Config{Subjects: []string{"jobs.>"}, Retention: "workqueue"}
	if _, err := jobs.Declare(ctx, js, "JOBS"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "jobs.a", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	jobs.AllowMsgSchedules = true
	s, err := jobs.Declare(ctx, js, "JOBS")
	if err != nil {
		t.Fatalf("declaring schedules on a stream without them: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := info.Config; !c.AllowMsgSchedules || !c.AllowRollup || info.State.Msgs != 1 {
		t.Errorf("read back: schedules %v, rollup %v, %d messages; want both set and the message kept",
			c.AllowMsgSchedules, c.AllowRollup, info.State.Msgs)
	}
	if _, err := jobs.Declare(ctx, js, "JOBS"); err != nil {
		t.Errorf("declaring the same again: %v", err)
	}
	jobs.AllowMsgSchedules = false
	if _, err := jobs.Declare(ctx, js, "JOBS"); err == nil || !strings.Contains(err.Error(), "cannot be changed in place") {
		t.Errorf("turning schedules off: %v, want a change that cannot be made in place", err)
	}
}

// A placement names a cluster or tags; one that names neither, a cluster
// name that could not be one, or an empty tag is refused naming it, and
// the declaration carries it to the server.
func TestPlacement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pl    stream.Placement
		field string
	}{
		{stream.Placement{}, "placement: names no cluster"},
		{stream.Placement{Cluster: "east.1"}, "placement.cluster"},
		{stream.Placement{Cluster: "east", Tags: []string{"ssd", " "}}, "placement.tags[1]"},
	} {
		c := stream.Config{Subjects: []string{"orders.>"}, Placement: &tc.pl}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want a problem with %s", tc.pl, err, tc.field)
		}
	}
	c := stream.Config{Subjects: []string{"orders.>"}, Placement: &stream.Placement{Cluster: "east", Tags: []string{"ssd"}}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.JetStream("ORDERS").Placement; got == nil || got.Cluster != "east" || len(got.Tags) != 1 || got.Tags[0] != "ssd" {
		t.Errorf("nats.go's placement: %+v", got)
	}
	if got := (stream.Config{Subjects: []string{"a"}}).JetStream("A").Placement; got != nil {
		t.Errorf("no placement became %+v", got)
	}
}
