package middleware_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/middleware"
)

// Log writes one line per message: debug when handled, warn with the
// error when failed, with the handler, the subject, and for JetStream the
// stream, consumer, stream sequence and deliveries; never the payload.
func TestLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.stream("LOGGED", "logged.>")
	core, logs := observer.New(zapcore.DebugLevel)
	e.group.Use(middleware.Log(zap.New(core)), middleware.Log(nil)) // a nil logger logs nothing
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		if string(m.Data()) == "secret-bad" {
			return consumer.Terminal(errors.New("bad order"))
		}
		return nil
	})
	if err := e.group.Handle("js", consumer.Config{JetStream: consumer.JetStream{Stream: "LOGGED"}}, h); err != nil {
		t.Fatal(err)
	}
	if err := e.group.Handle("core", consumer.Config{Subject: "plain"}, h); err != nil {
		t.Fatal(err)
	}
	e.publish("logged.a", "secret-good", "", true)
	e.publish("logged.b", "secret-bad", "", true)
	stop := e.serve(2)
	e.publish("plain", "secret-good", "", false)
	eventually(t, "three lines", func() bool { return logs.Len() == 3 })
	stop()

	type line struct {
		level zapcore.Level
		msg   string
		ctx   map[string]any
	}
	want := map[string]line{
		"logged.a": {zapcore.DebugLevel, "message handled", map[string]any{"component": "consumer", "handler": "js",
			"stream": "LOGGED", "consumer": "js", "stream_seq": uint64(1), "deliveries": uint64(1)}},
		"logged.b": {zapcore.WarnLevel, "message failed", map[string]any{"component": "consumer", "handler": "js",
			"stream": "LOGGED", "consumer": "js", "stream_seq": uint64(2), "deliveries": uint64(1), "error": "terminal: bad order"}},
		"plain": {zapcore.DebugLevel, "message handled", map[string]any{"component": "consumer", "handler": "core"}},
	}
	for _, entry := range logs.All() {
		fields := entry.ContextMap()
		subject, _ := fields["subject"].(string)
		w, ok := want[subject]
		if !ok {
			t.Fatalf("unexpected line %q %v", entry.Message, fields)
		}
		delete(want, subject)
		if _, ok := fields["took"]; !ok || entry.Level != w.level || entry.Message != w.msg {
			t.Errorf("%s: got %v %q %v, want %v %q with took", subject, entry.Level, entry.Message, fields, w.level, w.msg)
		}
		for k, v := range w.ctx {
			if fields[k] != v {
				t.Errorf("%s: %s: got %v (%T), want %v", subject, k, fields[k], fields[k], v)
			}
		}
		for k, v := range fields {
			if s, ok := v.(string); ok && len(s) >= 6 && s[:6] == "secret" {
				t.Errorf("%s: %s logs the payload", subject, k)
			}
		}
		if n := len(fields); n != len(w.ctx)+2 {
			t.Errorf("%s: %d fields %v, want %d", subject, n, fields, len(w.ctx)+2)
		}
	}
}
