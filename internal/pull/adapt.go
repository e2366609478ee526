package pull

import (
	"sync/atomic"
	"time"
)

// shrinkAfter is how long the owner must hold all the puller asks for
// before the puller asks for half as much: the handler is behind, and what
// it holds waits in its queue while other instances could run it.
const shrinkAfter = time.Second

// want is how much the puller asks the owner to hold: what Config.Want
// says when it is set; otherwise the capacity, unless Config.Floor is set.
// With a Floor, it starts at Config.Start, doubles (up to the capacity)
// each time the owner ran short because a round trip was too slow for it,
// and halves (down to Start) after the owner held all of it for
// shrinkAfter. A fast handler so holds enough to cover the round trips, a
// slow one holds little beyond its workers, so that other instances get
// the rest.
type want struct {
	n                   atomic.Int64
	fn                  func() int // Config.Want
	floor, start, limit int
	maxBytes            int64

	asked          int64     // the last request's batch
	deliveredAtAsk int64     // the inbox's deliveries when it was sent
	fullFrom       time.Time // held all of n since; zero when not
}

func newWant(cfg Config) *want {
	w := &want{fn: cfg.Want, floor: cfg.Floor, start: cfg.Capacity, limit: cfg.Capacity, maxBytes: cfg.MaxBytes}
	if cfg.Want != nil {
		w.floor = 0 // the owner decides: nothing to adapt
	} else if cfg.Floor > 0 {
		w.start = min(max(cfg.Start, 1), cfg.Capacity)
	}
	w.n.Store(int64(w.start))
	return w
}

// get is how much to hold now.
func (w *want) get() int {
	if w.fn != nil {
		return min(max(w.fn(), 1), w.limit)
	}
	return int(w.n.Load())
}

// grow doubles the want when the owner ran short although the server
// delivers all that is asked: fewer held than its floor (workers wait)
// and at least the last request's worth delivered since it was sent. The
// requests overlap (another goes out once half the room is free), so what
// is still owed says nothing; an empty stream delivers nothing and never
// grows it. Messages of size bytes (as expected) bound it by maxBytes,
// growing or not.
func (w *want) grow(held int, delivered int64, size int64) {
	if w.floor == 0 {
		return
	}
	limit := w.limit
	if w.maxBytes > 0 && size > 0 {
		limit = max(w.floor+1, int(min(int64(limit), w.maxBytes/size)))
	}
	n := w.get()
	if held < w.floor && w.asked > 0 && delivered-w.deliveredAtAsk >= w.asked {
		n = 2 * n
		w.asked = 0 // once per filled request
	}
	w.n.Store(int64(min(n, limit)))
}

// sent records a request of batch messages, made when the inbox had
// delivered delivered.
func (w *want) sent(batch int, delivered int64) { w.asked, w.deliveredAtAsk = int64(batch), delivered }

// replaced forgets the last request: it was on an inbox replaced since.
func (w *want) replaced() { w.asked = 0 }

// shrink halves the want once the owner has held all of it for
// shrinkAfter.
func (w *want) shrink(now time.Time, held int) {
	if w.floor == 0 || held < w.get() {
		w.fullFrom = time.Time{}
		return
	}
	if w.fullFrom.IsZero() {
		w.fullFrom = now
		return
	}
	if now.Sub(w.fullFrom) >= shrinkAfter {
		// Never below Start, nor above a want MaxBytes brought lower.
		w.n.Store(int64(max(w.get()/2, min(w.start, w.get()))))
		w.fullFrom = now
	}
}

// sizes tracks the size messages are expected to have: the largest
// lately, decaying by 1/64 of itself with each smaller message, so that
// a run of large messages counts at once and a stream that turns to
// small ones is believed after a few hundred of them, not after a
// lifetime's average.
type sizes struct{ peak atomic.Int64 }

// add takes a delivered message's size. Inboxes draining side by side
// call it at once: a decay must never overwrite a larger size just seen.
func (s *sizes) add(n int) {
	for {
		p := s.peak.Load()
		if s.peak.CompareAndSwap(p, max(int64(n), p-p/64)) {
			return
		}
	}
}

// expected is the expected size; 0 before the first message.
func (s *sizes) expected() int64 { return s.peak.Load() }
