package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// Reply is the answer to a request.
type Reply struct {
	Data   []byte
	Header nats.Header
}

// RequestHandler answers requests. A returned error is sent back to the
// caller with the Nats-Service-Error and Nats-Service-Error-Code headers
// that nats.go's micro package uses: a *[ServiceError] keeps its code, any
// other error is code 500 with its message as the description.
type RequestHandler interface {
	HandleRequest(ctx context.Context, m *Msg) (Reply, error)
}

// RequestFunc adapts a function to [RequestHandler].
type RequestFunc func(ctx context.Context, m *Msg) (Reply, error)

// HandleRequest calls f.
func (f RequestFunc) HandleRequest(ctx context.Context, m *Msg) (Reply, error) { return f(ctx, m) }

// Service error headers, as nats.go's micro package writes and reads them.
const (
	// ErrorHeader carries a service error's description.
	ErrorHeader = "Nats-Service-Error"
	// ErrorCodeHeader carries a service error's code.
	ErrorCodeHeader = "Nats-Service-Error-Code"
)

// ServiceError is an error answered to a request with its code, in the
// micro convention: 400 for a bad request, 503 when busy, 504 on timeout,
// 500 otherwise. A 4xx code says the request was at fault: such an answer
// counts in [Counters].ClientErrors, not as a failure; any other code
// counts in Failed.
type ServiceError struct {
	Code        int
	Description string
}

// Error returns the code and the description.
func (e *ServiceError) Error() string {
	return fmt.Sprintf("service error %d: %s", e.Code, e.Description)
}

// Errorf returns a *[ServiceError] with code and a formatted description.
func Errorf(code int, format string, args ...any) *ServiceError {
	return &ServiceError{Code: code, Description: fmt.Sprintf(format, args...)}
}

// ResponseError reads the service error of a reply: nil when the reply
// carries no Nats-Service-Error header.
func ResponseError(reply *nats.Msg) *ServiceError {
	if reply == nil || reply.Header == nil {
		return nil
	}
	desc := reply.Header.Get(ErrorHeader)
	code := reply.Header.Get(ErrorCodeHeader)
	if desc == "" && code == "" {
		return nil
	}
	e := &ServiceError{Description: desc, Code: 500}
	if _, err := fmt.Sscanf(code, "%d", &e.Code); err != nil {
		e.Code = 500
	}
	return e
}

// requestInvoker adapts a RequestHandler: the reply, or the error as a
// service error, goes back to the caller. A 4xx service error is the
// request's fault, answered as the handler meant: it is counted in
// ClientErrors and returned as nil, so the pool counts it processed, not
// failed. The time spent in h and the last service error are kept for
// the handler's micro service.
func requestInvoker(h RequestHandler, stats *counters) invoker {
	return func(ctx context.Context, m *Msg) error {
		start := time.Now()
		reply, err := h.HandleRequest(ctx, m)
		stats.processing.Add(int64(time.Since(start)))
		if err == nil {
			if m.raw.Reply == "" {
				return nil
			}
			return m.raw.RespondMsg(&nats.Msg{Subject: m.raw.Reply, Data: reply.Data, Header: reply.Header})
		}
		se := serviceError(ctx, err)
		last := se.Error()
		stats.lastError.Store(&last)
		respondError(m.raw, se)
		if se.Code >= 400 && se.Code < 500 {
			stats.clientErrors.Add(1)
			return nil
		}
		return err
	}
}

func serviceError(ctx context.Context, err error) *ServiceError {
	var se *ServiceError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return &ServiceError{Code: 504, Description: "timeout: " + err.Error()}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &ServiceError{Code: 503, Description: "handler stopping: " + err.Error()}
	default:
		return &ServiceError{Code: 500, Description: err.Error()}
	}
}

// respondError answers a request with a service error.
func respondError(raw *nats.Msg, e *ServiceError) {
	if raw.Reply == "" {
		return
	}
	reply := nats.NewMsg(raw.Reply)
	reply.Header.Set(ErrorHeader, e.Description)
	reply.Header.Set(ErrorCodeHeader, strconv.Itoa(e.Code))
	_ = raw.RespondMsg(reply)
}
