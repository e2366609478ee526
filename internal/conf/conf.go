package conf

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every validation error of every package.
var ErrInvalid = errors.New("invalid config")

// Problem is one invalid field.
type Problem struct {
	Field  string // yaml path, e.g. "connection.servers[0]"
	Line   int    // in the YAML file, when the problem was found there; else 0
	Reason string
}

// String is the problem as a validation error lists it: its field and
// line, then why.
func (p Problem) String() string {
	where := p.Field
	switch {
	case p.Line > 0 && where == "":
		where = fmt.Sprintf("line %d", p.Line)
	case p.Line > 0:
		where += fmt.Sprintf(" (line %d)", p.Line)
	}
	if where == "" {
		return p.Reason
	}
	return where + ": " + p.Reason
}

// ValidationError lists every problem found in a configuration.
type ValidationError struct {
	Problems []Problem
}

// Error lists every problem, after ErrInvalid's text.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(ErrInvalid.Error())
	for i, p := range e.Problems {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Is lets errors.Is match ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Problems collects validation problems under a field prefix.
type Problems struct {
	prefix string
	list   *[]Problem
}

// NewProblems returns an empty collector whose fields are relative to prefix.
func NewProblems(prefix string) Problems {
	return Problems{prefix: prefix, list: new([]Problem)}
}

// Under returns a collector that records into p with field names below name.
func (p Problems) Under(name string) Problems {
	return Problems{prefix: join(p.prefix, name), list: p.list}
}

// Addf records a problem with field (relative to the prefix).
func (p Problems) Addf(field, format string, args ...any) {
	p.AddLinef(field, 0, format, args...)
}

// AddLinef records a problem with field (relative to the prefix) found on
// line of a YAML file.
func (p Problems) AddLinef(field string, line int, format string, args ...any) {
	*p.list = append(*p.list, Problem{Field: join(p.prefix, field), Line: line, Reason: fmt.Sprintf(format, args...)})
}

// Merge records the problems of err, a *ValidationError from a nested
// Validate, below field. Any other non-nil error is recorded as it is.
func (p Problems) Merge(field string, err error) {
	if err == nil {
		return
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		for _, q := range ve.Problems {
			*p.list = append(*p.list, Problem{Field: join(join(p.prefix, field), q.Field), Line: q.Line, Reason: q.Reason})
		}
		return
	}
	p.Addf(field, "%v", err)
}

// Err returns nil when nothing was recorded, or a *ValidationError.
func (p Problems) Err() error {
	if len(*p.list) == 0 {
		return nil
	}
	return &ValidationError{Problems: append([]Problem(nil), *p.list...)}
}

func join(prefix, name string) string {
	switch {
	case prefix == "":
		return name
	case name == "":
		return prefix
	case strings.HasPrefix(name, "["):
		return prefix + name
	default:
		return prefix + "." + name
	}
}

// Storage records a problem unless s names a JetStream storage: file
// (also the empty default) or memory.
func (p Problems) Storage(s string) {
	switch s {
	case "", "file", "memory":
	default:
		p.Addf("storage", "%q is not one of file, memory", s)
	}
}

// Replicas records a problem unless n is a JetStream replica count: 1 to
// 5, or 0 for the default of 1.
func (p Problems) Replicas(n int) {
	if n < 0 || n > 5 {
		p.Addf("replicas", "must be between 1 and 5, got %d", n)
	}
}
