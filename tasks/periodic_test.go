package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// A periodic schedule declared by three workers starting together is
// written once, and each of its ticks is one task, run once, whose id
// names the schedule and the tick.
func TestPeriodicDeclaredOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js := declareQueue(t, nc, tasks.Config{}, "q")
	cfg := tasks.Config{Schedules: map[string]tasks.Schedule{"sweep": {Every: time.Second, Data: "sweep it"}}}
	log := newRunLog()
	rec := natstest.NewRecorder()
	h := tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		if task.Schedule() != "sweep" || string(task.Data()) != "sweep it" {
			return fmt.Errorf("task %s comes from schedule %q with %q", task.ID(), task.Schedule(), task.Data())
		}
		return log.handler().Run(ctx, task)
	})
	for range 3 {
		startWorker(t, srv.URL(), "q", cfg, h, rec)
	}
	runs := log.waitRan(t, 4, 30*time.Second)
	for id, r := range runs {
		if len(r) != 1 || !strings.HasPrefix(id, tasks.ReservedMsgIDPrefix+"tick:sweep@") {
			t.Errorf("tick %s ran %d times; want once, its id naming the schedule", id, len(r))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "TASKS_q")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "corral.tasks.q.periodic.sweep")
	if err != nil {
		t.Fatal(err)
	}
	if declared := natstest.All[tasks.ScheduleDeclared](rec); len(declared) != 1 || m.Header.Get(jetstream.ScheduleHeader) != "@every 1s" {
		t.Errorf("declared %d times (%+v), schedule %v; want it written once, every second", len(declared), declared, m.Header)
	}
}

// A schedule changed in the configuration replaces the one declared; one
// no longer in it is removed; a schedule of someone else's on the queue's
// subjects is left alone. Bad schedules are refused at Validate.
func TestPeriodicChangedAndRemoved(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js := declareQueue(t, nc, tasks.Config{}, "q")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	foreign := nats.NewMsg("corral.tasks.q.periodic.theirs")
	foreign.Header.Set(jetstream.ScheduleHeader, "@every 1h")
	foreign.Header.Set(jetstream.ScheduleTargetHeader, "corral.tasks.q.t.2.theirs")
	if _, err := js.PublishMsg(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	nop := tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })
	serve := func(schedules map[string]tasks.Schedule) {
		t.Helper()
		w := startWorker(t, srv.URL(), "q", tasks.Config{Schedules: schedules}, nop, nil)
		natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Lease == tasks.LeaseStateHeld }, func() string {
			return "the worker did not start"
		})
		if err := w.stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	serve(map[string]tasks.Schedule{"nightly": {Cron: "0 0 2 * * *", TimeZone: "Europe/Paris"}, "gone": {Every: time.Hour}})
	serve(map[string]tasks.Schedule{"nightly": {Cron: "0 30 3 * * *", TimeZone: "Europe/Paris"}})
	s, err := js.Stream(ctx, "TASKS_q")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetLastMsgForSubject(ctx, "corral.tasks.q.periodic.nightly"); err != nil ||
		m.Header.Get(jetstream.ScheduleHeader) != "0 30 3 * * *" || m.Header.Get(jetstream.ScheduleTimeZoneHeader) != "Europe/Paris" {
		t.Errorf("the changed schedule: %v, %v; want it replaced", m, err)
	}
	if _, err := s.GetLastMsgForSubject(ctx, "corral.tasks.q.periodic.gone"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the schedule removed from the configuration: %v, want it deleted", err)
	}
	if _, err := s.GetLastMsgForSubject(ctx, "corral.tasks.q.periodic.theirs"); err != nil {
		t.Errorf("someone else's schedule: %v, want it kept", err)
	}
	for _, c := range []struct {
		s     tasks.Schedule
		field string
	}{
		{tasks.Schedule{}, "schedules.x:"},
		{tasks.Schedule{Cron: "0 0 2 * * *", Every: time.Second}, "schedules.x:"},
		{tasks.Schedule{Every: time.Millisecond}, "schedules.x.every:"},
		{tasks.Schedule{Cron: "0 2 * * *"}, "schedules.x.cron:"},
		{tasks.Schedule{Cron: "@daily", TimeZone: "Mars/Olympus"}, "schedules.x.time_zone:"},
		{tasks.Schedule{Every: time.Minute, TimeZone: "Europe/Paris"}, "schedules.x.time_zone:"},
	} {
		err := tasks.Config{Schedules: map[string]tasks.Schedule{"x": c.s}}.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("schedule %+v: %v, want an error naming %s", c.s, err, c.field)
		}
	}
	if err := (tasks.Config{Schedules: map[string]tasks.Schedule{"a.b": {Every: time.Minute}}}).Validate(); err == nil {
		t.Error("a schedule named a.b was accepted")
	}
}
