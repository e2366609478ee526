package tasks

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// A sweep leaves a dead worker's record younger than minAge, and says
// when it comes of age, so that the recoverer looks again then rather
// than a sweep period later: a worker that died holding a task it had
// just claimed, at the time the recoverer itself died, is seen by no
// lease's expiry and would otherwise wait SweepEvery (a minute).
func TestSweepSaysWhenAYoungRecordComesOfAge(t *testing.T) {
	t.Parallel()
	l, queue := newTestLedger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leases, err := kv.Open(l.names.leaseBucket, kv.Config{Bind: true}, connection.NewFixed(l.js.Conn()), codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	const minAge = 2 * time.Second
	r := &recoverer{queue: "q", worker: "w2", leases: leases, ledger: func() *ledger { return l }, minAge: minAge,
		every: time.Hour, events: event.New(supervisor.Events{}), recovered: new(atomic.Uint64)}
	tk := task{id: "job", header: nats.Header{}, data: []byte("x")}
	if _, err := l.claim(ctx, tk, holder{worker: "ghost"}, 0); err != nil { // no lease: a dead worker
		t.Fatal(err)
	}
	claimed := time.Now()
	again, err := r.sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.recovered.Load(); n != 0 {
		t.Fatalf("a record %v old was recovered (minAge %v)", time.Since(claimed), minAge)
	}
	if again.IsZero() || again.Before(claimed.Add(minAge-time.Second)) || again.After(claimed.Add(minAge)) {
		t.Fatalf("again %v, want when the record comes of age, about %v", again, claimed.Add(minAge))
	}
	if wait := sweepWait(r.every, again); wait > minAge {
		t.Fatalf("the next sweep in %v, want by the time the record comes of age (%v)", wait, minAge)
	}
	<-time.After(time.Until(again)) // the record's age, as the recoverer's timer waits for it
	again, err = r.sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.recovered.Load(); n != 1 || !again.IsZero() {
		t.Fatalf("at the record's age: %d recovered, again %v; want 1 and none left", n, again)
	}
	info, err := queue.Info(ctx)
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("the queue after recovery: %v, %v; want the task back", info, err)
	}
}
