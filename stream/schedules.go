package stream

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// checkSchedules returns nil when got, the configuration of the stream
// named name as the server stored it, allows message schedules; else an
// error wrapping ErrSchedulesUnsupported that names the stream and, when
// known, version, the connected server's.
func checkSchedules(name string, got jetstream.StreamConfig, version string) error {
	if got.AllowMsgSchedules {
		return nil
	}
	connected := ""
	if version != "" {
		connected = fmt.Sprintf(" (connected to %s)", version)
	}
	return fmt.Errorf("%w: stream %q was declared without allow_msg_schedules: the server did not keep it%s",
		ErrSchedulesUnsupported, name, connected)
}

// serverVersion is the version of the server js is connected to, or ""
// when js has no connection to ask.
func serverVersion(js jetstream.JetStream) string {
	if nc := js.Conn(); nc != nil {
		return nc.ConnectedServerVersion()
	}
	return ""
}
