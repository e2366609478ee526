package embedded

import (
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/supervisor"
)

// Ready is emitted when the embedded server accepts connections at URL.
type Ready struct {
	supervisor.EventTime
	URL      string
	StoreDir string
}

// Stopped is emitted when the embedded server has shut down.
type Stopped struct {
	supervisor.EventTime
	URL string
}

// Kind returns "embedded.ready".
func (Ready) Kind() string { return "embedded.ready" }

// Kind returns "embedded.stopped".
func (Stopped) Kind() string { return "embedded.stopped" }

// Level returns InfoLevel.
func (Ready) Level() supervisor.Level { return supervisor.InfoLevel }

// Level returns InfoLevel.
func (Stopped) Level() supervisor.Level { return supervisor.InfoLevel }

// MarshalLogObject writes the event's fields for zap.
func (e Ready) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("url", e.URL)
	enc.AddString("store_dir", e.StoreDir)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e Stopped) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("url", e.URL)
	return nil
}
