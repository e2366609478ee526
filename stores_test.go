package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
)

func TestStoresConfigErrorsNameTheField(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte(`
kv:
  settings: {history: 65, storage: tape}
  "bad.name": {}
object_stores:
  blobs: {replicas: 9}
  "no spaces": {}
watches:
  restart: {mode: sometimes}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = corral.New(cfg, embeddedServer)
	if !errors.Is(err, corral.ErrInvalidConfig) {
		t.Fatalf("New: %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"kv.settings.history", "kv.settings.storage", `"bad.name"`,
		"object_stores.blobs.replicas", `"no spaces"`, "watches.restart.mode"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}
}

func TestBucketsAndStoresThroughTheClient(t *testing.T) {
	t.Parallel()
	type settings struct {
		Limit int `json:"limit"`
	}
	cfg := embeddedConfig(t)
	cfg.KV = map[string]kv.Config{"settings": {History: 5}}
	cfg.ObjectStores = map[string]objectstore.Config{"blobs": {}}
	cfg.Locks = map[string]kv.LockConfig{"leader": {Bucket: "locks", TTL: 2 * time.Second}} // key: its name
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KV("nope"); !errors.Is(err, corral.ErrUnknownBucket) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("KV(nope): %v", err)
	}
	if _, err := c.ObjectStore("nope"); !errors.Is(err, corral.ErrUnknownStore) {
		t.Fatalf("ObjectStore(nope): %v", err)
	}
	raw, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.KV("settings"); again != raw {
		t.Fatal("KV made a second handle for one bucket")
	}
	b := kv.Typed(raw, codec.JSON[settings]{})
	store, err := c.ObjectStore("blobs")
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		op    kv.Op
		limit int
		rev   uint64
	}
	changes := make(chan seen, 16)
	onSettings := func(_ context.Context, e kv.Entry[settings]) error {
		changes <- seen{e.Op, e.Value.Limit, e.Revision}
		return nil
	}
	sw, err := b.Watch("settings-watch", kv.WatchConfig{Keys: []string{"limits.*"}}, onSettings)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(sw); err != nil {
		t.Fatal(err)
	}
	objects := make(chan string, 16)
	onObject := func(_ context.Context, ch objectstore.Change) error {
		if ch.Synced {
			objects <- "(synced)"
			return nil
		}
		objects <- ch.Info.Name
		return nil
	}
	ow, err := store.Watch("blobs-watch", objectstore.WatchConfig{UpdatesOnly: true}, onObject)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(ow); err != nil {
		t.Fatal(err)
	}
	again, err := b.Watch("settings-watch", kv.WatchConfig{}, onSettings)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(again); err == nil {
		t.Fatal("a second watch with the same name was accepted")
	}
	running(t, c)
	waitConn(t, c)
	late, err := store.Watch("late", objectstore.WatchConfig{UpdatesOnly: true}, onObject)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(late); !errors.Is(err, corral.ErrRunning) {
		t.Fatalf("watch declared while running: %v, want ErrRunning", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next := func() seen {
		t.Helper()
		select {
		case s := <-changes:
			return s
		case <-ctx.Done():
			t.Fatalf("watch delivered nothing; status:\n%v", c.Status())
			return seen{}
		}
	}
	if s := next(); s.op != kv.Synced {
		t.Fatalf("first delivery %+v, want Synced", s)
	}
	rev, err := b.Put(ctx, "limits.api", settings{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "other.key", settings{Limit: 99}); err != nil {
		t.Fatal(err)
	}
	e, err := b.Update(ctx, "limits.api", func(old settings, _ bool) (settings, error) {
		return settings{Limit: old.Limit + 1}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := next(); s != (seen{kv.Put, 10, rev}) {
		t.Fatalf("got %+v, want put 10 at %d", s, rev)
	}
	if s := next(); s != (seen{kv.Put, 11, e.Revision}) {
		t.Fatalf("got %+v, want put 11 at %d (other.key is not watched)", s, e.Revision)
	}

	nextObject := func() string {
		t.Helper()
		select {
		case name := <-objects:
			return name
		case <-ctx.Done():
			t.Fatalf("object watch delivered nothing; status:\n%v", c.Status())
			return ""
		}
	}
	if name := nextObject(); name != "(synced)" {
		t.Fatalf("object watch first saw %q, want synced", name)
	}
	if _, err := store.PutBytes(ctx, "report.csv", []byte("a,b\n1,2\n")); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetBytes(ctx, "report.csv")
	if err != nil || string(got) != "a,b\n1,2\n" {
		t.Fatalf("GetBytes: %q %v", got, err)
	}
	if name := nextObject(); name != "report.csv" {
		t.Fatalf("object watch saw %q", name)
	}

	st := c.Status()
	if len(st.Watches) != 2 {
		t.Fatalf("status watches: %+v", st.Watches)
	}
	tree := st.String()
	for _, want := range []string{"watchers", "settings-watch", "blobs-watch"} {
		if !strings.Contains(tree, want) {
			t.Errorf("status tree lacks %s:\n%s", want, tree)
		}
	}

	lock, err := c.Lock("leader")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := lock.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := lock.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("second acquire while held: ok=%v err=%v", ok, err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A lock bucket that is also a KV bucket, or locks that disagree on their
// bucket's TTL, are refused at New, naming the field.
func TestLockConfigurationCheckedAtNew(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte(`
kv:
  settings: {}
locks:
  leader:  {bucket: settings, key: leader}
  a:       {bucket: locks, key: a, ttl: 5s}
  b:       {bucket: locks, key: b, ttl: 6s}
  badkey:  {bucket: locks2, key: "a b"}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = corral.New(cfg, embeddedServer)
	if !errors.Is(err, corral.ErrInvalidConfig) {
		t.Fatalf("New: %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"locks.leader.bucket", "locks.b.ttl", "locks.badkey.key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}
	c, err := corral.New(corral.Config{}, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock("nope"); !errors.Is(err, corral.ErrUnknownLock) {
		t.Fatalf("Lock(nope): %v, want ErrUnknownLock", err)
	}
}
