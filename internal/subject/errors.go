package subject

import "errors"

// ErrTooLong is wrapped by every error that refuses a subject, queue group
// or name for its length, so that callers can match it with errors.Is
// (the publisher wraps it in its ErrSubjectTooLong).
var ErrTooLong = errors.New("too long")
