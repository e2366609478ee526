package kv

import (
	"fmt"
	"strings"

	"github.com/corral-go/corral/internal/subject"
)

// The names a bucket has on the wire, as nats.go's jetstream/kv.go spells
// them.
const (
	kvBucketNameTmpl  = "KV_%s"   // KV_<bucket>: the bucket's stream
	kvSubjectsPreTmpl = "$KV.%s." // $KV.<bucket>.: the prefix of its keys' subjects
)

// streamName is the name of bucket's stream.
func streamName(bucket string) string { return fmt.Sprintf(kvBucketNameTmpl, bucket) }

// keyPrefix is what a key's subject in bucket starts with.
func keyPrefix(bucket string) string { return fmt.Sprintf(kvSubjectsPreTmpl, bucket) }

// maxKeyLen is the longest key of any bucket: its subject, with the
// shortest prefix "$KV.<b>.", is at most subject.MaxLen bytes.
const maxKeyLen = subject.MaxLen - len("$KV.b.")

// ValidKey reports whether key can be used: one or more tokens separated
// by '.', each made of letters, digits and - _ = /, with no leading or
// trailing '.' and no empty token, of at most 1994 bytes. Wildcards are
// for watches only. It returns an error wrapping [ErrInvalidKey] for any
// other key. A bucket's methods also refuse a key whose subject,
// "$KV.<bucket>.<key>", is longer than 2000 bytes, with an error that
// also wraps [ErrInvalidKey].
func ValidKey(key string) error { return validKey(key, maxKeyLen) }

// KeyLimit is the longest key of bucket: its subject, "$KV.<bucket>.<key>",
// must fit subject.MaxLen, which leaves room in a control line for the
// JetStream API prefix, stream and consumer names that nats.go puts before
// it in a request subject (a direct get, a watch's consumer) and for the
// request's reply: past that line the server closes the connection.
func KeyLimit(bucket string) int { return subject.MaxLen - len(keyPrefix(bucket)) }

// checkKey is ValidKey, with the limit of bucket's keys.
func checkKey(bucket, key string) error { return validKey(key, KeyLimit(bucket)) }

// validKey refuses a key longer than limit or not made of valid tokens,
// with an error wrapping ErrInvalidKey.
func validKey(key string, limit int) error {
	if err := subject.CheckLen("key", key, limit); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidKey, err)
	}
	if reason := keyProblem(key); reason != "" {
		return fmt.Errorf("%w: %q: %s", ErrInvalidKey, key, reason)
	}
	return nil
}

// keyProblem says what is wrong with key, or "" when nothing is.
func keyProblem(key string) string {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return "tokens separated by single dots, none empty"
	}
	for _, r := range key {
		if !keyRune(r) && r != '.' {
			return fmt.Sprintf("%q is not allowed (letters, digits, - _ = / and .)", r)
		}
	}
	return ""
}

func keyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=/", r)
}
