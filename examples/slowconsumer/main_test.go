package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { corraltest.VerifyTestMain(m) }

// Without an overload, the handler newClient declares takes every message
// under every policy, dropping and rejecting none: the policies act only
// on a full queue. Under Reject it answers each request.
func TestUnloadedHandlerTakesEveryMessage(t *testing.T) {
	const each = 10
	for _, policy := range []consumer.Overflow{consumer.Block, consumer.DropNewest, consumer.DropOldest, consumer.Reject} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := t.Context()
			var episodes atomic.Int64
			c, err := newClient(t.TempDir(), policy, &episodes)
			if err != nil {
				t.Fatal(err)
			}
			kit := corraltest.Wrap(t, c)
			kit.Start(ctx)
			for i := range each {
				data := []byte(strconv.Itoa(i))
				if policy == consumer.Reject {
					if reply := kit.Request(ctx, subject(policy), data); string(reply.Data) != "done" {
						t.Fatalf("request %d answered %q, want done", i, reply.Data)
					}
					continue
				}
				kit.PublishCore(ctx, subject(policy), data)
			}
			for _, o := range kit.WaitOutcomes(ctx, "slow", each) {
				if o.Err != nil {
					t.Errorf("message %s: %v", o.Data, o.Err)
				}
			}
			// Counted once each message is settled, just after its outcome.
			natstest.Eventually(t, corraltest.DefaultTimeout, func() bool { return status(c).Counters.Processed == each },
				func() string { return fmt.Sprintf("counters %+v, want %d processed", status(c).Counters, each) })
			if n := status(c).Counters; n.Dropped+n.Rejected != 0 || episodes.Load() != 0 {
				t.Errorf("counters %+v, slow-consumer episodes %d: want none dropped, no episode", n, episodes.Load())
			}
		})
	}
}

func TestEveryPolicyAccountsForEveryMessage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	re := regexp.MustCompile(`summary: policy=(\w+) published=(\d+) processed=(\d+) dropped=(\d+) slow_consumer_events=(\d+) max_queue=(\d+)`)
	lines := re.FindAllStringSubmatch(out.String(), -1)
	if len(lines) != 4 {
		t.Fatalf("got %d summary lines, want 4:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		n := func(i int) int { v, _ := strconv.Atoi(l[i]); return v }
		if n(3)+n(4) != n(2) || n(5) < 1 || n(6) > queueSize {
			t.Errorf("policy %s: %s", l[1], l[0])
		}
		if l[1] == "block" && n(4) != 0 {
			t.Errorf("block dropped %d", n(4))
		}
		if l[1] != "block" && n(4) == 0 {
			t.Errorf("%s dropped nothing under a 10x overload", l[1])
		}
	}
}
