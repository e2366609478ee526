package embedded

import "go.uber.org/zap"

// serverLogger sends nats-server's log lines to zap. Fatal lines are
// logged as errors: the library must not exit the process.
type serverLogger struct{ l *zap.SugaredLogger }

func (g serverLogger) Noticef(f string, v ...any) { g.l.Infof(f, v...) }
func (g serverLogger) Warnf(f string, v ...any)   { g.l.Warnf(f, v...) }
func (g serverLogger) Fatalf(f string, v ...any)  { g.l.Errorf(f, v...) }
func (g serverLogger) Errorf(f string, v ...any)  { g.l.Errorf(f, v...) }
func (g serverLogger) Debugf(f string, v ...any)  { g.l.Debugf(f, v...) }
func (g serverLogger) Tracef(f string, v ...any)  { g.l.Debugf(f, v...) }
