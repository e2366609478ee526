package corral

import (
	"log/slog"

	"github.com/ansel1/zap2slog"
	"go.uber.org/zap"
)

// WithSlogLogger sends the Client's logs to l, for an application that
// logs with log/slog: each line is a slog.Record handed to l's handler,
// at the matching level (zap's debug, info, warn and error; dpanic,
// panic and fatal as error), with the event's fields as attributes. The
// bridge is github.com/ansel1/zap2slog's zapcore.Core over a
// slog.Handler. It replaces WithLogger's logger; the later option wins.
// A nil l logs nothing.
func WithSlogLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.logger = nil
			return
		}
		o.logger = zap.New(zap2slog.NewSlogCore(l.Handler(), &zap2slog.SlogCoreOptions{LoggerNameKey: "logger"}))
	}
}
