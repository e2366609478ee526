package subject

import (
	"errors"
	"fmt"
	"strings"
)

// Validate checks a subject. With wildcards, "*" may stand for one token
// and ">" for the rest (last token only); without, neither may appear.
func Validate(s string, wildcards bool) error {
	if s == "" {
		return errors.New("empty subject")
	}
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		return fmt.Errorf("subject %q has whitespace at %d", s, i)
	}
	tokens := strings.Split(s, ".")
	for i, tok := range tokens {
		switch {
		case tok == "":
			return fmt.Errorf("subject %q has an empty token", s)
		case tok == ">" || tok == "*":
			if !wildcards {
				return fmt.Errorf("subject %q has a wildcard; a literal subject is needed", s)
			}
			if tok == ">" && i != len(tokens)-1 {
				return fmt.Errorf("subject %q has '>' before its last token", s)
			}
		case strings.ContainsAny(tok, "*>") && wildcards:
			return fmt.Errorf("subject %q: wildcards must be whole tokens, got %q", s, tok)
		}
	}
	return nil
}

// ValidateQueue checks a queue group name: one token of no whitespace and
// no wildcard.
func ValidateQueue(q string) error {
	if q == "" {
		return errors.New("empty queue group")
	}
	if strings.ContainsAny(q, " \t\r\n*>") {
		return fmt.Errorf("queue group %q has whitespace or a wildcard", q)
	}
	return nil
}

// ValidBucket checks the name of a KV bucket, a lock's bucket or an object
// store: letters, digits, - and _ only, as JetStream requires of the
// stream behind it. It is the one rule for all of them; callers say what
// the name names ("bucket", "store") before its error.
func ValidBucket(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("name %q: letters, digits, - and _ only", name)
		}
	}
	return nil
}
