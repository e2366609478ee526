package kv

import "encoding/json"

// Codec turns values into bytes and back. Implement it for your own
// encoding (protobuf, msgpack...). Decode may keep data: each message's
// data is its own, never reused.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSON encodes values as JSON; the default.
type JSON[T any] struct{}

// Encode marshals v.
func (JSON[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals data.
func (JSON[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// Raw stores bytes as they are.
type Raw struct{}

// Encode returns v.
func (Raw) Encode(v []byte) ([]byte, error) { return v, nil }

// Decode returns data.
func (Raw) Decode(data []byte) ([]byte, error) { return data, nil }

// String stores strings as their bytes.
type String struct{}

// Encode returns v's bytes.
func (String) Encode(v string) ([]byte, error) { return []byte(v), nil }

// Decode returns data as a string.
func (String) Decode(data []byte) (string, error) { return string(data), nil }
