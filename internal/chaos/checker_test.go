package chaos_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/chaos"
	"github.com/corral-go/corral/internal/natstest"
)

// TestCheckerFindsEveryViolation feeds the checker a ledger and a stream
// that break each promise once: it must count and name each.
func TestCheckerFindsEveryViolation(t *testing.T) {
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"chaos.orders.>"}}); err != nil {
		t.Fatal(err)
	}
	// Stored: o-1, o-2 twice (under two Msg-Ids), o-5 (never published).
	for _, m := range [][2]string{{"o-1", "o-1"}, {"o-2", "o-2"}, {"o-2", "o-2-again"}, {"o-5", "o-5"}} {
		if _, err := js.Publish(ctx, "chaos.orders.1", []byte(m[0]), jetstream.WithMsgID(m[1])); err != nil {
			t.Fatal(err)
		}
	}
	l := chaos.NewLedger()
	now := time.Now()
	for i, id := range []string{"o-1", "o-2", "o-3", "o-4"} {
		l.Attempt(id)
		l.Ack(id, uint64(i+1), now)
	}
	for _, id := range []string{"o-1", "o-2", "o-3", "o-6"} { // o-3 acked, not stored; o-6 never published
		l.Run(id, true, now)
	}
	l.Put("o-1", 1)
	l.Put("o-2", 2) // never watched
	l.Watched("o-1", 1)
	l.Watched("o-1", 1) // twice, and out of order
	l.Reply(false, "asked ping-1, answered pong")
	l.Finding("a header was accepted")

	r, err := chaos.Check(ctx, js, l, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost != 2 || r.Unexpected != 2 || r.Duplicates != 1 {
		t.Errorf("lost=%d unexpected=%d duplicates=%d, want 2 (o-3, o-4), 2 (o-5, o-6), 1 (o-2)", r.Lost, r.Unexpected, r.Duplicates)
	}
	if !r.Failed() {
		t.Error("Failed() = false")
	}
	for _, want := range []string{
		"o-3 acknowledged, then lost", "o-4 acknowledged, then lost", "stored o-5, never published",
		"processed o-6, never published", "o-2 stored 2 times", "o-5 stored, never processed",
		"result o-2 revision 2 never seen", "revision 1 seen 2 times", "watcher out of order",
		"request: asked ping-1", "a header was accepted",
	} {
		if !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem says %q; problems:\n%s", want, strings.Join(r.Problems, "\n"))
		}
	}
}
