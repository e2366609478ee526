package stream

import "errors"

// ErrSchedulesUnsupported is returned by Config.Declare for a stream that
// asks for message schedules (AllowMsgSchedules) when the server did not
// keep the setting: message schedules need nats-server 2.12 or later,
// and an older one creates the stream without them, storing a schedule
// as a plain message that never fires.
var ErrSchedulesUnsupported = errors.New("stream: message schedules unsupported: nats-server 2.12 or later is needed")
