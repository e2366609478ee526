package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/ops"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

var screenshot = flag.String("screenshot", "", "write the status page's screenshot, taken under load, to this file (docs/status-page.png)")

// browser starts a headless Chromium for the test: the one CHROMIUM
// names, or chromium, chromium-browser or google-chrome on the PATH.
// Without one the test is skipped, saying so, unless REQUIRE_BROWSER
// is set (.ci/run sets it): there it fails.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path != "" {
			break
		}
		path, _ = exec.LookPath(name)
	}
	if path == "" {
		msg := "no browser found for the status page test: install chromium (apt-get install chromium) or set CHROMIUM to its path"
		if os.Getenv("REQUIRE_BROWSER") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser to exit
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// text reads the text of the first element sel matches, "" when there is
// none. The page reloads itself every second: a read that meets a reload
// fails, and callers read again.
func text(ctx context.Context, sel string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	js := fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "").trim()`, sel)
	return chromedp.Run(ctx, chromedp.Evaluate[string](js))
}

// pageShows waits until the page, refreshing itself, shows want in sel.
func pageShows(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	var got string
	var err error
	natstest.Eventually(t, 20*time.Second, func() bool {
		got, err = text(ctx, sel)
		return err == nil && got == want
	}, func() string { return fmt.Sprintf("%s: got %q (%v), want %q", sel, got, err, want) })
}

// The status page in a real browser: it draws the tree and the handlers,
// follows their counters as it refreshes itself, shows a child
// restarting, and fits a phone's screen. Under load, it is photographed
// for the README (with -screenshot).
func TestStatusPageInABrowser(t *testing.T) {
	ctx := browser(t)
	cfg := corral.Config{Name: "test"}
	cfg.Name = "shop"
	cfg.Ops.Listen = "127.0.0.1:0"
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	parsed, err := corral.ParseConfig([]byte(`
tasks:
  render: {max_concurrency: 4, heartbeat: 300ms, lease_ttl: 2s, claim_wait: 1s, keep_completed: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tasks = parsed.Tasks
	k := corraltest.New(t, cfg, corral.WithOps(ops.New))
	c := k.Client
	nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	slow := consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Msg) error {
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	})
	if err := c.Handle("greet", consumer.Config{Subject: "greet", Workers: 2}, nop); err != nil {
		t.Fatal(err)
	}
	if err := c.Handle("orders", consumer.Config{Workers: 8, JetStream: consumer.JetStream{Stream: "ORDERS", Consumer: "orders"}}, slow); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	flaky := natstest.NewFlaky("settings-watch")
	if err := c.AddWatch(flaky); err != nil {
		t.Fatal(err)
	}
	ready := start(t, k)
	url := "http://" + c.OpsAddr() + "/?refresh=1"
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}

	// The tree and the handlers.
	pageShows(t, ctx, "#name", "shop")
	for _, child := range []string{"server", "connection", "publisher", "consumers", "handler/greet", "handler/orders", "tasks/render", "settings-watch"} {
		pageShows(t, ctx, fmt.Sprintf(`#tree tr[data-child=%q] td.state`, child), "running")
	}
	pageShows(t, ctx, `#ready`, "ready")

	// Counters change: the page follows without being reloaded.
	pageShows(t, ctx, `tr[data-handler="greet"] td.received`, "0")
	for range 5 {
		if err := c.PublishCore(ready, "greet", []byte("hi")); err != nil {
			t.Fatal(err)
		}
	}
	pageShows(t, ctx, `tr[data-handler="greet"] td.received`, "5")
	pageShows(t, ctx, `tr[data-handler="greet"] td.processed`, "5")

	// A child restarting.
	flaky.FailOnce(t)
	pageShows(t, ctx, `#tree tr[data-child="settings-watch"] td.restarts`, "1")

	// A phone's screen: nothing wider than it but the tables, which scroll.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if overflow {
		t.Error("the page is wider than a phone's screen")
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000)); err != nil {
		t.Fatal(err)
	}

	photographUnderLoad(t, ctx, c)
}

// photographUnderLoad keeps every handler and the task queue busy, waits
// for the page to show it, and takes the screenshot.
func photographUnderLoad(t *testing.T, ctx context.Context, c *corral.Client) {
	load, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond) // a steady load, not a flood
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-load.Done():
				return
			case <-tick.C:
			}
			for range 4 {
				_ = c.PublishCore(load, "greet", []byte("hi"))
			}
			if _, err := c.Publish(load, fmt.Sprintf("orders.%d", i%50), []byte(`{"sku":"widget","qty":3}`)); err != nil {
				return
			}
			if i%10 == 0 {
				_, _ = c.Enqueue(load, "render", []byte("report"))
			}
		}
	})
	var rate string
	natstest.Eventually(t, 20*time.Second, func() bool {
		var err error
		rate, err = text(ctx, `tr[data-handler="orders"] td.rate`)
		return err == nil && rate != "" && rate != "0.0"
	}, func() string { return "the orders handler's rate never showed: " + rate })
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := *screenshot
	if path == "" {
		path = filepath.Join(t.TempDir(), "status-page.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
