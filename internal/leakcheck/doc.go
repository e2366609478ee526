// Package leakcheck fails a test binary that leaves goroutines running,
// as go.uber.org/goleak does, so that goleak stays out of the library's
// go.mod and so out of the module graph of every module requiring Corral.
//
// # Overview
//
// A package's TestMain hands its tests to [VerifyTestMain]:
//
//	func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }
//
// Once every test has passed, it lists the goroutines (runtime.Stack),
// and fails the binary, printing each one's stack, when any but the
// following is still running after [Patience]:
//
//   - the goroutine doing the check;
//   - the testing package's own: one blocked in a receive in
//     testing.(*T).Run, testing.(*T).Parallel, testing.RunTests,
//     testing.runFuzzTests or testing.runFuzzing;
//   - the standard library's and the runtime's: os/signal's loop
//     (os/signal.signal_recv or os/signal.loop on top), signal.Notify's
//     signal mask thread (runtime.ensureSigM), the execution tracer's
//     reader (runtime.ReadTrace in its stack), and one in a syscall with
//     runtime.goexit in its stack (as cgo callbacks are);
//   - one whose top function is among the names the caller gives, fully
//     qualified as the stack prints them
//     ("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop").
//
// These are goleak's default rules and its IgnoreTopFunction. A test that
// wants the check at a point of its own calls [Find].
//
// # Concurrency
//
// The check reads every goroutine of the process: a test calling Find
// must not run in parallel with others, whose goroutines it would see.
package leakcheck
