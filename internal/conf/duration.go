package conf

import (
	"encoding/json"
	"time"
)

// JSONDuration is a duration that JSON writes as a Go duration ("1.5s",
// as a configuration writes it) rather than as nanoseconds. It reads
// either.
type JSONDuration time.Duration

// MarshalText writes d as a Go duration.
func (d JSONDuration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalJSON reads a Go duration string, or a number of nanoseconds.
func (d *JSONDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if nerr := json.Unmarshal(b, &n); nerr != nil {
			return err
		}
		*d = JSONDuration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	*d = JSONDuration(v)
	return err
}
