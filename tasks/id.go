package tasks

import (
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MaxIDLen is the longest task id a queue takes, in bytes. An id is a
// token of its record's subject, where each byte other than a letter,
// digit, - or _ takes three: at this length the subject stays within a
// subject's limit for the longest queue name.
const MaxIDLen = 512

// checkID returns nil when id can be a task's id as given: 1 to MaxIDLen
// bytes of UTF-8 text without control characters or white space at
// either end (nats.go trims ASCII white space from a header value, so
// the server would store another id; other white space is refused
// alike, for one rule), and not in the queue's own space: an error
// wrapping ErrReservedMsgID when id, as the server stores it, begins with
// ReservedMsgIDPrefix, else one wrapping ErrInvalidTaskID.
func checkID(id string) error {
	if sent := textproto.TrimString(id); strings.HasPrefix(sent, ReservedMsgIDPrefix) {
		return fmt.Errorf("%w: %q", ErrReservedMsgID, head(id, quoted))
	}
	switch {
	case id == "":
		return fmt.Errorf("%w: it is empty", ErrInvalidTaskID)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: %q… is %d bytes, the limit is %d", ErrInvalidTaskID, head(id, quoted), len(id), MaxIDLen)
	}
	if reason := textProblem(id); reason != "" {
		return fmt.Errorf("%w: %q %s", ErrInvalidTaskID, id, reason)
	}
	return nil
}

// quoted is how much of a long text an error quotes, in bytes.
const quoted = 32

// head is the beginning of s, at most n bytes, cut at a character's
// start.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i]
		}
	}
	return s[:n]
}

// taskID is the identity of the task in a copy with headers h stored at
// stream sequence seq, the same on every copy of it: the Corral-Task-Id
// the queue's own copies carry, else the Nats-Msg-Id it was enqueued
// with, else (no Msg-Id, or one Enqueue would refuse) one made from seq
// in the queue's reserved space, which no id Enqueue takes can equal.
func taskID(h nats.Header, seq uint64) string {
	if id := h.Get(TaskIDHeader); id != "" {
		return id
	}
	if name, next := h.Get(scheduleNameHeader), h.Get("Nats-Schedule-Next"); name != "" && next != "" && next != "purge" {
		// A periodic schedule's tick: its time says which, the same for
		// the copies a tick fired twice (a leader change) makes.
		if at, err := time.Parse(time.RFC3339Nano, next); err == nil {
			return tickID(name) + "@" + at.UTC().Format(time.RFC3339Nano)
		}
	}
	if id := h.Get(jetstream.MsgIDHeader); checkID(id) == nil {
		return id
	}
	return ReservedMsgIDPrefix + "seq-" + strconv.FormatUint(seq, 10)
}

// token is id as one token of a subject, one to one: letters, digits, -
// and _ stand for themselves, and every other byte is % and two
// upper-case hex digits. No token is two ids' (% is never literal), and
// an id made only of the literal bytes, as every id before this
// encoding was stored, keeps its subject.
func token(id string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := range len(id) {
		if c := id[i]; literal(c) {
			b.WriteByte(c)
		} else {
			b.Grow(3)
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
	}
	return b.String()
}

// literal reports whether token keeps c as it is.
func literal(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
