package consumer

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Handler handles messages. It returns nil when the message was handled;
// an error counts it as failed (core NATS has no redelivery: the error is
// counted and the message is gone). ctx is cancelled when the handler's
// per-message timeout runs out, or when it is being stopped and its grace
// period has run out.
type Handler interface {
	Handle(ctx context.Context, m *Msg) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m *Msg) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m *Msg) error { return f(ctx, m) }

// Reply is the answer to a request.
type Reply struct {
	Data   []byte
	Header nats.Header
}

// RequestHandler answers requests. A returned error is sent back to the
// caller with the Nats-Service-Error and Nats-Service-Error-Code headers
// that nats.go's micro package uses: a *ServiceError keeps its code, any
// other error is code 500 with its message as the description.
type RequestHandler interface {
	HandleRequest(ctx context.Context, m *Msg) (Reply, error)
}

// RequestFunc adapts a function to RequestHandler.
type RequestFunc func(ctx context.Context, m *Msg) (Reply, error)

// HandleRequest calls f.
func (f RequestFunc) HandleRequest(ctx context.Context, m *Msg) (Reply, error) { return f(ctx, m) }

// Service error headers, as nats.go's micro package writes and reads them.
const (
	ErrorHeader     = "Nats-Service-Error"
	ErrorCodeHeader = "Nats-Service-Error-Code"
)

// ServiceError is an error answered to a request with its code, in the
// micro convention: 400 for a bad request, 503 when busy, 504 on timeout,
// 500 otherwise.
type ServiceError struct {
	Code        int
	Description string
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("service error %d: %s", e.Code, e.Description)
}

// Errorf returns a *ServiceError with code and a formatted description.
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
