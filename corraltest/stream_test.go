package corraltest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/stream"
)

// jobs is a JetStream handler's settings for the stream name, declared
// with it, storing jobs.>.
func jobs(name string) consumer.JetStream {
	return consumer.JetStream{Stream: name, CreateStream: &stream.Config{Subjects: []string{"jobs.>"}}}
}

// What Publish stored, StreamMsgs reads back in order, all of it or the
// subjects a filter selects; a message published twice with one id is
// stored once.
func TestPublishAndReadAStream(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{Streams: map[string]stream.Config{"JOBS": {Subjects: []string{"jobs.>"}}}})
	kit.Start(ctx)

	if ack := kit.Publish(ctx, "jobs.a", []byte("1")); ack.Stream != "JOBS" || ack.Sequence != 1 {
		t.Fatalf("ack %+v", ack)
	}
	kit.PublishJSON(ctx, "jobs.b", map[string]int{"n": 2})
	msg := nats.NewMsg("jobs.a")
	msg.Data = []byte("3")
	msg.Header.Set(jetstream.MsgIDHeader, "three")
	kit.PublishMsg(ctx, msg)
	if ack := kit.PublishMsg(ctx, msg); !ack.Duplicate {
		t.Fatalf("the same id again: %+v, want a duplicate", ack)
	}

	all := kit.StreamMsgs(ctx, "JOBS", "")
	if got := datas(all); got != `["1" "{\"n\":2}" "3"]` {
		t.Fatalf("JOBS holds %s", got)
	}
	if all[2].Header.Get(jetstream.MsgIDHeader) != "three" || all[2].Sequence != 3 {
		t.Fatalf("third message %+v", all[2])
	}
	if got := datas(kit.StreamMsgs(ctx, "JOBS", "jobs.a")); got != `["1" "3"]` {
		t.Fatalf("jobs.a holds %s", got)
	}
	if got := kit.StreamMsgs(ctx, "JOBS", "jobs.none"); len(got) != 0 {
		t.Fatalf("jobs.none holds %s", datas(got))
	}
	if got := datas(kit.WaitStreamMsgs(ctx, "JOBS", "jobs.*", 3)); got != `["1" "{\"n\":2}" "3"]` {
		t.Fatalf("jobs.* holds %s", got)
	}
}

// A wait for messages that never come fails with how many it found; a
// stream that does not exist fails a read.
func TestStreamReadsFail(t *testing.T) {
	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{Streams: map[string]stream.Config{"JOBS": {Subjects: []string{"jobs.>"}}}})
		kit.Start(ft.Context())
		kit.Publish(ft.Context(), "jobs.a", nil)
		ctx, cancel := context.WithTimeout(ft.Context(), 500*time.Millisecond)
		defer cancel()
		kit.WaitStreamMsgs(ctx, "JOBS", "jobs.a", 2)
	})
	if !failed {
		t.Fatal("the wait passed")
	}
	wantReport(t, reports, `waited for 2 message(s) on "jobs.a" in stream JOBS: found 1`, context.DeadlineExceeded.Error())

	reports, failed = runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		kit.Start(ft.Context())
		kit.StreamMsgs(ft.Context(), "NONE", "")
	})
	if !failed {
		t.Fatal("reading a stream that does not exist passed")
	}
	wantReport(t, reports, "read stream NONE", jetstream.ErrStreamNotFound.Error())
}

// A message that fails every delivery is dead-lettered after the last;
// the dead letter says where it came from, how often it was delivered and
// why it failed.
func TestDeadLetters(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{Streams: map[string]stream.Config{"DEAD": {Subjects: []string{"dead.>"}}}})
	j := jobs("JOBS")
	j.MaxDeliver, j.Backoff, j.DeadLetter = 2, []time.Duration{10 * time.Millisecond}, "dead.jobs"
	fail := consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		return fmt.Errorf("job %s fails", m.Data())
	})
	if err := kit.Client.Handle("jobs", consumer.Config{Subject: "jobs.>", JetStream: j}, fail); err != nil {
		t.Fatal(err)
	}
	kit.Start(ctx)
	if got := kit.DeadLetters(ctx, "dead.jobs"); len(got) != 0 {
		t.Fatalf("dead letters before any job: %v", got)
	}
	kit.Publish(ctx, "jobs.x", []byte("7"))
	tries := kit.WaitOutcomes(ctx, "jobs", 2)
	for i, o := range tries {
		if o.Metadata.NumDelivered != uint64(i+1) || o.Err == nil {
			t.Fatalf("delivery %d: %v", i+1, o)
		}
	}
	dead := kit.WaitDeadLetters(ctx, "dead.jobs", 1)
	want := corraltest.DeadLetter{Msg: dead[0].Msg, Stream: "JOBS", Consumer: "jobs", Subject: "jobs.x", Sequence: 1, Deliveries: 2, Error: "job 7 fails"}
	if len(dead) != 1 || dead[0] != want || string(dead[0].Msg.Data) != "7" || dead[0].Msg.Subject != "dead.jobs" {
		t.Fatalf("dead letters %+v, want %+v", dead, want)
	}
}

// Dead letters no stream keeps fail the test at once, saying so.
func TestDeadLettersNeedAStream(t *testing.T) {
	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		kit.Start(ft.Context())
		kit.WaitDeadLetters(ft.Context(), "dead.nowhere", 1)
	})
	if !failed {
		t.Fatal("passed")
	}
	wantReport(t, reports, `dead letters on "dead.nowhere": no stream stores it`)
}

// Bucket reads every key's current value; deleted keys are left out.
func TestBucket(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{KV: map[string]kv.Config{"settings": {History: 3}}})
	kit.Start(ctx)
	b, err := kit.Client.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	for _, kvs := range [][2]string{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"c", "4"}} {
		if _, err := b.Put(ctx, kvs[0], []byte(kvs[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	got := kit.Bucket(ctx, "settings")
	if len(got) != 2 || string(got["a"]) != "3" || string(got["b"]) != "2" {
		t.Fatalf("settings holds %q", got)
	}

	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		kit.Start(ft.Context())
		kit.Bucket(ft.Context(), "none")
	})
	if !failed {
		t.Fatal("reading a bucket that does not exist passed")
	}
	wantReport(t, reports, "read bucket none", jetstream.ErrBucketNotFound.Error())
}

// A request the responder refuses fails Request with the service error.
func TestRequestFailsOnAServiceError(t *testing.T) {
	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		refuse := consumer.RequestFunc(func(context.Context, *consumer.Msg) (consumer.Reply, error) {
			return consumer.Reply{}, consumer.Errorf(400, "bad request")
		})
		if err := kit.Client.HandleRequest("refuse", consumer.Config{Subject: "refuse"}, refuse); err != nil {
			ft.Fatal(err)
		}
		kit.Start(ft.Context())
		kit.Request(ft.Context(), "refuse", nil)
	})
	if !failed {
		t.Fatal("passed")
	}
	wantReport(t, reports, `request to "refuse"`, "bad request")
}

func datas(msgs []*jetstream.RawStreamMsg) string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Data)
	}
	return fmt.Sprintf("%q", out)
}
