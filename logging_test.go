package corral_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral"
)

// lockedBuffer is a log sink that a test reads while the Client writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// An application that logs with log/slog gets the Client's lines in its
// handler, at their levels and with the events' fields; its handler's
// level filters them.
func TestSlogLoggerReceivesTheLogs(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelWarn} {
		var sink lockedBuffer
		logger := slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: level}))
		c, err := corral.New(embeddedConfig(t), corral.WithSlogLogger(logger))
		if err != nil {
			t.Fatal(err)
		}
		stop := running(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := c.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		var connected map[string]any
		for _, rec := range sink.lines() {
			if rec["msg"] == "connection.connected" {
				connected = rec
			}
			if lv, _ := rec["level"].(string); level == slog.LevelWarn && (lv == "INFO" || lv == "DEBUG") {
				t.Errorf("handler at WARN got %s: %v", lv, rec)
			}
		}
		if level == slog.LevelWarn {
			continue
		}
		if connected == nil {
			t.Fatalf("no connection.connected line among:\n%v", sink.lines())
		}
		if connected["level"] != "INFO" || connected["component"] != "connection" || !strings.HasPrefix(connected["url"].(string), "nats://127.0.0.1:") {
			t.Errorf("connection.connected: got %v", connected)
		}
	}
}
