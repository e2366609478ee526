package middleware

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/consumer"
)

// Log returns middleware that logs each message once its handler (and
// the middleware inside Log) has returned: at debug when it returned nil,
// at warn with the error otherwise. Each line has the handler, the
// subject and how long it took, and for a JetStream message its stream,
// consumer, stream sequence and delivery count. Neither payloads nor
// headers are logged: they may carry secrets. A panic is not logged here:
// the pool recovers it outside all middleware and reports it as a
// consumer.HandlerPanicked event. A nil logger logs nothing.
func Log(logger *zap.Logger) consumer.Middleware {
	if logger == nil {
		logger = zap.NewNop()
	}
	logger = logger.With(zap.String("component", "consumer"))
	return func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			start := time.Now()
			err := next.Handle(ctx, m)
			level, msg := zapcore.DebugLevel, "message handled"
			if err != nil {
				level, msg = zapcore.WarnLevel, "message failed"
			}
			if ce := logger.Check(level, msg); ce != nil {
				ce.Write(fields(m, time.Since(start), err)...)
			}
			return err
		})
	}
}

// fields describes m for a log line.
func fields(m *consumer.Msg, took time.Duration, err error) []zap.Field {
	fs := make([]zap.Field, 0, 8)
	fs = append(fs, zap.String("handler", m.Handler()), zap.String("subject", m.Subject()), zap.Duration("took", took))
	if md := m.Metadata(); md != nil {
		fs = append(fs, zap.String("stream", md.Stream), zap.String("consumer", md.Consumer),
			zap.Uint64("stream_seq", md.Sequence.Stream), zap.Uint64("deliveries", md.NumDelivered))
	}
	if err != nil {
		fs = append(fs, zap.Error(err))
	}
	return fs
}
