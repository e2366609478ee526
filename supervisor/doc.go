// Package supervisor turns restart policies into suture trees, suture's
// events into typed events and log lines, and reports the status of every
// child.
//
// # Overview
//
// A Tree is a root suture supervisor whose children each run under a
// supervisor of their own, because suture counts failures and backs off
// per supervisor: a child that keeps failing pauses only itself. Each child
// is wrapped so that its Policy decides what a return means (Mode), how
// long to wait before the next start (RestartDelay doubling up to
// Backoff, with Jitter), and so that a panic becomes a *PanicError with
// its stack instead of taking the process down.
//
// # Lifecycle
//
// Add children before Serve, in dependency order. Serve runs them until its
// context ends, then stops them one at a time in reverse order of Add,
// each within its ShutdownTimeout; a child that does not stop in time is
// reported by Unstopped and by an error wrapping ErrShutdownIncomplete.
// A tree may be served again after Serve returns.
//
// # Configuration
//
// Policy carries yaml tags. In YAML a policy is a mapping of its fields or
// a bare mode (`restart: transient`). Zero fields inherit from a parent
// policy (Inherit), then from Defaults: permanent, threshold 5, decay 30s,
// restart delay 100ms, backoff 15s, jitter 0.5, shutdown timeout 10s.
//
// # Errors
//
// Invalid policies wrap ErrInvalidConfig. Failures are not logged by the
// children: the tree emits a ChildFailed event for each, and Events logs it
// once.
//
// # Concurrency
//
// Tree and Events are safe for concurrent use. Hooks are called
// synchronously and must not block.
package supervisor
