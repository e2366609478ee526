package subject

import (
	"errors"
	"fmt"
	"strings"
)

// Validate checks a subject. With wildcards, "*" may stand for one token
// and ">" for the rest (last token only); without, neither may appear. A
// subject longer than MaxLen is refused with an error wrapping ErrTooLong.
func Validate(s string, wildcards bool) error {
	if s == "" {
		return errors.New("empty subject")
	}
	if err := CheckLen("subject", s, MaxLen); err != nil {
		return err
	}
	if i := strings.IndexAny(s, " \t\r\n"); i >= 0 {
		return fmt.Errorf("subject %q has whitespace at %d", s, i)
	}
	// Token by token without splitting: every Publish and request checks
	// its subject, and a split allocates.
	for rest := s; ; {
		tok, after, more := strings.Cut(rest, ".")
		switch {
		case tok == "":
			return fmt.Errorf("subject %q has an empty token", s)
		case tok == ">" || tok == "*":
			if !wildcards {
				return fmt.Errorf("subject %q has a wildcard; a literal subject is needed", s)
			}
			if tok == ">" && more {
				return fmt.Errorf("subject %q has '>' before its last token", s)
			}
		case strings.ContainsAny(tok, "*>") && wildcards:
			return fmt.Errorf("subject %q: wildcards must be whole tokens, got %q", s, tok)
		}
		if !more {
			return nil
		}
		rest = after
	}
}

// ValidateQueue checks a queue group name: one token of no whitespace and
// no wildcard, at most MaxLen bytes (an error wrapping ErrTooLong).
func ValidateQueue(q string) error {
	if q == "" {
		return errors.New("empty queue group")
	}
	if err := CheckLen("queue group", q, MaxLen); err != nil {
		return err
	}
	if strings.ContainsAny(q, " \t\r\n*>") {
		return fmt.Errorf("queue group %q has whitespace or a wildcard", q)
	}
	return nil
}
