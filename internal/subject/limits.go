package subject

import "fmt"

// MaxLen is the longest subject or queue group accepted, in bytes. It
// keeps every control line a client sends within nats-server's default
// max_control_line of 4096 bytes: past it the server closes the
// connection, the client sends the same line again on the next one, and
// every other user of the connection fails with it in a loop.
//
// The server measures the line's arguments, after the verb and before
// "\r\n". The longest are a publish, "HPUB <subject> <reply> <hdrlen>
// <total>", and a queue subscription, "SUB <subject> <queue> <sid>": two
// values, three spaces and at most two decimal numbers of 20 digits. With
// both values at MaxLen that is 2*2000 + 3 + 2*20 = 4043 bytes, 53 below
// the limit, so any subject fits beside any reply or queue group that
// also passed.
const MaxLen = 2000

// MaxNameLen is the longest name JetStream accepts for a stream or a
// consumer (nats-server's JSMaxNameLen).
const MaxNameLen = 255

// MaxBucketLen is the longest bucket or object store name accepted: the
// stream behind it is named "KV_<name>" or "OBJ_<name>", and must fit in
// MaxNameLen.
const MaxBucketLen = MaxNameLen - len("OBJ_")

// CheckLen refuses s, described by what ("subject", "key"), when it is
// longer than limit, with an error that wraps ErrTooLong and names both
// lengths. Callers that build a subject around a value (a KV key, an
// object name) check the subject they build.
func CheckLen(what, s string, limit int) error {
	if len(s) <= limit {
		return nil
	}
	return fmt.Errorf("%s %q %w: %d bytes, the limit is %d", what, head(s), ErrTooLong, len(s), limit)
}

// head is the start of s, enough to recognise it in an error without
// printing kilobytes.
func head(s string) string {
	const n = 32
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
