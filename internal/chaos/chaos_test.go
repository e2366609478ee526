package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/chaos"
	"github.com/corral-go/corral/internal/natstest"
)

// TestChaos runs the workload through every fault, on one server, on a
// three-node cluster and from a leaf node to its hub, and checks the ledger against what the servers
// hold at the end. CORRAL_CHAOS_DURATION makes it a soak.
func TestChaos(t *testing.T) {
	var soak time.Duration
	if v := os.Getenv("CORRAL_CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("CORRAL_CHAOS_DURATION=%q: %v", v, err)
		}
		soak = d
	}
	var total chaos.Result
	t.Run("server", func(t *testing.T) {
		s := chaos.NewServer(t)
		total.Add(campaign(t, s, soak/2, true))
	})
	t.Run("cluster", func(t *testing.T) {
		c := chaos.NewCluster(t)
		// In-process servers start and stop goroutines of their own as
		// streams move: only the server topology counts goroutines.
		total.Add(campaign(t, c, soak/4, false))
	})
	t.Run("leaf", func(t *testing.T) {
		total.Add(campaign(t, chaos.NewLeaf(t), soak/4, false))
	})
	fmt.Println("chaos:", total.Detail())
	fmt.Println(total.Summary())
	for _, p := range total.Problems {
		t.Error(p)
	}
	if total.Failed() && len(total.Problems) == 0 {
		t.Error("the campaign failed without a named problem")
	}
}

// campaign runs the workload on topo through its faults for d (each at
// least once) and returns what the checker found.
func campaign(t *testing.T, topo chaos.Topology, d time.Duration, countGoroutines bool) chaos.Result {
	base := runtime.NumGoroutine()
	nc, err := nats.Connect(topo.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l := chaos.NewLedger()
	w := chaos.NewWorkload(topo, l)
	if err := w.Start(200); err != nil {
		t.Fatal(err)
	}
	err = w.AwaitProgress(time.Minute)
	var recs []chaos.Recovery
	if err == nil {
		recs, err = w.Schedule(topo.Faults(w, nc, js), d, time.Second, t.Logf)
	}
	if err != nil {
		_ = w.Stop()
		t.Fatal(err)
	}
	w.StopPublishing()
	if err := w.Settle(90 * time.Second); err != nil {
		t.Error(err)
	}
	wedged := w.Wedged(10 * time.Second)
	if err := w.Stop(); err != nil {
		t.Errorf("stopping the applications: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := chaos.Check(ctx, js, l, recs, w.Injected())
	if err != nil {
		t.Fatal(err)
	}
	res.Wedged = wedged
	nc.Close() // the checker's connection is not the workload's
	if countGoroutines {
		natstest.Eventually(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= base },
			func() string {
				var after bytes.Buffer
				_ = pprof.Lookup("goroutine").WriteTo(&after, 1)
				return fmt.Sprintf("%d goroutines after the campaign, %d before:\n%s", runtime.NumGoroutine(), base, after.String())
			})
	}
	t.Log(res.Summary())
	return res
}
