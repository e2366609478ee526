// Package codec turns typed values into message and bucket payloads and
// back: a typed handler's messages and replies (consumer.Typed), a typed
// bucket's values (kv.Open, kv.Typed).
package codec

import "encoding/json"

// Codec turns values of T into bytes and back. Implement it for your own
// encoding (protobuf, msgpack...). Decode may keep data: each message's
// data is its own, never reused. A Codec is used concurrently.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSON is the codec of values encoded as JSON, the default of typed
// handlers.
type JSON[T any] struct{}

// Encode marshals v.
func (JSON[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals data.
func (JSON[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// Bytes is the codec of byte values, stored as they are.
type Bytes struct{}

// Encode returns v.
func (Bytes) Encode(v []byte) ([]byte, error) { return v, nil }

// Decode returns data.
func (Bytes) Decode(data []byte) ([]byte, error) { return data, nil }

// String is the codec of string values, stored as their bytes.
type String struct{}

// Encode returns v's bytes.
func (String) Encode(v string) ([]byte, error) { return []byte(v), nil }

// Decode returns data as a string.
func (String) Decode(data []byte) (string, error) { return string(data), nil }
