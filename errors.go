package corral

import (
	"errors"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error, from this
	// package and every subpackage.
	ErrInvalidConfig = conf.ErrInvalid

	// ErrRunning is returned by Run or Serve on a Client that is already
	// running.
	ErrRunning = supervisor.ErrRunning

	// ErrShutdownIncomplete is returned by Run when a child did not stop
	// within its shutdown timeout.
	ErrShutdownIncomplete = supervisor.ErrShutdownIncomplete

	// ErrConfigFile wraps errors reading or parsing a configuration file.
	ErrConfigFile = errors.New("corral: config file")

	// ErrUnknownHandler is returned by Handle for a name that is not in
	// Config.Handlers and was given no settings in code.
	ErrUnknownHandler = errors.New("corral: handler not in the handlers configuration and declared without settings")

	// ErrUnboundHandler is returned by Run when Config.Handlers names a
	// handler that code never bound with Handle or HandleRequest.
	ErrUnboundHandler = errors.New("corral: configured handlers bound to no function")

	// ErrUnknownBucket is returned by KV for a name that is not in
	// Config.KV.
	ErrUnknownBucket = errors.New("corral: bucket not in the kv configuration")

	// ErrUnknownStore is returned by ObjectStore for a name that is not in
	// Config.ObjectStores.
	ErrUnknownStore = errors.New("corral: store not in the object_stores configuration")

	// ErrUnknownQueue is returned by Enqueue for a queue that is not in
	// Config.Tasks.
	ErrUnknownQueue = errors.New("corral: task queue not in the tasks configuration")

	// ErrDuplicateWorker is returned by HandleTasks for a queue that has a
	// worker already.
	ErrDuplicateWorker = errors.New("corral: task queue has a worker already")

	// ErrUnknownLock is returned by Lock for a name that is not in
	// Config.Locks.
	ErrUnknownLock = errors.New("corral: lock not in the locks configuration")
)

// ValidationError lists every problem Validate found; it matches
// ErrInvalidConfig with errors.Is.
type ValidationError = conf.ValidationError
