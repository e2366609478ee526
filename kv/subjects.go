package kv

import (
	"fmt"
	"strings"
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

// ValidKey reports whether key can be used: one or more tokens separated
// by '.', each made of letters, digits and - _ = /, with no leading or
// trailing '.' and no empty token. Wildcards are for watches only. It
// returns an error wrapping [ErrInvalidKey] for any other key.
func ValidKey(key string) error {
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
