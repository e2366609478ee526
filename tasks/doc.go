// Package tasks is a queue of long-running tasks on JetStream: each task
// is claimed by one worker, and one lease per worker process, renewed
// every heartbeat, keeps all of its tasks alive, however many and however
// long. See the README's "Long-running tasks" section for the protocol,
// its failure windows and when a task can run twice.
//
// # Overview
//
// [New] returns a [Worker] that runs a [Handler] on the tasks of one
// queue. A [Task] carries its data and headers, its attempt and failure
// counts, and [Task.Token], a fencing token larger for every claim of it.
// A handler returns nil (the task is done), an error (it is tried again
// after [Config.Backoff], and past [Config.MaxFailures] dead-lettered), or
// [HandBack] (offered again, to another worker first, and no failure).
// A task enqueued on the queue's Subject runs before it is claimed, under
// the queue's ack wait, and is claimed only once it has run
// [Config.ClaimAfter]: a short task costs one acknowledgement, and runs
// again if its worker dies before that is stored, as a JetStream
// handler's message would. Other tasks are claimed before they run.
// Tasks are enqueued by publishing to the queue's subject; a
// corral.Client's Enqueue does it through the buffered publisher, with
// the task's id as its Msg-Id, after [CheckTask] has found that the queue
// can carry the task (its id, its headers, and its size with what the
// queue's writes add to it). [Config.QueueStream] declares the queue's
// stream for a publisher that runs before any worker. The stream allows
// message schedules, so a queue needs nats-server 2.12 or later.
//
// # Lifecycle
//
// Each Serve of a Worker declares the queue's streams, its consumers and
// its lease bucket, takes a lease under a fresh identity, and runs tasks
// until its ctx ends: it then takes no more, lets running tasks finish
// within its restart policy's shutdown timeout, puts back in the queue
// those that did not, and releases the lease. A worker that cannot renew
// its lease in time cancels every task it runs, writes nothing more about
// them, and returns [ErrLeaseLost]; the queue's recoverer puts its tasks
// back once the lease has expired. Every worker stands for election as
// that recoverer.
//
// # Order
//
// A task waits in one of four slots, each a consumer of the queue's
// stream: back (tasks recovered, handed back or retried), high, normal
// (also the queue's Subject) and low. A worker with room takes every task
// waiting in a slot before any in the next, so tasks that come back run
// before the backlog; a slot waits while those before it keep one. Tasks
// a worker took ahead of its slots (Config.Prefetch) start before a task
// it takes after them.
//
// # Configuration
//
// [Config] declares the queue and this process's worker; each field's zero
// value is its default, and Validate reports every problem at once.
// Workers of one queue may run different MaxConcurrency, but must agree
// on LeaseTTL: the lease bucket is made with the first worker's, and a
// worker with another fails to start, naming both. They should agree on
// ClaimWait, KeepCompleted, Storage and Replicas too: each declares the
// queue's streams and consumers with its own, and the last to start
// stands. A DeadLetter subject no stream stores fails the start.
// Process names the worker's process beside its lease, whose identity
// changes with every Serve: in Status, in events, in the records it
// writes (their Corral-Task-Process header) and in its lease's key.
//
// # Errors
//
// [supervisor.ErrInvalidConfig] wraps every configuration problem, [ErrNilHandler] a
// nil handler. [ErrFenced] is a write the server refused because the task
// was no longer the worker's (reported as [CompletionRejected]), and
// [ErrLeaseLost] what Serve returns when its lease was lost. Other
// failures to reach the server are [QueueError] events; the worker keeps
// trying as long as its lease holds, except for a write refused for its
// size, which no retry mends: the task then ends ([DeadLettered]).
// [CheckTask] refuses a task with [ErrInvalidTaskID], [ErrReservedMsgID],
// [ErrReservedHeader] or a [*TooLargeError]. A server older than 2.12
// fails the worker's start with an error wrapping
// stream.ErrSchedulesUnsupported.
//
// # Concurrency
//
// A Handler runs on up to MaxConcurrency goroutines at once. A Worker is
// served once at a time; Status is safe to call at any time. Events go to
// [Config.Events] synchronously, from the goroutine where they happen.
package tasks
