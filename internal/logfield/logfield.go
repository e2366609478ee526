// Package logfield writes Corral's events as zap log lines, the same way
// in every package.
package logfield

import (
	"fmt"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Write logs the event of kind at level: a "component" field, the part of
// kind before its first dot, then the event's fields (supervisor.Fields).
// It is generic so that fields become an interface, which allocates, only
// when the line is written: an event below the logger's level costs
// nothing.
func Write[F zapcore.ObjectMarshaler](log *zap.Logger, level zapcore.Level, kind string, fields F) {
	ce := log.Check(level, kind)
	if ce == nil {
		return
	}
	component, _, _ := strings.Cut(kind, ".")
	ce.Write(zap.String("component", component), zap.Inline(fields))
}

// HookPanicked reports v, recovered from an application's event hook or
// logger while it took the event of kind, as an error line with the stack:
// a hook's bug must not take down the goroutine that emitted the event
// (a child's restart loop, a worker). A logger that panics again is given
// up on.
func HookPanicked(log *zap.Logger, kind string, v any) {
	defer func() { _ = recover() }()
	log.Error("event hook or logger panicked", zap.String("event", kind),
		zap.String("panic", fmt.Sprint(v)), zap.StackSkip("stack", 2))
}

// Text is err's message: empty for nil, and a note in place of the message
// when Error panics (a typed nil whose method dereferences it), so that
// reporting an error never takes the reporter down.
func Text(err error) string {
	if err == nil {
		return ""
	}
	return Safe(err, "Error", err.Error)
}

// Safe returns text(), the result of the method of v so named, or a note
// naming v's type in its place when it panics.
func Safe(v any, method string, text func() string) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("%T (its %s method panicked)", v, method)
		}
	}()
	return text()
}
