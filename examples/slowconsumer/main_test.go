package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

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
