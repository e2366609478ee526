package subject

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// ValidBucket checks the name of a KV bucket, a lock's bucket or an object
// store: letters, digits, - and _ only, as JetStream requires of the
// stream behind it, and at most MaxBucketLen bytes so that the stream's
// name fits (an error wrapping ErrTooLong). It is the one rule for all of
// them; callers say what the name names ("bucket", "store") before its
// error.
func ValidBucket(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if err := CheckLen("name", name, MaxBucketLen); err != nil {
		return err
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("name %q: letters, digits, - and _ only", name)
		}
	}
	return nil
}

// ValidName checks a name that becomes a stream's, a consumer's or a
// supervised service's: not empty, no whitespace (any Unicode space, as
// stream.ValidName), '.', '*', '>', '/' or '\', which the server or a
// subject built from it would misread, and at most MaxNameLen bytes (an
// error wrapping ErrTooLong).
func ValidName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if err := CheckLen("name", name, MaxNameLen); err != nil {
		return err
	}
	if strings.ContainsAny(name, ".*>/\\") || strings.ContainsFunc(name, unicode.IsSpace) {
		return fmt.Errorf("name %q: no whitespace, '.', '*', '>', '/' or '\\'", name)
	}
	return nil
}
