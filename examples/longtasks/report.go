package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// report prints the summary: done is how many times each task was
// completed, as the queue's held stream records it (the server's record,
// not the workers' say-so; see completions).
func report(out io.Writer, workers map[string]*worker, done map[string]int, took time.Duration,
	renewals int, held time.Duration) error {
	twice := 0
	for _, n := range done {
		if n > 1 {
			twice++
		}
	}
	var recovered, rejected uint64
	for _, name := range []string{"steady", "doomed", "cut-off"} {
		st := workers[name].status()
		recovered += st.Counters.Recovered
		rejected += st.Counters.Rejected
		fmt.Fprintf(out, "worker %-8s capacity=%-4d completed=%-5d handed_back=%-4d rejected=%-4d unconfirmed=%-4d recovered=%d\n",
			name, st.Capacity, st.Counters.Completed, st.Counters.HandedBack, st.Counters.Rejected,
			st.Counters.Unconfirmed, st.Counters.Recovered)
	}
	// Per-task in-progress acks with the same liveness (one per running
	// task per heartbeat) would have cost this many messages.
	perTask := int(held / queueConfig.Heartbeat)
	lost := count - len(done)
	fmt.Fprintf(out, "took %v; the lost worker's late completions refused: %d\n", took.Round(100*time.Millisecond), rejected)
	fmt.Fprintf(out, "summary: tasks=%d completed=%d lost=%d duplicate_completions=%d recovered=%d keepalive_msgs=%d per_task_keepalive_equivalent=%d\n",
		count, len(done), lost, twice, recovered, renewals, perTask)
	if lost != 0 || twice != 0 {
		return errFailed
	}
	return nil
}

// completions counts the recorded completions of each task: the done
// tombstones in the held stream, one subject per task and worker.
func completions(ctx context.Context, js jetstream.JetStream) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "TASKS_"+queue+"_HELD")
	if err != nil {
		return nil, err
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		return nil, err
	}
	done := map[string]int{}
	for pending := cons.CachedInfo().NumPending; pending > 0; {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			return nil, err
		}
		meta, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		pending = meta.NumPending
		if m.Headers().Get("Corral-Task-State") == "done" {
			done[m.Headers().Get("Corral-Task-Id")]++
		}
	}
	return done, nil
}
