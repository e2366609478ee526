package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/ops"
	"github.com/corral-go/corral/tasks"
)

var fleetShot = flag.String("fleet-screenshot", "", "write the fleet view's screenshot to this file (docs/fleet-view.png)")

// fleetClient runs a Client of the service shop on url, a worker of the
// task queue render, until the returned stop is called or the test ends;
// withOps serves the status page on a port of its own.
func fleetClient(t *testing.T, url string, withOps bool) (*corral.Client, func()) {
	t.Helper()
	cfg := corral.Config{Name: "shop"}
	cfg.Connection.Servers = []string{url}
	cfg.Tasks = map[string]tasks.Config{"render": {MaxConcurrency: 2, Prefetch: -1}}
	// Its tasks run until cut off: a stop waits a second for them, not ten.
	cfg.Restart.ShutdownTimeout = time.Second
	var opts []corral.Option
	if withOps {
		cfg.Ops.Listen = "127.0.0.1:0"
		opts = append(opts, corral.WithOps(ops.New))
	}
	c, err := corral.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
		<-ctx.Done() // each holds its task until it stops
		return ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := c.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	return c, stop
}

// The fleet view in a real browser: three instances of one service, each
// a worker of one task queue, all shown by the page of one of them, with
// the queue's backlog and held tasks; one stopped during the test is
// marked as not answering within the page's deadline.
func TestFleetViewInABrowser(t *testing.T) {
	ctx := browser(t)
	srv := natstest.RunServer(t)
	page, _ := fleetClient(t, srv.URL(), true)
	_, _ = fleetClient(t, srv.URL(), false)
	gone, stopGone := fleetClient(t, srv.URL(), false)
	ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 8 { // six held, two of every three slots'; two waiting
		e, err := page.EnqueueTask(ectx, "render", nil, tasks.WithID(fmt.Sprintf("frame-%d", i)))
		if err == nil {
			err = e.Wait(ectx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+page.OpsAddr()+"/?refresh=1")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*corral.Client{page, gone} {
		pageShows(t, ctx, fmt.Sprintf(`#fleet tr[data-instance=%q] td.state`, c.Identity().ID), "ready")
	}
	pageShows(t, ctx, `#fleet-queues tr[data-fleet-queue="render"] td.workers`, "3")
	pageShows(t, ctx, `#fleet-queues tr[data-fleet-queue="render"] span.held`, "6")
	pageShows(t, ctx, `#fleet-queues tr[data-fleet-queue="render"] td.waiting`, "2")
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#fleet tr[data-instance]").length`))
	if err != nil || rows != 3 {
		t.Fatalf("the fleet table has %d instances (%v), want 3", rows, err)
	}

	shoot(t, ctx, *fleetShot, "fleet-view.png")

	// Stopped, an instance no longer answers: the page marks it.
	stopGone()
	var got string
	natstest.Eventually(t, 20*time.Second, func() bool {
		got, err = text(ctx, fmt.Sprintf(`#fleet tr[data-instance=%q] td.state .badge`, gone.Identity().ID))
		return err == nil && got == "no answer"
	}, func() string { return fmt.Sprintf("the stopped instance shows %q (%v), want no answer", got, err) })
	pageShows(t, ctx, `#fleet-queues tr[data-fleet-queue="render"] td.workers`, "2")
}

// shoot takes a screenshot of the page to path, or to a file of the test's
// own named name.
func shoot(t *testing.T, ctx context.Context, path, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if path == "" {
		path = filepath.Join(t.TempDir(), name)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
