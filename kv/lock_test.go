package kv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// A holder cut off from the server without a reset (its renewals block)
// must be told it lost the lock before the server expires the key and
// another process can take it.
func TestLeaseLostBeforeAnotherAcquiresWhenHolderBlackholed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  kv.LockConfig
	}{
		{"slow renewals", kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 3 * time.Second, RenewEvery: 1350 * time.Millisecond}},
		{"defaults", kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 3 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			srv, proxy, a, b := twoHolders(t, tc.cfg)
			leaseA := acquire(t, ctx, a)
			// Cut a off just after a renewal: the next ones are then sent
			// shortly before its expiry deadline, and block past it.
			waitRenewed(t, srv.URL(), tc.cfg, leaseA.Token)
			proxy.Pause()
			leaseB := acquire(t, ctx, b)
			select {
			case <-leaseA.Lost():
			default:
				t.Errorf("b acquired the lock (token %d > %d) while a's Lost() was still open", leaseB.Token, leaseA.Token)
			}
			proxy.Restore()
			if err := leaseA.Release(ctx); !errors.Is(err, kv.ErrLockLost) {
				t.Errorf("releasing a's lost lease: %v, want ErrLockLost", err)
			}
			if err := leaseB.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// waitRenewed returns once the lock's key has a revision after token.
func waitRenewed(t *testing.T, url string, cfg kv.LockConfig, token uint64) {
	t.Helper()
	ctx := ctxT(t)
	js, err := jetstream.New(natstest.Connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	b, err := js.KeyValue(ctx, cfg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch(ctx, cfg.Key, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := range w.Updates() {
		if e != nil && e.Revision() > token {
			return
		}
	}
	t.Fatal("the lease was never renewed")
}

func TestLockConfigValidation(t *testing.T) {
	t.Parallel()
	conns := connection.NewFixed(nil) // nothing is contacted before Acquire
	for _, tc := range []struct {
		cfg   kv.LockConfig
		field string // "" when valid
	}{
		{kv.LockConfig{Bucket: "locks", Key: "k", TTL: 2 * time.Second}, ""},
		{kv.LockConfig{Bucket: "locks", Key: "k", TTL: 2 * time.Second, RenewEvery: 900 * time.Millisecond}, ""},
		// A lease is lost at 0.9·TTL: a renewal every 1.9s of a 2s TTL
		// would lose every lease on a healthy server.
		{kv.LockConfig{Bucket: "locks", Key: "k", TTL: 2 * time.Second, RenewEvery: 1900 * time.Millisecond}, "renew_every"},
		{kv.LockConfig{Bucket: "locks", Key: "k", TTL: 2 * time.Second, RenewEvery: 901 * time.Millisecond}, "renew_every"},
		{kv.LockConfig{Bucket: "locks", Key: "k", TTL: 2 * time.Second, RenewEvery: -time.Second}, "renew_every"},
		{kv.LockConfig{Bucket: "locks", Key: "k", TTL: 500 * time.Millisecond}, "ttl"},
	} {
		_, err := kv.NewLock(tc.cfg, conns)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.field != "" && (!errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%+v: %v, want supervisor.ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
	}
}

// A lock must not rewrite its bucket's TTL, on which the other locks in
// the bucket rely.
func TestLockRefusesBucketWithAnotherTTL(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conns := connection.NewFixed(natstest.Connect(t, srv.URL()))
	lease := acquire(t, ctx, newLock(t, kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 30 * time.Second}, conns))
	_, err := newLock(t, kv.LockConfig{Bucket: "locks", Key: "cron", TTL: time.Second}, conns).Acquire(ctx)
	if !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("acquiring a 1s lock in a 30s lock bucket: %v, want supervisor.ErrInvalidConfig", err)
	}
	for _, want := range []string{"locks", "30s", "1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	b, err := locksBucket(t, conns).Raw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != 30*time.Second {
		t.Errorf("bucket TTL is %v, want it unchanged at 30s", st.TTL())
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A lock that declares its bucket declares it as its configuration says:
// with limit markers, so that a watch sees a holder's lease expire.
func TestLockDeclaresItsBucketAsConfigured(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conns := connection.NewFixed(natstest.Connect(t, srv.URL()))
	lease := acquire(t, ctx, newLock(t, kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 2 * time.Second,
		Storage: "memory", LimitMarkerTTL: 2 * time.Second}, conns))
	b, err := locksBucket(t, conns).Raw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.LimitMarkerTTL() != 2*time.Second {
		t.Errorf("bucket: limit markers %v, want 2s", st.LimitMarkerTTL())
	}
	if info := st.(*jetstream.KeyValueBucketStatus).StreamInfo(); info.Config.Storage != jetstream.MemoryStorage {
		t.Errorf("bucket storage %v, want memory", info.Config.Storage)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// The key changed under the holder before its renewer noticed: Release
// must say the lock was lost.
func TestReleaseAfterKeyTakenIsErrLockLost(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conns := connection.NewFixed(natstest.Connect(t, srv.URL()))
	lease := acquire(t, ctx, newLock(t, kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 30 * time.Second}, conns))
	raw := locksBucket(t, conns)
	if _, err := raw.Put(ctx, "leader", "someone else"); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); !errors.Is(err, kv.ErrLockLost) {
		t.Fatalf("got %v, want ErrLockLost", err)
	}
	select {
	case <-lease.Lost():
	default:
		t.Error("Release found the lock lost but Lost() is open")
	}
	if got, err := raw.Get(ctx, "leader"); err != nil || got.Value != "someone else" {
		t.Errorf("the other holder's key: %+v %v", got, err)
	}
}

// Release stops the renewals whatever its outcome: when it fails, the key
// may be deleted already or expire soon, and another take the lock, so the
// holder must be told at once that it no longer holds it.
func TestFailedReleaseClosesLost(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, proxy, a, b := twoHolders(t, kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 2 * time.Second})
	leaseA := acquire(t, ctx, a)
	proxy.Pause()
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := leaseA.Release(rctx)
	cancel()
	if err == nil {
		t.Fatal("release through a paused connection succeeded")
	}
	select {
	case <-leaseA.Lost():
	default:
		t.Fatalf("release failed (%v) and Lost() is open", err)
	}
	leaseB := acquire(t, ctx, b)
	proxy.Restore()
	if err := leaseA.Release(ctx); !errors.Is(err, kv.ErrLockLost) {
		t.Errorf("releasing a's lease again: %v, want ErrLockLost", err)
	}
	if err := leaseB.Release(ctx); err != nil {
		t.Error(err)
	}
}

// twoHolders returns two locks on cfg: a reaches the server through proxy,
// which can cut it off; b directly.
func twoHolders(t *testing.T, cfg kv.LockConfig) (srv *natstest.Server, proxy *natstest.Proxy, a, b *kv.Lock) {
	t.Helper()
	srv = natstest.RunServer(t)
	proxy = natstest.NewProxy(t, srv.URL())
	ncA, err := nats.Connect(proxy.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ncA.Close)
	a = newLock(t, cfg, connection.NewFixed(ncA))
	b = newLock(t, cfg, connection.NewFixed(natstest.Connect(t, srv.URL())))
	return srv, proxy, a, b
}

func newLock(t *testing.T, cfg kv.LockConfig, conns connection.Source) *kv.Lock {
	t.Helper()
	l, err := kv.NewLock(cfg, conns)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func acquire(t *testing.T, ctx context.Context, l *kv.Lock) *kv.Lease {
	t.Helper()
	lease, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

// locksBucket is the lock bucket "locks", bound as strings.
func locksBucket(t *testing.T, conns connection.Source) *kv.Bucket[string] {
	t.Helper()
	b, err := kv.Open("locks", kv.Config{Bind: true}, conns, codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Validate reports every invalid field at once; a bad key also matches
// ErrInvalidKey, as NewLock's error did.
func TestLockConfigValidateReportsEveryField(t *testing.T) {
	t.Parallel()
	err := kv.LockConfig{Bucket: "no.dots", Key: "a b", TTL: 500 * time.Millisecond, RenewEvery: time.Second,
		Storage: "disk", Replicas: 6, LimitMarkerTTL: time.Millisecond}.Validate()
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("Validate: %v, want supervisor.ErrInvalidConfig and ErrInvalidKey", err)
	}
	for _, want := range []string{"bucket", `"no.dots"`, "key", `"a b"`, "ttl", "renew_every", "storage", "replicas", "limit_marker_ttl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if err := (kv.LockConfig{Bucket: "locks", Key: "leader"}).Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if err := (kv.LockConfig{Bucket: "", Key: "leader"}).Validate(); !errors.Is(err, supervisor.ErrInvalidConfig) || errors.Is(err, kv.ErrInvalidKey) {
		t.Fatalf("no bucket: %v, want supervisor.ErrInvalidConfig alone", err)
	}
}

func TestLock(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	const ttl = 2 * time.Second
	newLock := func(nc *nats.Conn) *kv.Lock {
		l, err := kv.NewLock(kv.LockConfig{Bucket: "locks", Key: "leader", TTL: ttl}, connection.NewFixed(nc))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ncA, ncB := natstest.Connect(t, srv.URL()), natstest.Connect(t, srv.URL())
	a, b := newLock(ncA), newLock(ncB)

	leaseA, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.TryAcquire(ctx); ok || err != nil {
		t.Fatalf("b acquired a held lock: %v %v", ok, err)
	}
	if err := leaseA.Release(ctx); err != nil {
		t.Fatal(err)
	}
	leaseB, ok, err := b.TryAcquire(ctx)
	if !ok || err != nil {
		t.Fatalf("b could not take a released lock: %v", err)
	}
	if leaseB.Token <= leaseA.Token {
		t.Fatalf("fencing token went from %d to %d", leaseA.Token, leaseB.Token)
	}

	// b's process dies: its connection closes and it renews no more.
	ncB.Close()
	killed := time.Now()
	select {
	case <-leaseB.Lost():
		if lost := time.Since(killed); lost > ttl {
			t.Fatalf("b learned it lost the lock %v after, more than the TTL", lost)
		}
	case <-time.After(2 * ttl):
		t.Fatal("b was never told it lost the lock")
	}
	leaseA2, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took, bound := time.Since(killed), ttl+ttl/3+time.Second; took > bound {
		t.Fatalf("a took the lock %v after b died, want within %v (TTL, a renew interval, slack)", took, bound)
	}
	if leaseA2.Token <= leaseB.Token {
		t.Fatalf("fencing token went from %d to %d", leaseB.Token, leaseA2.Token)
	}
	if err := leaseB.Release(ctx); !errors.Is(err, kv.ErrLockLost) {
		t.Fatalf("releasing a lost lease: %v", err)
	}
	if err := leaseA2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A lock's Value says who holds it: the key holds the lease's identity,
// then Value, and keeps both through renewals.
func TestLockValueNamesTheHolder(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conns := connection.NewFixed(natstest.Connect(t, srv.URL()))
	cfg := kv.LockConfig{Bucket: "locks", Key: "leader", TTL: time.Second, RenewEvery: 200 * time.Millisecond,
		Value: "billing@host-1/42"}
	lease := acquire(t, ctx, newLock(t, cfg, conns))
	raw := locksBucket(t, conns)
	got, err := raw.Get(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	id, value, ok := strings.Cut(got.Value, " ")
	if !ok || len(id) != 22 || value != cfg.Value {
		t.Fatalf("the key holds %q, want a NUID, a space and %q", got.Value, cfg.Value)
	}
	waitRenewed(t, srv.URL(), cfg, lease.Token)
	if renewed, err := raw.Get(ctx, "leader"); err != nil || renewed.Value != got.Value || renewed.Revision == got.Revision {
		t.Fatalf("after a renewal the key holds %+v (%v), want %q at a later revision than %d", renewed, err, got.Value, got.Revision)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
