package consumer

import (
	"context"
	"fmt"
	"github.com/corral-go/corral/codec"
	"reflect"
)

// DecodeError is the error of a payload a typed handler could not decode.
type DecodeError struct {
	Subject string // the message's subject
	Type    string // the Go type it was to be decoded into
	Err     error  // the codec's error
}

// Error names the subject, the type and the codec's error.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode payload of %s as %s: %v", e.Subject, e.Type, e.Err)
}

// Unwrap returns the codec's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Typed returns a [Handler] that decodes each payload as JSON into a T
// and calls f with it; f's result settles the message as a Handler's
// does. A payload that cannot be decoded is never retried: f does not run
// and the handler fails with Terminal(*[DecodeError]), so a JetStream
// message goes to the dead-letter subject, if set, and is terminated, and
// a core message is counted as failed. For a nil f it
// returns nil, which Handle refuses with [ErrNilHandler].
func Typed[T any](f func(ctx context.Context, v T, m *Msg) error) Handler {
	return TypedWith(codec.JSON[T]{}, f)
}

// TypedWith is [Typed] with payloads decoded by cd (JSON when nil).
func TypedWith[T any](cd codec.Codec[T], f func(ctx context.Context, v T, m *Msg) error) Handler {
	if f == nil {
		return nil
	}
	if cd == nil {
		cd = codec.JSON[T]{}
	}
	return &typed[T]{codec: cd, f: f, name: typeName[T]()}
}

type typed[T any] struct {
	codec codec.Codec[T]
	f     func(context.Context, T, *Msg) error
	name  string
}

// Handle decodes m's payload and calls f.
func (t *typed[T]) Handle(ctx context.Context, m *Msg) error {
	v, err := t.codec.Decode(m.Data())
	if err != nil {
		return Terminal(&DecodeError{Subject: m.Subject(), Type: t.name, Err: err})
	}
	return t.f(ctx, v, m)
}

// TypedRequest returns a [RequestHandler] that decodes each request as
// JSON into a Req, calls f with it, and answers with f's Resp encoded as
// JSON, or with f's error as a [RequestHandler]'s is. A request that
// cannot be decoded is answered with a 400 service error whose
// description is the *[DecodeError]'s text, and f does not run; a reply
// that cannot be encoded is a 500. For a nil f it returns nil, which
// HandleRequest refuses with [ErrNilHandler].
func TypedRequest[Req, Resp any](f func(ctx context.Context, req Req, m *Msg) (Resp, error)) RequestHandler {
	return TypedRequestWith(codec.JSON[Req]{}, codec.JSON[Resp]{}, f)
}

// TypedRequestWith is [TypedRequest] with requests decoded by req and
// replies encoded by resp (JSON when nil).
func TypedRequestWith[Req, Resp any](req codec.Codec[Req], resp codec.Codec[Resp],
	f func(ctx context.Context, req Req, m *Msg) (Resp, error)) RequestHandler {
	if f == nil {
		return nil
	}
	if req == nil {
		req = codec.JSON[Req]{}
	}
	if resp == nil {
		resp = codec.JSON[Resp]{}
	}
	return &typedRequest[Req, Resp]{req: req, resp: resp, f: f, reqName: typeName[Req](), respName: typeName[Resp]()}
}

type typedRequest[Req, Resp any] struct {
	req               codec.Codec[Req]
	resp              codec.Codec[Resp]
	f                 func(context.Context, Req, *Msg) (Resp, error)
	reqName, respName string
}

// HandleRequest decodes the request, calls f and encodes its reply.
func (t *typedRequest[Req, Resp]) HandleRequest(ctx context.Context, m *Msg) (Reply, error) {
	v, err := t.req.Decode(m.Data())
	if err != nil {
		de := &DecodeError{Subject: m.Subject(), Type: t.reqName, Err: err}
		return Reply{}, &ServiceError{Code: 400, Description: de.Error()}
	}
	out, err := t.f(ctx, v, m)
	if err != nil {
		return Reply{}, err
	}
	data, err := t.resp.Encode(out)
	if err != nil {
		return Reply{}, fmt.Errorf("encode reply as %s: %w", t.respName, err)
	}
	return Reply{Data: data}, nil
}

// typeName names T, interfaces included.
func typeName[T any]() string { return reflect.TypeFor[T]().String() }
