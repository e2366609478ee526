package event_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// stamp is the time of every sample event; zap stamps its own, so it is
// no field of the line.
var stamp = supervisor.EventTime{At: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}

// panicked is a recovered panic: its stack is logged beside its message.
var panicked = &supervisor.PanicError{Value: "boom", Stack: []byte("goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n")}

// eventLine is an event and the line it is logged as.
type eventLine struct {
	ev   supervisor.Event
	want string
}

// eventLines are events of every package and the JSON lines they are
// logged as: every field, fields left out when zero and written when not,
// errors with and without a stack, durations, lists and named strings.
var eventLines = []eventLine{
	// supervisor
	{supervisor.ChildStarted{EventTime: stamp, Child: "orders"},
		`{"level":"debug","msg":"supervisor.child_started","component":"supervisor","child":"orders","restarts":0}`},
	{supervisor.ChildStarted{EventTime: stamp, Child: "orders", Restarts: 2},
		`{"level":"info","msg":"supervisor.child_started","component":"supervisor","child":"orders","restarts":2}`},
	{supervisor.ChildStarted{EventTime: stamp, Child: "orders", Restarts: 3, Repeated: 1},
		`{"level":"debug","msg":"supervisor.child_started","component":"supervisor","child":"orders","restarts":3,"repeated":1}`},
	{supervisor.ChildFailed{EventTime: stamp, Child: "orders", Err: panicked, Failures: 1, Threshold: 5, Restarting: true, RestartIn: 1500 * time.Millisecond},
		`{"level":"error","msg":"supervisor.child_failed","component":"supervisor","child":"orders","error":"panic: boom","stack":"goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n","failures":1,"threshold":5,"restarting":true,"restart_in":1.5}`},
	{supervisor.ChildFailed{EventTime: stamp, Child: "orders", Err: errors.New("db down"), Failures: 4, Repeated: 3, Threshold: 2.5, RestartIn: time.Minute},
		`{"level":"debug","msg":"supervisor.child_failed","component":"supervisor","child":"orders","error":"db down","failures":4,"repeated":3,"threshold":2.5,"restarting":false,"restart_in":60}`},
	{supervisor.ChildFailed{EventTime: stamp, Child: "orders"},
		`{"level":"error","msg":"supervisor.child_failed","component":"supervisor","child":"orders","failures":0,"threshold":0,"restarting":false,"restart_in":0}`},
	{supervisor.ChildBackoff{EventTime: stamp, Child: "orders", Backoff: 250 * time.Millisecond, Repeated: 2},
		`{"level":"warn","msg":"supervisor.child_backoff","component":"supervisor","child":"orders","backoff":0.25}`},
	{supervisor.ChildResumed{EventTime: stamp, Child: "orders"},
		`{"level":"info","msg":"supervisor.child_resumed","component":"supervisor","child":"orders"}`},
	{supervisor.ChildResumed{EventTime: stamp, Child: "orders", Repeated: 2},
		`{"level":"debug","msg":"supervisor.child_resumed","component":"supervisor","child":"orders"}`},
	{supervisor.ChildRecovered{EventTime: stamp, Child: "orders", Failures: 3},
		`{"level":"info","msg":"supervisor.child_recovered","component":"supervisor","child":"orders","failures":3}`},
	{supervisor.ChildStopped{EventTime: stamp, Child: "orders"},
		`{"level":"debug","msg":"supervisor.child_stopped","component":"supervisor","child":"orders"}`},
	{supervisor.ChildStopped{EventTime: stamp, Child: "orders", Err: fmt.Errorf("serve: %w", panicked)},
		`{"level":"error","msg":"supervisor.child_stopped","component":"supervisor","child":"orders","error":"serve: panic: boom","stack":"goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n"}`},
	{supervisor.ChildStopTimeout{EventTime: stamp, Child: "orders", Timeout: 10 * time.Second},
		`{"level":"error","msg":"supervisor.child_stop_timeout","component":"supervisor","child":"orders","timeout":10}`},

	// connection
	{connection.Connected{EventTime: stamp, URL: "nats://127.0.0.1:4222", ServerID: "NABC", ServerName: "n1", Generation: 1},
		`{"level":"info","msg":"connection.connected","component":"connection","url":"nats://127.0.0.1:4222","server_id":"NABC","server_name":"n1","generation":1}`},
	{connection.Disconnected{EventTime: stamp, URL: "nats://127.0.0.1:4222", Err: errors.New("EOF"), Generation: 2},
		`{"level":"warn","msg":"connection.disconnected","component":"connection","url":"nats://127.0.0.1:4222","error":"EOF","generation":2}`},
	{connection.Disconnected{EventTime: stamp, URL: "nats://127.0.0.1:4222", Closing: true, Generation: 2},
		`{"level":"info","msg":"connection.disconnected","component":"connection","url":"nats://127.0.0.1:4222","closing":true,"generation":2}`},
	{connection.Reconnected{EventTime: stamp, URL: "nats://127.0.0.1:4223", ServerID: "NDEF", ServerName: "n2", Generation: 2, Reconnects: 5},
		`{"level":"info","msg":"connection.reconnected","component":"connection","url":"nats://127.0.0.1:4223","server_id":"NDEF","server_name":"n2","generation":2,"reconnects":5}`},
	{connection.ReconnectFailed{EventTime: stamp, Err: errors.New("connection refused"), Attempt: 4, Generation: 1},
		`{"level":"warn","msg":"connection.reconnect_failed","component":"connection","error":"connection refused","attempt":4,"generation":1}`},
	{connection.ReconnectFailed{EventTime: stamp, URL: "nats://127.0.0.1:4222", Err: errors.New("connection refused"), Attempt: 3, Generation: 1},
		`{"level":"debug","msg":"connection.reconnect_failed","component":"connection","url":"nats://127.0.0.1:4222","error":"connection refused","attempt":3,"generation":1}`},
	{connection.Closed{EventTime: stamp, Generation: 3},
		`{"level":"info","msg":"connection.closed","component":"connection","generation":3}`},
	{connection.Closed{EventTime: stamp, URL: "nats://127.0.0.1:4222", Err: errors.New("authorization violation"), Generation: 3},
		`{"level":"error","msg":"connection.closed","component":"connection","url":"nats://127.0.0.1:4222","error":"authorization violation","generation":3}`},
	{connection.DiscoveredServers{EventTime: stamp, URLs: []string{"nats://10.0.0.2:4222", "nats://10.0.0.3:4222"}, Generation: 1},
		`{"level":"info","msg":"connection.discovered_servers","component":"connection","urls":["nats://10.0.0.2:4222","nats://10.0.0.3:4222"],"generation":1}`},
	{connection.DiscoveredServers{EventTime: stamp, Generation: 1},
		`{"level":"info","msg":"connection.discovered_servers","component":"connection","urls":[],"generation":1}`},
	{connection.LameDuck{EventTime: stamp, URL: "nats://127.0.0.1:4222", Generation: 1},
		`{"level":"warn","msg":"connection.lame_duck","component":"connection","url":"nats://127.0.0.1:4222","generation":1}`},
	{connection.SlowConsumer{EventTime: stamp, Subject: "orders.>", Dropped: 12, Generation: 1},
		`{"level":"warn","msg":"connection.slow_consumer","component":"connection","subject":"orders.>","dropped":12,"generation":1}`},
	{connection.SlowConsumer{EventTime: stamp, Subject: "orders.>", Queue: "workers", Dropped: 12, Generation: 1},
		`{"level":"warn","msg":"connection.slow_consumer","component":"connection","subject":"orders.>","queue":"workers","dropped":12,"generation":1}`},
	{connection.AsyncError{EventTime: stamp, Err: errors.New("nats: permissions violation"), Generation: 1},
		`{"level":"error","msg":"connection.async_error","component":"connection","error":"nats: permissions violation","generation":1}`},
	{connection.AsyncError{EventTime: stamp, URL: "nats://127.0.0.1:4222", Subject: "secret.x", Err: errors.New("nats: permissions violation"), Generation: 1},
		`{"level":"error","msg":"connection.async_error","component":"connection","url":"nats://127.0.0.1:4222","subject":"secret.x","error":"nats: permissions violation","generation":1}`},

	// consumer
	{consumer.SlowConsumerStarted{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", QueueSize: 64, Overflow: consumer.DropOldest},
		`{"level":"warn","msg":"consumer.slow_consumer_started","component":"consumer","handler":"invoices","subject":"invoices.*","queue_size":64,"overflow":"drop_oldest"}`},
	{consumer.SlowConsumerStarted{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", QueueSize: 64, Overflow: consumer.Block, Pending: 900},
		`{"level":"warn","msg":"consumer.slow_consumer_started","component":"consumer","handler":"invoices","subject":"invoices.*","queue_size":64,"overflow":"block","pending":900}`},
	{consumer.SlowConsumerEnded{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", Dropped: 7, Rejected: 1, Duration: 2 * time.Second},
		`{"level":"warn","msg":"consumer.slow_consumer_ended","component":"consumer","handler":"invoices","subject":"invoices.*","dropped":7,"rejected":1,"duration":2}`},
	{consumer.HandlerPanicked{EventTime: stamp, Handler: "invoices", Subject: "invoices.new", Err: panicked, Suppressed: 2},
		`{"level":"error","msg":"consumer.handler_panicked","component":"consumer","handler":"invoices","subject":"invoices.new","error":"panic: boom","stack":"goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n","suppressed":2}`},
	{consumer.Subscribed{EventTime: stamp, Handler: "invoices"},
		`{"level":"debug","msg":"consumer.subscribed","component":"consumer","handler":"invoices"}`},
	{consumer.Subscribed{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", Queue: "billing"},
		`{"level":"debug","msg":"consumer.subscribed","component":"consumer","handler":"invoices","subject":"invoices.*","queue":"billing"}`},
	{consumer.Subscribed{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", Stream: "INVOICES", Consumer: "billing"},
		`{"level":"debug","msg":"consumer.subscribed","component":"consumer","handler":"invoices","subject":"invoices.*","stream":"INVOICES","consumer":"billing"}`},
	{consumer.Subscribed{EventTime: stamp, Handler: "invoices", Stream: "INVOICES"},
		`{"level":"debug","msg":"consumer.subscribed","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":""}`},
	{consumer.Subscribed{EventTime: stamp, Handler: "invoices", Consumer: "billing"},
		`{"level":"debug","msg":"consumer.subscribed","component":"consumer","handler":"invoices"}`},
	{consumer.Drained{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", Finished: 10, Took: 300 * time.Millisecond},
		`{"level":"info","msg":"consumer.drained","component":"consumer","handler":"invoices","subject":"invoices.*","finished":10,"abandoned":0,"took":0.3}`},
	{consumer.Drained{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", Finished: 10, Abandoned: 2, Returned: 3, Took: 5 * time.Second},
		`{"level":"warn","msg":"consumer.drained","component":"consumer","handler":"invoices","subject":"invoices.*","finished":10,"abandoned":2,"returned":3,"took":5}`},
	{consumer.ConsumeError{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing", Err: errors.New("nats: no heartbeat received")},
		`{"level":"warn","msg":"consumer.consume_error","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing","error":"nats: no heartbeat received"}`},
	{consumer.ConsumerRecreated{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing"},
		`{"level":"warn","msg":"consumer.consumer_recreated","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing"}`},
	{consumer.DeadLettered{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing", Subject: "invoices.new", DeadLetter: "dead.invoices", Sequence: 42, Deliveries: 5, Err: errors.New("bad total")},
		`{"level":"warn","msg":"consumer.dead_lettered","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing","subject":"invoices.new","dead_letter":"dead.invoices","sequence":42,"deliveries":5,"error":"bad total"}`},
	{consumer.DeadLetterFailed{DeadLettered: consumer.DeadLettered{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing", Subject: "invoices.new", DeadLetter: "dead.invoices", Sequence: 42, Deliveries: 5, Err: errors.New("bad total")}, PublishErr: errors.New("nats: no responders available for request")},
		`{"level":"error","msg":"consumer.dead_letter_failed","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing","subject":"invoices.new","dead_letter":"dead.invoices","sequence":42,"deliveries":5,"error":"bad total","publish_error":"nats: no responders available for request"}`},
	{consumer.DeadLetterFailed{DeadLettered: consumer.DeadLettered{EventTime: stamp, Handler: "invoices", Subject: "invoices.new", DeadLetter: "dead.invoices", Sequence: 43, Deliveries: 5}, Repeated: 2},
		`{"level":"debug","msg":"consumer.dead_letter_failed","component":"consumer","handler":"invoices","subject":"invoices.new","dead_letter":"dead.invoices","sequence":43,"deliveries":5,"repeated":2}`},
	{consumer.MaxDeliveries{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing", Sequence: 42, Deliveries: 5},
		`{"level":"warn","msg":"consumer.max_deliveries","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing","sequence":42,"deliveries":5}`},
	{consumer.AckPendingHigh{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing", AckPending: 950, MaxAckPending: 1000},
		`{"level":"warn","msg":"consumer.ack_pending_high","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing","ack_pending":950,"max_ack_pending":1000}`},
	{consumer.AckPendingNormal{EventTime: stamp, Handler: "invoices", Stream: "INVOICES", Consumer: "billing", AckPending: 600, MaxAckPending: 1000},
		`{"level":"info","msg":"consumer.ack_pending_normal","component":"consumer","handler":"invoices","stream":"INVOICES","consumer":"billing","ack_pending":600,"max_ack_pending":1000}`},
	{consumer.ServiceAnswering{EventTime: stamp, Service: "billing", ID: "svc1", Version: "1.2.0"},
		`{"level":"debug","msg":"consumer.service_answering","component":"consumer","service":"billing","id":"svc1","version":"1.2.0"}`},

	// embedded
	{embedded.Ready{EventTime: stamp, URL: "nats://127.0.0.1:4222", StoreDir: "/var/lib/nats"},
		`{"level":"info","msg":"embedded.ready","component":"embedded","url":"nats://127.0.0.1:4222","store_dir":"/var/lib/nats"}`},
	{embedded.Stopped{EventTime: stamp, URL: "nats://127.0.0.1:4222"},
		`{"level":"info","msg":"embedded.stopped","component":"embedded","url":"nats://127.0.0.1:4222"}`},

	// kv, objectstore
	{kv.BucketRecreated{EventTime: stamp, Bucket: "limits"},
		`{"level":"warn","msg":"kv.bucket_recreated","component":"kv","bucket":"limits"}`},
	{objectstore.StoreRecreated{EventTime: stamp, Store: "reports"},
		`{"level":"warn","msg":"objectstore.store_recreated","component":"objectstore","store":"reports"}`},

	// publisher
	{publisher.PublishFailed{EventTime: stamp, Subject: "orders.new", MsgID: "m-1", Err: errors.New("nats: no response from stream"), Suppressed: 3},
		`{"level":"error","msg":"publisher.publish_failed","component":"publisher","subject":"orders.new","msg_id":"m-1","error":"nats: no response from stream","suppressed":3}`},
	{publisher.SpoolRecovered{EventTime: stamp, Dir: "/var/spool/app", Messages: 12},
		`{"level":"info","msg":"publisher.spool_recovered","component":"publisher","dir":"/var/spool/app","messages":12}`},
	{publisher.SpoolError{EventTime: stamp, Err: errors.New("disk full")},
		`{"level":"error","msg":"publisher.spool_error","component":"publisher","error":"disk full"}`},
	{publisher.SpoolCorrupt{EventTime: stamp, Dir: "/var/spool/app", Segment: 3, Offset: 4096, Err: errors.New("128 bytes not read"), KeptAs: "3.corrupt"},
		`{"level":"error","msg":"publisher.spool_corrupt","component":"publisher","dir":"/var/spool/app","segment":3,"offset":4096,"error":"128 bytes not read","kept_as":"3.corrupt"}`},
	{publisher.Stopped{EventTime: stamp, Undelivered: 2},
		`{"level":"error","msg":"publisher.stopped","component":"publisher","undelivered":2,"spooled":false}`},
	{publisher.Stopped{EventTime: stamp, Undelivered: 2, Spooled: true},
		`{"level":"info","msg":"publisher.stopped","component":"publisher","undelivered":2,"spooled":true}`},

	// tasks
	// fleet
	{fleet.Answering{EventTime: stamp, Name: "orders", ID: "Ej3EaGHqYqUkXCPmLUOC0y"},
		`{"level":"debug","msg":"fleet.answering","component":"fleet","name":"orders","id":"Ej3EaGHqYqUkXCPmLUOC0y"}`},
	{tasks.LeaseAcquired{EventTime: stamp, Queue: "emails", Worker: "w1", Process: "mailer@host-a/41", Capacity: 8},
		`{"level":"info","msg":"tasks.lease_acquired","component":"tasks","queue":"emails","worker":"w1","process":"mailer@host-a/41","capacity":8}`},
	{tasks.LeaseLost{EventTime: stamp, Queue: "emails", Worker: "w1", Process: "mailer@host-a/41", Held: 3},
		`{"level":"error","msg":"tasks.lease_lost","component":"tasks","queue":"emails","worker":"w1","process":"mailer@host-a/41","held":3}`},
	{tasks.WorkerDead{EventTime: stamp, Queue: "emails", Worker: "w2"},
		`{"level":"warn","msg":"tasks.worker_dead","component":"tasks","queue":"emails","worker":"w2"}`},
	{tasks.WorkerDead{EventTime: stamp, Queue: "emails", Worker: "w2", Process: "mailer@host-b/7"},
		`{"level":"warn","msg":"tasks.worker_dead","component":"tasks","queue":"emails","worker":"w2","process":"mailer@host-b/7"}`},
	{tasks.TasksRecovered{EventTime: stamp, Queue: "emails", Worker: "w2", Tasks: 4, Took: 20 * time.Millisecond},
		`{"level":"warn","msg":"tasks.tasks_recovered","component":"tasks","queue":"emails","worker":"w2","tasks":4,"took":0.02}`},
	{tasks.TasksRecovered{EventTime: stamp, Queue: "emails", Worker: "w2", Process: "mailer@host-b/7", Tasks: 4, Took: 20 * time.Millisecond},
		`{"level":"warn","msg":"tasks.tasks_recovered","component":"tasks","queue":"emails","worker":"w2","process":"mailer@host-b/7","tasks":4,"took":0.02}`},
	{tasks.RecovererElected{EventTime: stamp, Queue: "emails", Worker: "w1"},
		`{"level":"info","msg":"tasks.recoverer_elected","component":"tasks","queue":"emails","worker":"w1"}`},
	{tasks.CompletionRejected{EventTime: stamp, Queue: "emails", Task: "t-9", Worker: "w1", Err: errors.New("tasks: fenced")},
		`{"level":"error","msg":"tasks.completion_rejected","component":"tasks","queue":"emails","task":"t-9","worker":"w1","error":"tasks: fenced"}`},
	{tasks.CompletionRejected{EventTime: stamp, Queue: "emails", Task: "t-9", Worker: "w1", Process: "mailer@host-a/41", Err: errors.New("tasks: fenced")},
		`{"level":"error","msg":"tasks.completion_rejected","component":"tasks","queue":"emails","task":"t-9","worker":"w1","process":"mailer@host-a/41","error":"tasks: fenced"}`},
	{tasks.DeadLettered{EventTime: stamp, Queue: "emails", Task: "t-9", Failures: 5, Err: errors.New("smtp refused")},
		`{"level":"warn","msg":"tasks.dead_lettered","component":"tasks","queue":"emails","task":"t-9","failures":5,"error":"smtp refused"}`},
	{tasks.DeadLettered{EventTime: stamp, Queue: "emails", Task: "t-9", DeadLetter: "dead.emails", Failures: 5, Err: errors.New("smtp refused")},
		`{"level":"warn","msg":"tasks.dead_lettered","component":"tasks","queue":"emails","task":"t-9","dead_letter":"dead.emails","failures":5,"error":"smtp refused"}`},
	{tasks.TaskPanicked{EventTime: stamp, Queue: "emails", Task: "t-9", Err: panicked},
		`{"level":"error","msg":"tasks.task_panicked","component":"tasks","queue":"emails","task":"t-9","error":"panic: boom","stack":"goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n"}`},
	{tasks.TaskPanicked{EventTime: stamp, Queue: "emails", Task: "t-9", Err: panicked, Suppressed: 4},
		`{"level":"error","msg":"tasks.task_panicked","component":"tasks","queue":"emails","task":"t-9","error":"panic: boom","stack":"goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n","suppressed":4}`},
	{tasks.QueueError{EventTime: stamp, Queue: "emails", Op: "claim", Err: errors.New("nats: timeout")},
		`{"level":"warn","msg":"tasks.queue_error","component":"tasks","queue":"emails","op":"claim","error":"nats: timeout"}`},
	{tasks.QueueError{EventTime: stamp, Queue: "emails", Op: "pull", Err: errors.New("nats: leadership change"), Repeated: 2},
		`{"level":"debug","msg":"tasks.queue_error","component":"tasks","queue":"emails","op":"pull","error":"nats: leadership change","repeated":2}`},
	{tasks.QueueRecovered{EventTime: stamp, Queue: "emails", Failures: 3, Took: 1500 * time.Millisecond},
		`{"level":"info","msg":"tasks.queue_recovered","component":"tasks","queue":"emails","failures":3,"took":1.5}`},

	// corral
	{corral.OpsListening{EventTime: stamp, Addr: "127.0.0.1:8222"},
		`{"level":"info","msg":"corral.ops_listening","component":"corral","addr":"127.0.0.1:8222"}`},
}

// consoleLines are a few of the events above as zap's console encoder
// writes them, with durations as strings.
var consoleLines = []eventLine{
	{supervisor.ChildFailed{EventTime: stamp, Child: "orders", Err: panicked, Failures: 1, Threshold: 5, Restarting: true, RestartIn: 1500 * time.Millisecond},
		"error\tsupervisor.child_failed\t" + `{"component": "supervisor", "child": "orders", "error": "panic: boom", "stack": "goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n", "failures": 1, "threshold": 5, "restarting": true, "restart_in": "1.5s"}`},
	{connection.DiscoveredServers{EventTime: stamp, URLs: []string{"nats://10.0.0.2:4222", "nats://10.0.0.3:4222"}, Generation: 1},
		"info\tconnection.discovered_servers\t" + `{"component": "connection", "urls": ["nats://10.0.0.2:4222", "nats://10.0.0.3:4222"], "generation": 1}`},
	{consumer.SlowConsumerStarted{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", QueueSize: 64, Overflow: consumer.DropOldest},
		"warn\tconsumer.slow_consumer_started\t" + `{"component": "consumer", "handler": "invoices", "subject": "invoices.*", "queue_size": 64, "overflow": "drop_oldest"}`},
	{consumer.DeadLetterFailed{DeadLettered: consumer.DeadLettered{EventTime: stamp, Handler: "invoices", Subject: "invoices.new", DeadLetter: "dead.invoices", Sequence: 43, Deliveries: 5}, Repeated: 2},
		"debug\tconsumer.dead_letter_failed\t" + `{"component": "consumer", "handler": "invoices", "subject": "invoices.new", "dead_letter": "dead.invoices", "sequence": 43, "deliveries": 5, "repeated": 2}`},
}

// emitLines emits each event through an Emitter whose logger writes with
// enc, and returns the lines written, without their newline.
func emitLines(t *testing.T, enc zapcore.Encoder, events []eventLine) []string {
	t.Helper()
	var buf bytes.Buffer
	e := event.New(supervisor.Events{Logger: zap.New(zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.DebugLevel))})
	for _, l := range events {
		e.Emit(l.ev)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(events) {
		t.Fatalf("%d lines logged, want %d:\n%s", len(lines), len(events), buf.String())
	}
	return lines
}

// Events are logged as these lines, field for field and in this order,
// by the JSON and the console encoders.
func TestEventLines(t *testing.T) {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	for i, got := range emitLines(t, zapcore.NewJSONEncoder(cfg), eventLines) {
		if want := eventLines[i].want; got != want {
			t.Errorf("%T logged\n%s\nwant\n%s", eventLines[i].ev, got, want)
		}
	}
	cfg.EncodeDuration = zapcore.StringDurationEncoder
	for i, got := range emitLines(t, zapcore.NewConsoleEncoder(cfg), consoleLines) {
		if want := consoleLines[i].want; got != want {
			t.Errorf("%T logged\n%s\nwant\n%s", consoleLines[i].ev, got, want)
		}
	}
}
