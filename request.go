package corral

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/publisher"
)

// DefaultRequestTimeout bounds a request whose ctx has no deadline, unless
// requests.timeout says otherwise.
const DefaultRequestTimeout = 5 * time.Second

// RequestsConfig configures the requests the Client makes as a caller
// (Request, RequestMsg, RequestJSON).
type RequestsConfig struct {
	// WaitForConnection says what a request made while the connection is
	// not connected (not yet, reconnecting, or being replaced) does: wait
	// for it within the request's ctx (true), or fail at once with
	// ErrDisconnected (false). Default true.
	WaitForConnection *bool `yaml:"wait_for_connection"`
	// Timeout bounds a request whose ctx has no deadline. Range 0 to
	// 87600h (ten years). Default 5s.
	Timeout time.Duration `yaml:"timeout"`
}

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
func (r RequestsConfig) Validate() error {
	p := conf.NewProblems("")
	if r.Timeout < 0 {
		p.Addf("timeout", "must not be negative, got %v", r.Timeout)
	} else {
		p.Durations(conf.MaxDuration, conf.NamedDuration{Name: "timeout", V: r.Timeout})
	}
	return p.Err()
}

// Request sends data to subject and returns the reply, on the live
// connection: each call asks the connection supervisor for it, so a
// replaced connection is followed. A request whose connection closes
// after it was sent is not sent again (it may have been handled): it
// fails wrapping nats.ErrConnectionClosed. A ctx without a deadline gets
// requests.timeout (default 5s).
//
// The errors are distinct: no subscriber for subject is ErrNoResponders
// (also nats.ErrNoResponders), returned at once; a service error the
// responder wrote (the Nats-Service-Error and Nats-Service-Error-Code
// headers, as Corral's request handlers and nats.go's micro services write
// them) is a *consumer.ServiceError, found with errors.As; no reply in
// time is ctx's error. While the connection is not connected, Request
// waits for it within ctx, or fails at once with ErrDisconnected when
// requests.wait_for_connection is false; once Run has returned it fails
// at once with ErrNotRunning, whatever that setting (see ErrNotRunning).
// Request refuses what Publish
// refuses, at once and with the same errors (see publisher.CheckMsg):
// publisher.ErrSubjectTooLong for a subject over subject's limit, which
// sent would make the server close the connection every handler and
// publish shares; publisher.ErrBadSubject (matching nats.ErrBadSubject
// too) for one that is not a literal subject: empty, with whitespace, an
// empty token or a wildcard; publisher.ErrBadHeader for a header name
// nats.go cannot encode.
//
// Request is safe for concurrent use.
func (c *Client) Request(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	return c.RequestMsg(ctx, &nats.Msg{Subject: subject, Data: data})
}

// RequestMsg is Request for a message with headers, refused as Request
// is; a nil msg fails with publisher.ErrNilMsg. msg.Reply is ignored:
// nats.go sets the reply subject.
func (c *Client) RequestMsg(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	if msg == nil {
		return nil, publisher.ErrNilMsg
	}
	req := &nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data}
	if c.tracer == nil {
		return c.request(ctx, req)
	}
	ctx, span := c.tracer.StartSend(ctx, Send{Op: "request", Name: msg.Subject, Subject: msg.Subject, Size: len(msg.Data)})
	req.Header = span.Header(msg.Header)
	reply, err := c.request(ctx, req)
	span.End(err)
	return reply, err
}

// request sends req, a copy of the caller's message, as RequestMsg does.
func (c *Client) request(ctx context.Context, req *nats.Msg) (*nats.Msg, error) {
	if err := publisher.CheckMsg(req); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.requestTimeout())
		defer cancel()
	}
	nc, gone, err := c.requestConn(ctx, req.Subject)
	for err == nil && nc.IsClosed() {
		// Closed before anything was sent on it: wait for its replacement.
		select {
		case <-gone:
			nc, gone, err = c.requestConn(ctx, req.Subject)
		case <-ctx.Done():
			err = fmt.Errorf("request to %q: waiting for the connection: %w", req.Subject, ctx.Err())
		}
	}
	if err != nil {
		return nil, err
	}
	reply, err := nc.RequestMsgWithContext(ctx, req)
	switch {
	case err == nil:
		if se := consumer.ResponseError(reply); se != nil {
			return nil, fmt.Errorf("request to %q: %w", req.Subject, se)
		}
		return reply, nil
	case errors.Is(err, nats.ErrNoResponders):
		return nil, &noResponders{subject: req.Subject}
	case errors.Is(err, nats.ErrConnectionClosed):
		// Not sent again on the replacement: the request may have been
		// delivered and handled, and a responder must not run it twice
		// unasked. The next request takes the replacement.
		return nil, fmt.Errorf("request to %q: the connection closed before the reply (the request may have been handled): %w", req.Subject, err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, fmt.Errorf("request to %q: no reply: %w", req.Subject, err)
	}
	return nil, fmt.Errorf("request to %q: %w", req.Subject, err)
}

// RequestJSON sends req encoded as JSON to subject and decodes the reply
// into a Resp, as Request does with the same errors; a reply that does
// not decode is an error saying so. Resp comes first so that Req is
// inferred: corral.RequestJSON[Quote](ctx, c, "svc.prices", order).
func RequestJSON[Resp, Req any](ctx context.Context, c *Client, subject string, req Req) (Resp, error) {
	var resp Resp
	data, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("request to %q: encode: %w", subject, err)
	}
	reply, err := c.Request(ctx, subject, data)
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return resp, fmt.Errorf("request to %q: decode the reply: %w", subject, err)
	}
	return resp, nil
}

// requestConn returns the connection to send a request on: it waits for
// a connected one within ctx, or, when requests.wait_for_connection is
// false, fails at once with ErrDisconnected if it is not connected. Once
// Run has returned it fails with ErrNotRunning (see liveConn).
func (c *Client) requestConn(ctx context.Context, subject string) (*nats.Conn, <-chan struct{}, error) {
	if _, err := c.currentPhase(); err != nil {
		return nil, nil, fmt.Errorf("request to %q: %w", subject, err)
	}
	if w := c.cfg.Requests.WaitForConnection; w != nil && !*w {
		state := connection.StateReconnecting
		for range 2 { // once more if it connected between the two reads
			nc, gone, _ := c.conn.Current()
			if nc != nil && nc.IsConnected() {
				return nc, gone, nil
			}
			if nc != nil {
				break // nats.go is reconnecting it
			}
			if state = c.conn.Status().State; state != connection.StateConnected {
				break
			}
		}
		return nil, nil, fmt.Errorf("%w: request to %q: the connection is %s (requests.wait_for_connection: false)",
			ErrDisconnected, subject, state)
	}
	nc, gone, err := c.liveConn(ctx)
	switch {
	case errors.Is(err, ErrNotRunning):
		return nil, nil, fmt.Errorf("request to %q: %w", subject, err)
	case err != nil:
		return nil, nil, fmt.Errorf("request to %q: waiting for the connection: %w", subject, err)
	}
	return nc, gone, nil
}

func (c *Client) requestTimeout() time.Duration {
	if t := c.cfg.Requests.Timeout; t > 0 {
		return t
	}
	return DefaultRequestTimeout
}

// noResponders is ErrNoResponders for a subject; its text is Corral's
// alone, and it matches nats.ErrNoResponders too.
type noResponders struct{ subject string }

func (e *noResponders) Error() string {
	return fmt.Sprintf("%v: nothing subscribes to %q", ErrNoResponders, e.subject)
}

func (e *noResponders) Unwrap() []error { return []error{ErrNoResponders, nats.ErrNoResponders} }
