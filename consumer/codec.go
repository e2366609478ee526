package consumer

import "encoding/json"

// Codec decodes a typed handler's payloads and encodes a typed request
// handler's replies. It has the method set of kv.Codec, so kv's codecs
// (kv.JSON, kv.Bytes, kv.String) and your own serve both; it is declared
// again here because consumer does not import kv.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSON is the codec of values encoded as JSON, the typed handlers'
// default.
type JSON[T any] struct{}

// Encode marshals v.
func (JSON[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals data.
func (JSON[T]) Decode(data []byte) (T, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}
