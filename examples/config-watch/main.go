// Command config-watch keeps configuration in a KV bucket that two
// clients watch while a third writes to it, and restarts the server once
// in the middle. One watcher also fails once on purpose. It exits 0 only
// if both watchers saw every update exactly once and in order:
//
//	go run ./examples/config-watch
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/kv"
)

const (
	updates = 2000
	keys    = 100
	history = 64 // keys * history > updates: the bucket keeps every revision
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "config-watch:", err)
		os.Exit(1)
	}
}

// limit is one setting, as JSON in the bucket.
type limit struct {
	Version int `json:"version"`
	Max     int `json:"max"`
}

// watcher records the revisions its watch delivered, in order.
type watcher struct {
	name    string
	client  *corral.Client
	failAt  uint64 // fail once on this revision, to show the watch resumes
	mu      sync.Mutex
	revs    []uint64
	failed  bool
	changed chan struct{}
}

func newWatcher(name string, failAt uint64) *watcher {
	return &watcher{name: name, failAt: failAt, changed: make(chan struct{}, 1)}
}

func (w *watcher) see(_ context.Context, e kv.Entry[limit]) error {
	if e.Op == kv.Synced {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Revision == w.failAt && !w.failed {
		w.failed = true
		return fmt.Errorf("%s fails once at revision %d on purpose", w.name, e.Revision)
	}
	w.revs = append(w.revs, e.Revision)
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return nil
}

func (w *watcher) last() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.revs) == 0 {
		return 0
	}
	return w.revs[len(w.revs)-1]
}

// check counts revisions 1..last that were never delivered, and
// deliveries that repeat or go back.
func (w *watcher) check(last uint64) (seen, gaps, duplicates int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delivered := map[uint64]bool{}
	var prev uint64
	for _, r := range w.revs {
		if delivered[r] || r <= prev {
			duplicates++
		}
		delivered[r] = true
		prev = max(prev, r)
	}
	for r := uint64(1); r <= last; r++ {
		if !delivered[r] {
			gaps++
		}
	}
	return len(w.revs), gaps, duplicates
}

// restartable is the server, restartable in place: same port, same store.
type restartable struct {
	srv    *embedded.Server
	cancel context.CancelFunc
	done   chan error
}

func (e *restartable) start(ctx context.Context) (string, error) {
	sctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- e.srv.Serve(sctx) }()
	return e.srv.ClientURL(ctx)
}

func (e *restartable) stop() {
	e.cancel()
	<-e.done
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "corral-config-watch")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.New(corral.ServerConfig{StoreDir: dir})
	if err != nil {
		return err
	}
	server := &restartable{srv: srv}
	url, err := server.start(ctx)
	if err != nil {
		return err
	}
	defer server.stop()

	// Three clients, as three processes would have: two watch, one writes.
	clients := newFleet(ctx)
	defer clients.stop()
	watchers := []*watcher{newWatcher("a", 0), newWatcher("b", updates/4)}
	for _, w := range watchers {
		if err := w.start(url, clients); err != nil {
			return err
		}
	}
	writer, bucket, err := newClient("writer", url)
	if err != nil {
		return err
	}
	clients.start(writer)
	if err := waitReady(ctx, watchers); err != nil {
		return err
	}

	last, err := write(ctx, bucket, server, out)
	if err != nil {
		return err
	}
	if err := waitDelivered(watchers, last, clients.errs); err != nil {
		return err
	}
	return report(out, watchers, last)
}

// newClient makes a client of the server at url with the config bucket.
// A watch delivers every revision the bucket still holds; one cut off for
// longer than the bucket's history lasts skips to what remains (the
// latest value of every key, never older), so here the history outlasts
// the whole run.
func newClient(name, url string) (*corral.Client, *kv.Bucket[limit], error) {
	var cfg corral.Config
	cfg.Name = name
	cfg.Connection.Servers = []string{url}
	cfg.KV = map[string]kv.Config{"config": {History: history}}
	c, err := corral.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	raw, err := c.KV("config")
	if err != nil {
		return nil, nil, err
	}
	return c, kv.Typed(raw, codec.JSON[limit]{}), nil
}

// fleet runs the example's clients until stop, and reports on errs any
// that stopped with an error before.
type fleet struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

func newFleet(ctx context.Context) *fleet {
	ctx, cancel := context.WithCancel(ctx)
	// One slot per client: each sends at most once, and never blocks.
	return &fleet{ctx: ctx, cancel: cancel, errs: make(chan error, 3)}
}

func (f *fleet) start(c *corral.Client) {
	f.wg.Go(func() {
		if err := c.Run(f.ctx); err != nil {
			f.errs <- fmt.Errorf("%s: %w", c, err)
		}
	})
}

// stop ends every client and waits until each has stopped.
func (f *fleet) stop() {
	f.cancel()
	f.wg.Wait()
}

// start makes the watcher's client, declares its watch of the config
// bucket, from the changes made after it starts, and runs it.
func (w *watcher) start(url string, clients *fleet) error {
	c, b, err := newClient("watcher-"+w.name, url)
	if err != nil {
		return err
	}
	cw, err := b.Watch("config-watch", kv.WatchConfig{UpdatesOnly: true}, w.see)
	if err != nil {
		return err
	}
	if err := c.AddWatch(cw); err != nil {
		return err
	}
	w.client = c
	clients.start(c)
	return nil
}

// waitReady waits until every watcher's client is ready: its watch has
// delivered the bucket's current values, so that it sees every update that
// follows. Ready reports a client whose Run failed.
func waitReady(ctx context.Context, watchers []*watcher) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, w := range watchers {
		if err := w.client.Ready(ctx); err != nil {
			return fmt.Errorf("watcher %s: %w", w.name, err)
		}
	}
	return nil
}

// write puts every update, spread over the keys, and restarts the server
// halfway. A put that fails while it is down is retried: if the failed
// one was stored after all, the retry is one more revision, which the
// watchers must see too. It returns the last put's revision.
func write(ctx context.Context, bucket *kv.Bucket[limit], server *restartable, out io.Writer) (uint64, error) {
	var last uint64
	for i := range updates {
		if i == updates/2 {
			fmt.Fprintf(out, "restarting the server after %d updates\n", i)
			server.stop()
			if _, err := server.start(ctx); err != nil {
				return 0, err
			}
		}
		key := fmt.Sprintf("service.%d.limit", i%keys)
		for {
			putCtx, putCancel := context.WithTimeout(ctx, 2*time.Second)
			rev, err := bucket.Put(putCtx, key, limit{Version: i, Max: 100 + i})
			putCancel()
			if err == nil {
				last = rev
				break
			}
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return 0, err
			}
		}
	}
	return last, nil
}

// waitDelivered waits until every watcher has been delivered the last
// revision. The last put's revision is the last in the bucket: every
// revision up to it must reach both watchers.
func waitDelivered(watchers []*watcher, last uint64, errs <-chan error) error {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for _, w := range watchers {
		for w.last() < last {
			select {
			case <-w.changed:
			case err := <-errs:
				return err
			case <-deadline.C:
				return fmt.Errorf("watcher %s stopped at revision %d of %d", w.name, w.last(), last)
			}
		}
	}
	return nil
}

// report prints each watch's restarts and the summary, and fails if a
// watcher missed or repeated a revision.
func report(out io.Writer, watchers []*watcher, last uint64) error {
	for _, w := range watchers {
		for _, st := range w.client.Status().Watches {
			fmt.Fprintf(out, "watcher %s: %s restarts=%d last_error=%q\n", w.name, st.Name, st.Restarts, st.LastError)
		}
	}
	seenA, gapsA, dupA := watchers[0].check(last)
	seenB, gapsB, dupB := watchers[1].check(last)
	fmt.Fprintf(out, "summary: updates=%d seen_a=%d seen_b=%d gaps=%d duplicates=%d\n",
		last, seenA, seenB, gapsA+gapsB, dupA+dupB)
	if gapsA+gapsB+dupA+dupB != 0 || seenA != int(last) || seenB != int(last) {
		return errors.New("a watcher missed or repeated an update")
	}
	return nil
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
