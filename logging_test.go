package corral_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/natstest"
)

// logLines parses the JSON lines written to out.
func logLines(out *natstest.Buffer) []map[string]any {
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil {
			lines = append(lines, rec)
		}
	}
	return lines
}

// An application that logs with log/slog gets the Client's lines in its
// handler, at their levels and with the events' fields; its handler's
// level filters them.
func TestSlogLoggerReceivesTheLogs(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelWarn} {
		var sink natstest.Buffer
		logger := slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: level}))
		c, err := corral.New(embeddedConfig(t), embeddedServer, corral.WithSlogLogger(logger))
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
		for _, rec := range logLines(&sink) {
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
			t.Fatalf("no connection.connected line among:\n%v", logLines(&sink))
		}
		if connected["level"] != "INFO" || connected["component"] != "connection" || !strings.HasPrefix(connected["url"].(string), "nats://127.0.0.1:") {
			t.Errorf("connection.connected: got %v", connected)
		}
	}
}
