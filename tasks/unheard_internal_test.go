package tasks

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
)

// A no-responders from a fresh consumer is asked again, counted; any
// other error, or a ctx that has ended, is not.
func TestUnheardAsksAgainOnlyForNoResponders(t *testing.T) {
	var u unheard
	if u.again(context.Background(), errors.New("boom")) {
		t.Fatal("asked again after another error")
	}
	if !u.again(context.Background(), nats.ErrNoResponders) || u != 1 {
		t.Fatalf("no responders: not asked again, or not counted (%d)", u)
	}
	u.heard()
	if u != 0 {
		t.Fatalf("heard: count %d, want 0", u)
	}
	u = maxUnheard
	if u.again(context.Background(), nats.ErrNoResponders) {
		t.Fatal("asked again past maxUnheard")
	}
	u = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if u.again(ctx, nats.ErrNoResponders) {
		t.Fatal("asked again once ctx ended")
	}
}
