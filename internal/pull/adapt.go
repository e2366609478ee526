package pull

import (
	"sync/atomic"
	"time"
)

// shrinkAfter is how long the owner must hold all the puller asks for
// before the puller asks for half as much: the handler is behind, and what
// it holds waits in its queue while other instances could run it.
const shrinkAfter = time.Second

// want is how much the puller asks the owner to hold. Fixed at the
// capacity unless Config.Floor is set; then it starts at Config.Start,
// doubles (up to the capacity) each time the owner ran short because a
// round trip was too slow for it, and halves (down to Start) after the
// owner held all of it for shrinkAfter. A fast handler so holds enough to
// cover the round trips, a slow one holds little beyond its workers, so
// that other instances get the rest.
type want struct {
	n                   atomic.Int64
	floor, start, limit int
	maxBytes            int64

	asked          int64     // the last request's batch
	deliveredAtAsk int64     // the inbox's deliveries when it was sent
	fullFrom       time.Time // held all of n since; zero when not
}

func newWant(cfg Config) *want {
	w := &want{floor: cfg.Floor, start: cfg.Capacity, limit: cfg.Capacity, maxBytes: cfg.MaxBytes}
	if cfg.Floor > 0 {
		w.start = min(max(cfg.Start, 1), cfg.Capacity)
	}
	w.n.Store(int64(w.start))
	return w
}

// get is how much to hold now.
func (w *want) get() int { return int(w.n.Load()) }

// grow doubles the want when the owner ran short although the server
// delivers all that is asked: fewer held than its floor (workers wait)
// and at least the last request's worth delivered since it was sent. The
// requests overlap (another goes out once half the room is free), so what
// is still owed says nothing; an empty stream delivers nothing and never
// grows it. Messages of avgSize bytes on average bound it by maxBytes,
// growing or not.
func (w *want) grow(held int, delivered int64, avgSize int64) {
	if w.floor == 0 {
		return
	}
	limit := w.limit
	if w.maxBytes > 0 && avgSize > 0 {
		limit = max(w.floor+1, int(min(int64(limit), w.maxBytes/avgSize)))
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

// sizes is the count and bytes of the messages delivered, for their
// average size.
type sizes struct{ msgs, bytes atomic.Int64 }

func (s *sizes) add(n int) {
	s.bytes.Add(int64(n))
	s.msgs.Add(1)
}

// average is the average size so far; 0 before the first message.
func (s *sizes) average() int64 {
	m := s.msgs.Load()
	if m == 0 {
		return 0
	}
	return s.bytes.Load() / m
}
