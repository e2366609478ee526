// Package episode counts the failures of an episode, so that an outage
// is reported once, with its recovery, and a new error in it is not
// hidden.
package episode

import (
	"sync"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
)

// Repeats counts the failures of an episode, which a success ends, and
// those in a row that repeat the one before them (by key). Its zero value
// is ready; it is safe for concurrent use.
type Repeats struct {
	mu    sync.Mutex
	last  string
	n     int       // failures in a row with the key last, less one
	total int       // failures since the episode began
	since time.Time // when it began
}

// Fail records a failure whose key is key and returns how many before
// it, in a row, had the same.
func (r *Repeats) Fail(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.total == 0 {
		r.since = time.Now()
	}
	r.total++
	if r.total == 1 || key != r.last {
		r.last, r.n = key, 0
		return 0
	}
	r.n++
	return r.n
}

// FailErr records the failure err and returns how many before it, in a
// row, repeated it: the same text, or, as err, a sign that JetStream
// cannot answer for now (jsapi.Unavailable: a lost node shows as several
// of these, which are one outage).
func (r *Repeats) FailErr(err error) int {
	key := err.Error()
	if jsapi.Unavailable(err) {
		key = "unavailable"
	}
	return r.Fail(key)
}

// End records a success, which ends the episode: the next failure is
// new. It returns how many failures the episode had, and since when.
func (r *Repeats) End() (failures int, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	failures, since = r.total, r.since
	r.last, r.n, r.total, r.since = "", 0, 0, time.Time{}
	return failures, since
}
