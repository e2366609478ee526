package publisher

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/subject"
)

// CheckMsg refuses what nats.go or the server would refuse on every send
// of msg, so that it is never retried and never reaches the connection: a
// subject (or a reply subject, if msg has one) too long, with an error
// matching [ErrSubjectTooLong], or not a literal subject (empty, with
// whitespace, an empty token or a wildcard), with [ErrBadSubject]; a
// header name nats.go cannot encode, with [ErrBadHeader]; a nil msg, with
// [ErrNilMsg]. A subject longer than the server's control line would make
// it close the connection shared by every other user.
// The payload's size is checked apart, by [CheckPayload]. CheckMsg is
// what Publish checks, exported so that core publishes and requests on
// the same connection refuse the same messages with the same errors.
func CheckMsg(msg *nats.Msg) error {
	if msg == nil {
		return ErrNilMsg
	}
	if err := checkMsg(msg); err != nil {
		return err
	}
	if msg.Reply == "" {
		return nil
	}
	if err := checkSubjectLen(msg.Reply); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	if err := subject.Validate(msg.Reply, false); err != nil {
		return &badSubject{what: "reply: ", err: err}
	}
	return nil
}

// checkMsg is [CheckMsg] for the subject and headers of a message the
// buffer holds (it has no reply subject).
func checkMsg(m *nats.Msg) error {
	if err := checkSubjectLen(m.Subject); err != nil {
		return err
	}
	if err := subject.Validate(m.Subject, false); err != nil {
		return &badSubject{err: err}
	}
	for name := range m.Header {
		if !validHeaderName(name) {
			return fmt.Errorf("%w: %q", ErrBadHeader, name)
		}
	}
	return nil
}

// validHeaderName reports whether nats.go encodes name (its
// isHeaderKeyValid, ADR-4): not empty, printable ASCII other than
// "()/,:;<=>?@[\]{}. A value is always encoded:
// nats.go sends its CR and LF as spaces.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := range len(name) {
		if c := name[i]; c < 33 || c > 126 || strings.IndexByte(`"()/,:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// maxSubjectLen is the longest subject Publish accepts: subject.MaxLen,
// which keeps every control line ("HPUB subject reply sizes") within
// nats-server's default max_control_line of 4 KiB, past which the server
// closes the connection. The spool records a subject's length in 16 bits.
const maxSubjectLen = subject.MaxLen

// checkSubjectLen refuses a subject longer than maxSubjectLen with an
// error matching ErrSubjectTooLong and subject.ErrTooLong.
func checkSubjectLen(s string) error {
	if err := subject.CheckLen("subject", s, maxSubjectLen); err != nil {
		return subjectTooLong{err}
	}
	return nil
}

// subjectTooLong is ErrSubjectTooLong with the lengths subject.CheckLen
// says: publisher: subject "aaa..." too long: 4097 bytes, the limit is 2000.
type subjectTooLong struct{ err error }

func (e subjectTooLong) Error() string   { return "publisher: " + e.err.Error() }
func (e subjectTooLong) Unwrap() []error { return []error{ErrSubjectTooLong, e.err} }

// copyHeader copies h deeply, with room for the Msg-Id.
func copyHeader(h nats.Header) nats.Header {
	c := make(nats.Header, len(h)+1)
	for k, v := range h {
		c[k] = append([]string(nil), v...)
	}
	return c
}
