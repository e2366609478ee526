package publisher

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
)

var (
	// ErrBufferFull is returned by Publish when the buffer is full and the
	// policy is error.
	ErrBufferFull = errors.New("publisher: buffer full")
	// ErrTooLarge is returned by Publish for a message larger than the
	// server accepts.
	ErrTooLarge = errors.New("publisher: message larger than the server's max payload")
	// ErrSubjectTooLong is returned by Publish for a subject longer than
	// 2000 bytes (subject.MaxLen): with a reply subject beside it, a longer
	// one could pass nats-server's default max_control_line of 4096 bytes,
	// and the server would close the connection.
	ErrSubjectTooLong = errors.New("publisher: subject too long")
	// ErrBadSubject is returned by Publish, and by CheckMsg for a core
	// publish or a request, for a subject (or reply subject) that is not a
	// literal subject: empty, with whitespace, an empty token or a
	// wildcard. The error says which, and matches nats.ErrBadSubject too.
	ErrBadSubject = errors.New("publisher: subject not valid")
	// ErrNilMsg is returned by PublishMsg, CheckMsg and the Client's core
	// publishes and requests for a nil message.
	ErrNilMsg = errors.New("publisher: nil message")
	// ErrBadHeader is returned by Publish for a header name nats.go cannot
	// encode: empty, or with a byte that is not printable ASCII or is one
	// of "()/,:;<=>?@[\]{}.
	ErrBadHeader = errors.New("publisher: header name cannot be sent")
	// ErrStreamFull is the final error of a message the server refused for
	// want of room: a stream with discard new at its max_msgs, max_bytes
	// or max_msgs_per_subject, or the account's or the server's JetStream
	// storage exhausted. The server's *jetstream.APIError is wrapped too.
	ErrStreamFull = errors.New("publisher: no room in the stream")
	// ErrStopped is returned by Publish once the publisher is stopping, and
	// is the error of a message that was not delivered before the stop.
	ErrStopped = errors.New("publisher: stopped")
	// ErrMaybeStored joins ErrStopped for a message that was sent and not
	// confirmed when the publisher stopped: the stream may hold it.
	ErrMaybeStored = errors.New("publisher: sent and not confirmed: the stream may hold it")
	// ErrSpooled joins ErrStopped on the Future of a message that stays in
	// the spool at stop: the next start sends it.
	ErrSpooled = errors.New("publisher: kept in the spool for the next start")
	// ErrGaveUp is the final error of a message whose sends failed
	// max_attempts times; the last send's error is wrapped with it.
	ErrGaveUp = errors.New("publisher: gave up after max_attempts failed sends")
	// ErrSpoolLocked is returned by New and Serve when another publisher
	// holds the spool directory.
	ErrSpoolLocked = errors.New("publisher: spool_dir is in use by another publisher")
	// ErrServing is returned by Serve and Close while the publisher is
	// being served.
	ErrServing = errors.New("publisher: already being served")
	// ErrNotDeclared is returned by PublishSync when the server refused to
	// declare the configured streams (subjects overlapping another
	// stream's, a configuration it rejects) or kept a stream without the
	// message schedules it asks for (stream.ErrSchedulesUnsupported: a
	// server older than 2.12); its error is wrapped with it.
	// A declaration that failed otherwise (a timeout, no JetStream yet, a
	// lost connection) is tried again and PublishSync waits for it. The
	// message stays buffered, and is sent once a declaration succeeds.
	ErrNotDeclared = errors.New("publisher: streams not declared; the message stays buffered")
	// ErrNoStream is the final error of a message whose subject no stream
	// stores.
	ErrNoStream = errors.New("publisher: no stream stores the subject")
)

// both is an error matching first and second with errors.Is that reads
// as first then second, the package's prefix said once: "publisher:
// stopped: kept in the spool for the next start".
type both struct{ first, second error }

func (e both) Error() string {
	return e.first.Error() + ": " + strings.TrimPrefix(e.second.Error(), "publisher: ")
}

func (e both) Unwrap() []error { return []error{e.first, e.second} }

// badSubject is ErrBadSubject with the reason subject.Validate gave, and
// what was checked ("reply: " for a reply subject). It matches
// nats.ErrBadSubject too, what nats.go returns for some of the same.
type badSubject struct {
	what string
	err  error
}

func (e *badSubject) Error() string { return "publisher: " + e.what + e.err.Error() }

func (e *badSubject) Unwrap() []error { return []error{ErrBadSubject, nats.ErrBadSubject, e.err} }
