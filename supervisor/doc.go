// Package supervisor runs trees of children that restart by their own
// policies, reports what happens to them as typed events and log lines,
// and gives the status of every child. The README's "The supervision
// tree" section shows it in use.
//
// # Overview
//
// A [Tree] of several children runs them under a root suture supervisor,
// each on one goroutine that restarts it by its own policy: a child that
// keeps failing pauses only itself. A tree of one child, with no siblings
// to order, runs it on one goroutine without a root. A [Policy] decides
// what a child's return means ([Mode]), how long to wait before it starts
// again, and how long it may take to stop; a panic becomes a
// [*PanicError] with its stack instead of taking the process down.
// [NewGroup] makes a tree whose children are independent and stop at
// once.
//
// Every package's events implement [Event]; a [Hook] receives them, and
// [Events] says where a component's events go (a zap logger, a hook, a
// clock). An event is a plain struct: [EventFields] turns any event into
// the fields of its log line, for zap, for log/slog or as a map.
//
// # Lifecycle
//
// Add children before Serve, in dependency order. Serve runs them until
// its context ends, then stops them one at a time in reverse order of
// Add, each within its shutdown timeout; a child that does not stop in
// time is named by Unstopped and by an error wrapping
// [ErrShutdownIncomplete]. A tree may be served again after Serve returns.
// [Tree.ServeInline] serves a tree of one child on the caller's goroutine,
// for callers that run many such trees and bound their stops themselves
// ([Tree.AwaitStop]).
//
// # Configuration
//
// [Policy] carries yaml tags: a mapping of its fields, or a bare mode
// (`restart: transient`). Zero fields inherit from a parent ([Policy.Inherit]),
// then from [Defaults].
//
// # Errors
//
// Invalid policies wrap [ErrInvalidConfig]. Children do not log their
// failures: the tree emits one [ChildFailed] event for each, counting the
// failures of the episode as whole numbers. A failure that repeats the one
// before it, the child not having started successfully in between (a
// [Starter] says when it has), is logged at debug: a child that fails the
// same way at every restart logs one error, and [ChildRecovered] when it
// starts again. A failure marked [Unavailable] (what the child needs
// cannot answer for now) is a warning instead, and repeats any other so
// marked.
//
// # Concurrency
//
// A Tree is safe for concurrent use. Hooks are called synchronously and
// must not block.
package supervisor
