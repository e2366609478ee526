package main

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/stream"
)

func TestMain(m *testing.M) { corraltest.VerifyTestMain(m) }

// The jobs handler as newWorker declares it, one job at a time: a job is
// processed once; a poison job fails each of its 3 deliveries and is
// dead-lettered after the last; a job that is not a number is
// dead-lettered at once. Each dead letter says where it came from and why.
func TestJobsHandler(t *testing.T) {
	ctx := t.Context()
	// The DEAD stream keeps the dead letters, as declareDead declares it.
	cfg := corral.Config{Streams: map[string]stream.Config{"DEAD": {Subjects: []string{"dead.>"}}}}
	jobs := &tally{processed: map[int]bool{}}
	c, err := newWorker(corraltest.TempConfig(t, cfg), jobs)
	if err != nil {
		t.Fatal(err)
	}
	kit := corraltest.Wrap(t, c)
	kit.Start(ctx)

	kit.Publish(ctx, "jobs.new", []byte("7"))
	if o := kit.WaitOutcome(ctx, "jobs"); o.Err != nil || o.Metadata.NumDelivered != 1 {
		t.Fatalf("job 7: %v", o)
	}
	jobs.mu.Lock()
	seven := jobs.processed[7]
	jobs.mu.Unlock()
	if jobs.count() != 1 || !seven {
		t.Fatalf("processed %d jobs, want job 7 alone", jobs.count())
	}

	poison := strconv.Itoa(2 * poisonEach)
	kit.Publish(ctx, "jobs.new", []byte(poison))
	for i, o := range kit.WaitOutcomes(ctx, "jobs", 3) {
		if string(o.Data) != poison || o.Metadata.NumDelivered != uint64(i+1) || o.Err == nil {
			t.Fatalf("delivery %d of the poison job: %v", i+1, o)
		}
	}
	kit.Publish(ctx, "jobs.new", []byte("seven"))
	var terminal *consumer.TerminalError
	if o := kit.WaitOutcome(ctx, "jobs"); !errors.As(o.Err, &terminal) || o.Metadata.NumDelivered != 1 {
		t.Fatalf("job seven: %v, want a terminal error on the first delivery", o)
	}

	dead := kit.WaitDeadLetters(ctx, "dead.jobs", 2)
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dead), dead)
	}
	for i, want := range []struct {
		data       string
		deliveries uint64
		err        string
	}{
		{poison, 3, "job " + poison + " is poison"},
		{"seven", 1, `strconv.Atoi: parsing "seven": invalid syntax`},
	} {
		d := dead[i]
		if string(d.Msg.Data) != want.data || d.Deliveries != want.deliveries || d.Error != want.err ||
			d.Stream != "JOBS" || d.Consumer != "workers" || d.Subject != "jobs.new" {
			t.Errorf("dead letter %d: %+v data %q, want %q after %d deliveries: %s", i, d, d.Msg.Data, want.data, want.deliveries, want.err)
		}
	}
	if jobs.count() != 1 {
		t.Errorf("processed %d jobs, want job 7 alone", jobs.count())
	}
}

func TestNothingIsLost(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "dead_lettered=10 lost=0") {
		t.Fatalf("summary:\n%s", out.String())
	}
}
