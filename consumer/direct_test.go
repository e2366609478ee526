package consumer_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// A handler of one worker that blocks when full runs on its
// subscription's goroutine, with no queue of its own between them; what
// it shows is what a queue in front of it would: messages in order, one
// at a time; the first queue_size waiting as its queue depth, the rest as
// pending; a slow-consumer episode once more than queue_size wait, ended
// once they are handled; nothing dropped.
func TestOneBlockingWorkerShowsAQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const queueSize, n = 8, 30
	gate := make(chan struct{})
	var mu sync.Mutex
	var seen []uint64
	inside := 0
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		mu.Lock()
		inside++
		if inside > 1 {
			mu.Unlock()
			t.Error("two messages handled at once")
			return nil
		}
		mu.Unlock()
		<-gate
		mu.Lock()
		inside--
		seen = append(seen, binary.BigEndian.Uint64(m.Data()))
		mu.Unlock()
		return nil
	})
	cfg := consumer.Config{Subject: "direct", Workers: 1, QueueSize: queueSize}
	if err := e.sup.Handle("direct", cfg, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	data := make([]byte, 8)
	for i := range uint64(n) {
		binary.BigEndian.PutUint64(data, i)
		if err := e.pub.Publish("direct", data); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.pub.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "one in flight, a queue's worth queued, the rest pending", func() bool {
		c := e.status("direct").Counters
		return c.InFlight == 1 && c.QueueDepth == queueSize && c.Pending == n-1-queueSize
	})
	// A fast handler is checked once in eight messages: by the eighth
	// handled, more than the queue holds wait.
	for range 8 {
		gate <- struct{}{}
	}
	started, _ := natstest.WaitFor[consumer.SlowConsumerStarted](t, e.rec, 0, 10*time.Second, nil)
	if started.QueueSize != queueSize || started.Overflow != consumer.Block {
		t.Fatalf("episode: got %+v", started)
	}
	close(gate)
	eventually(t, "all handled", func() bool {
		c := e.status("direct").Counters
		return c.Processed == n && c.InFlight == 0 && c.QueueDepth == 0 && c.Pending == 0
	})
	ended, _ := natstest.WaitFor[consumer.SlowConsumerEnded](t, e.rec, 0, 10*time.Second, nil)
	if ended.Dropped != 0 {
		t.Fatalf("episode dropped %d", ended.Dropped)
	}
	mu.Lock()
	for i, seq := range seen {
		if seq != uint64(i) {
			t.Fatalf("message %d handled at %d: out of order", seq, i)
		}
	}
	mu.Unlock()
	if c := e.status("direct").Counters; c.Received != n || c.Dropped != 0 {
		t.Fatalf("counters: got %+v", c)
	}
	cleanStop(t, stop)
}
