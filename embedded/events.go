package embedded

import "github.com/corral-go/corral/supervisor"

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
