package corral

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

var (
	// ErrNoResponders is returned by Request, RequestMsg and RequestJSON,
	// at once, when nothing subscribes to the subject. The error names the
	// subject and also matches nats.ErrNoResponders.
	ErrNoResponders = errors.New("corral: no responders")
	// ErrDisconnected is returned by a request made while the connection
	// is not connected when requests.wait_for_connection is false, and by
	// PublishCore when nats.go's reconnect buffer is full or disabled.
	ErrDisconnected = errors.New("corral: not connected")
	// ErrStopping is returned by Handle, HandleRequest and RemoveHandler
	// once Run's ctx has ended, while the Client stops.
	ErrStopping = consumer.ErrStopping
	// ErrInvalidConfig is wrapped by every configuration error, from this
	// package and every subpackage.
	ErrInvalidConfig = supervisor.ErrInvalidConfig

	// ErrRunning is returned by Run or Serve on a Client that is already
	// running.
	ErrRunning = supervisor.ErrRunning

	// ErrNotRunning is the one rule for the calls that need the
	// connection: Conn; Request, RequestMsg and RequestJSON; PublishCore
	// and PublishCoreMsg; and the calls of the buckets, stores and locks
	// that KV, ObjectStore and Lock return. Once Run has returned, and
	// until Run is called again, each fails at once with an error
	// wrapping ErrNotRunning, and one waiting for the connection when Run
	// returns fails with it then. Before the first Run they wait for the
	// connection within their ctx, so that they may be made while Run
	// starts. Publish, PublishSync and Enqueue, which buffer, fail at once
	// with publisher.ErrStopped once Run has returned; Ready waits for Run
	// to run again.
	ErrNotRunning = errors.New("corral: not running")

	// ErrShutdownIncomplete is returned by Run when a child did not stop
	// within its shutdown timeout.
	ErrShutdownIncomplete = supervisor.ErrShutdownIncomplete

	// ErrConfigFile wraps errors reading or parsing a configuration file.
	ErrConfigFile = errors.New("corral: config file")

	// ErrUnknownHandler is returned by Handle for a name that is not in
	// Config.Handlers and was given no settings in code.
	ErrUnknownHandler = errors.New("corral: handler not in the handlers configuration and declared without settings")

	// ErrUnboundHandler is returned by Run and Serve, before any child
	// starts, when Config.Handlers names a handler that code never bound
	// with Handle or HandleRequest. The error names every such handler.
	ErrUnboundHandler = errors.New("corral: configured handlers bound to no function")

	// ErrNotReady is returned by Ready when its ctx ends, or the Client
	// stops, before everything declared is ready. The error names what is
	// not ready yet, or wraps what Run returned.
	ErrNotReady = errors.New("corral: not ready")

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

// unboundError is ErrUnboundHandler with the handlers it names. It also
// matches suture.ErrDoNotRestart, so that an application's tree does not
// restart a Client that only a code or configuration change can mend; its
// text is Corral's alone.
type unboundError struct{ names []string }

func (e *unboundError) Error() string {
	quoted := make([]string, len(e.names))
	for i, n := range e.names {
		quoted[i] = strconv.Quote(n)
	}
	return fmt.Sprintf("%v: %s: bind each with Handle or HandleRequest before Run, or remove it from the handlers configuration",
		ErrUnboundHandler, strings.Join(quoted, ", "))
}

func (e *unboundError) Unwrap() []error { return []error{ErrUnboundHandler, suture.ErrDoNotRestart} }
