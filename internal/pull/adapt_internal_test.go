package pull

import (
	"testing"
	"time"
)

func TestWantIsTheCapacityWithoutAFloor(t *testing.T) {
	w := newWant(Config{Capacity: 516})
	w.sent(258, 0)
	w.grow(0, 258, 128)
	w.shrink(time.Now(), 516)
	w.shrink(time.Now().Add(time.Hour), 516)
	if w.get() != 516 {
		t.Fatalf("want %d, the capacity 516", w.get())
	}
}

// An owner that says what it wants (Config.Want) gets it, within one and
// the capacity, whatever Floor would adapt.
func TestWantIsWhatTheOwnerSays(t *testing.T) {
	says := 100
	w := newWant(Config{Capacity: 320, Floor: 64, Start: 64, Want: func() int { return says }})
	for _, tt := range []struct{ says, want int }{{100, 100}, {0, 1}, {-5, 1}, {1000, 320}, {64, 64}} {
		says = tt.says
		w.sent(w.get(), 0)
		w.grow(0, int64(w.get()), 128)
		w.shrink(time.Now(), 320)
		w.shrink(time.Now().Add(time.Hour), 320)
		if got := w.get(); got != tt.want {
			t.Fatalf("the owner says %d: want %d, got %d", tt.says, tt.want, got)
		}
	}
}

// The want doubles once per request the server filled while the workers
// ran short, up to the capacity.
func TestWantGrowsWhenFilledRequestsLeaveWorkersShort(t *testing.T) {
	w := newWant(Config{Capacity: 516, Floor: 4, Start: 68})
	var delivered int64
	for _, wantAfter := range []int{136, 272, 516, 516} {
		batch := w.get() / 2
		w.sent(batch, delivered)
		delivered += int64(batch)
		w.grow(0, delivered, 128)
		w.grow(0, delivered, 128) // the same request counts once
		if w.get() != wantAfter {
			t.Fatalf("after a filled request: %d, want %d", w.get(), wantAfter)
		}
	}
}

func TestWantHoldsWhenTheStreamRanOutOrTheWorkersAreBusy(t *testing.T) {
	for _, tt := range []struct {
		name    string
		held    int
		deliver int64
	}{
		{"nothing delivered (an empty stream)", 0, 0},
		{"request expired part delivered", 0, 10},
		{"workers busy", 4, 34},
	} {
		w := newWant(Config{Capacity: 516, Floor: 4, Start: 68})
		w.sent(34, 0)
		w.grow(tt.held, tt.deliver, 128)
		if w.get() != 68 {
			t.Errorf("%s: grew to %d", tt.name, w.get())
		}
	}
	w := newWant(Config{Capacity: 516, Floor: 4, Start: 68})
	w.sent(34, 0)
	w.replaced()
	w.grow(0, 34, 128)
	if w.get() != 68 {
		t.Errorf("a request on a replaced inbox: grew to %d", w.get())
	}
}

// Held at its want for shrinkAfter, the want halves, never below Start.
func TestWantShrinksWhileFull(t *testing.T) {
	w := newWant(Config{Capacity: 516, Floor: 4, Start: 68})
	w.n.Store(516)
	t0 := time.Now()
	w.shrink(t0, 516)
	w.shrink(t0.Add(shrinkAfter/2), 516)
	if w.get() != 516 {
		t.Fatalf("shrank within %v: %d", shrinkAfter, w.get())
	}
	w.shrink(t0.Add(shrinkAfter), 516)
	if w.get() != 258 {
		t.Fatalf("after %v full: %d, want 258", shrinkAfter, w.get())
	}
	w.shrink(t0.Add(shrinkAfter+time.Millisecond), 100) // not full: the clock starts again
	w.shrink(t0.Add(2*shrinkAfter), 258)
	w.shrink(t0.Add(2*shrinkAfter+shrinkAfter/2), 258)
	if w.get() != 258 {
		t.Fatalf("shrank though it was not full throughout: %d", w.get())
	}
	for i := range 10 {
		w.shrink(t0.Add(time.Duration(3+i)*shrinkAfter), w.get())
	}
	if w.get() != 68 {
		t.Fatalf("after a long time full: %d, want Start 68", w.get())
	}
}

// The want stays below what holds about MaxBytes at the expected size,
// growing or not, and comes down to it when messages grow.
func TestWantHoldsAboutMaxBytes(t *testing.T) {
	w := newWant(Config{Capacity: 2052, Floor: 4, Start: 68, MaxBytes: 64 << 20})
	var delivered int64
	for range 10 {
		batch := w.get() / 2
		w.sent(batch, delivered)
		delivered += int64(batch)
		w.grow(0, delivered, 64<<10)
	}
	if w.get() != 1024 {
		t.Fatalf("64 KiB messages: grew to %d, want 1024 (64 MiB)", w.get())
	}
	w.grow(4, delivered, 1<<20)
	if w.get() != 64 {
		t.Fatalf("1 MiB messages: %d, want 64", w.get())
	}
	w.grow(4, delivered, 16<<20)
	if w.get() != 5 {
		t.Fatalf("16 MiB messages: %d, want 5 (Floor+1)", w.get())
	}
	for i := range 5 {
		w.shrink(time.Now().Add(time.Duration(i)*shrinkAfter), w.get())
	}
	if w.get() != 5 {
		t.Fatalf("shrinking raised it to %d", w.get())
	}
}
