// Package corraltest tests code built on Corral against a real
// nats-server, as net/http/httptest tests HTTP handlers: a [Kit] runs one
// corral.Client for one test, on the embedded nats-server in a temporary
// directory, and tears it down when the test ends.
//
// # Overview
//
// [New] builds the Client; the test declares its handlers on Kit.Client
// and calls [Kit.Start]. [Wrap] takes a Client the test built itself,
// such as one an application's constructor returns. Then:
//
//   - [Kit.Publish], [Kit.PublishMsg] and [Kit.PublishJSON] publish
//     through the Client's buffered publisher and wait for the stream's
//     ack; [Kit.PublishCore] publishes on core NATS and flushes;
//     [Kit.Request] returns a reply.
//   - [Kit.WaitOutcome] and [Kit.WaitOutcomes] wait for what a handler
//     made of its next messages ([Outcome]: the message, the error it
//     returned); [Kit.Outcomes] lists what was recorded. A middleware the
//     Kit adds to the Client records each call.
//   - [Kit.StreamMsgs] and [Kit.WaitStreamMsgs] read what a stream
//     stores, [Kit.Bucket] what a KV bucket holds, and [Kit.DeadLetters]
//     and [Kit.WaitDeadLetters] what a JetStream handler dead-lettered.
//
// A test of a handler:
//
//	func TestGreet(t *testing.T) {
//		ctx := t.Context()
//		kit := corraltest.New(t, corral.Config{})
//		err := kit.Client.Handle("greet", consumer.Config{Subject: "greet"}, consumer.HandlerFunc(greet))
//		if err != nil {
//			t.Fatal(err)
//		}
//		kit.Start(ctx)
//		kit.PublishCore(ctx, "greet", []byte("hello"))
//		if o := kit.WaitOutcome(ctx, "greet"); o.Err != nil {
//			t.Fatalf("greet failed: %v", o)
//		}
//	}
//
// # Lifecycle
//
// New and Wrap register a t.Cleanup that stops the Client, waits until
// its Run has returned and fails the test if Run returned an error: when
// the test ends, nothing the Client started runs on, and the temporary
// directory is removed after the embedded server has stopped. A package
// checks that nothing else is left running with [VerifyTestMain] as its
// TestMain, or, with goleak, ignores the top functions
// [ServerTopFunctions] returns: those of the goroutines nats-server may
// leave after it has stopped.
// [Kit.Stop] stops the Client earlier, to look at what it left behind or
// to Start it again.
//
// # Configuration
//
// The Client's configuration is the test's: [TempConfig], which New
// applies, only moves the embedded server's store to t.TempDir(). With
// connection.servers set, the Kit connects to those servers instead.
//
// # Errors
//
// A helper never returns an error: it fails the test with t.Fatalf,
// saying what it expected and what it found (a wait for outcomes lists
// every outcome recorded). To look at an error itself, such as the
// service error of a refused request, call the Client.
//
// # Concurrency
//
// Every call that waits takes a ctx and waits until it ends, or
// [DefaultTimeout] when it has no deadline. Methods that can fail the test
// are called from the test's goroutine, as t.Fatal is; [Kit.Outcomes] is
// safe anywhere. Outcomes are recorded from the Client's workers
// concurrently.
package corraltest
