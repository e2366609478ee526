package kv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// A key whose subject is longer than the server takes in one control line
// is refused before any request, naming its length and the limit, and
// the connection stays up; a key at the limit is stored and read back
// (a read sends the longest subject, a direct get's).
func TestKeyTooLongIsRefusedAndTheConnectionStays(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, lost := natstest.WatchedConn(t, srv.URL())
	ctx := ctxT(t)
	const bucket = "limits"
	b, err := kv.Open(bucket, kv.Config{}, connection.NewFixed(nc), codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	limit := 2000 - len("$KV."+bucket+".")
	if _, err := b.Put(ctx, "warm", "up"); err != nil { // the bucket is declared
		t.Fatal(err)
	}
	for _, n := range []int{5000, limit + 1, 70000} {
		key := strings.Repeat("k", n)
		_, err := b.Put(ctx, key, "v")
		if want := fmt.Sprintf("%d bytes, the limit is", n); !errors.Is(err, kv.ErrInvalidKey) || !strings.Contains(err.Error(), want) {
			t.Fatalf("put of a %d-byte key: %v, want ErrInvalidKey saying %q", n, err, want)
		}
		if _, err := b.Get(ctx, key); !errors.Is(err, kv.ErrInvalidKey) {
			t.Fatalf("get of a %d-byte key: %v, want ErrInvalidKey", n, err)
		}
		if err := b.Delete(ctx, key); !errors.Is(err, kv.ErrInvalidKey) {
			t.Fatalf("delete of a %d-byte key: %v, want ErrInvalidKey", n, err)
		}
		natstest.KeptUp(t, nc, lost)
	}
	key := strings.Repeat("k", limit)
	if _, err := b.Put(ctx, key, "at the limit"); err != nil {
		t.Fatalf("put of a %d-byte key: %v", limit, err)
	}
	if e, err := b.Get(ctx, key); err != nil || e.Value != "at the limit" {
		t.Fatalf("get of a %d-byte key: %+v, %v", limit, e, err)
	}
	if _, err := b.History(ctx, key); err != nil {
		t.Fatalf("history of a %d-byte key: %v", limit, err)
	}
	natstest.KeptUp(t, nc, lost)
}

// ValidKey refuses a key too long for any bucket, naming its length.
func TestValidKeyRefusesALongKey(t *testing.T) {
	if err := kv.ValidKey(strings.Repeat("k", 1994)); err != nil {
		t.Fatalf("a 1994-byte key: %v", err)
	}
	err := kv.ValidKey(strings.Repeat("k", 1995))
	if !errors.Is(err, kv.ErrInvalidKey) || !strings.Contains(err.Error(), "1995 bytes, the limit is 1994") {
		t.Fatalf("a 1995-byte key: %v, want ErrInvalidKey naming both lengths", err)
	}
}

// A bucket name whose stream, KV_<name>, passes JetStream's 255 is refused
// when the bucket is opened; one at the limit is declared.
func TestBucketNameLimit(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, lost := natstest.WatchedConn(t, srv.URL())
	src := connection.NewFixed(nc)
	_, err := kv.Open(strings.Repeat("b", 252), kv.Config{}, src, codec.String{})
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "252 bytes, the limit is 251") {
		t.Fatalf("open of a 252-byte bucket: %v, want supervisor.ErrInvalidConfig naming both lengths", err)
	}
	b, err := kv.Open(strings.Repeat("b", 251), kv.Config{}, src, codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctxT(t), "k", "v"); err != nil {
		t.Fatalf("put in a 251-byte bucket: %v", err)
	}
	natstest.KeptUp(t, nc, lost)
}

// A watch's name becomes a supervised service's: one the rules of a
// consumer name refuse is refused when the watch is made, and so is a
// watched key too long for the bucket.
func TestWatchNameAndKeysAreChecked(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	b, err := kv.Open("watched", kv.Config{}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, kv.Entry[string]) error { return nil }
	for _, name := range []string{"", "a.b", "a b", "a*", "a>", "a/b", `a\b`, strings.Repeat("w", 256)} {
		if _, err := b.Watch(name, kv.WatchConfig{}, fn); !errors.Is(err, supervisor.ErrInvalidConfig) {
			t.Errorf("watch named %.20q: %v, want supervisor.ErrInvalidConfig", name, err)
		}
	}
	if _, err := b.Watch(strings.Repeat("w", 255), kv.WatchConfig{}, fn); err != nil {
		t.Errorf("watch with a 255-byte name: %v", err)
	}
	long := strings.Repeat("k", 2000)
	if _, err := b.Watch("w", kv.WatchConfig{Keys: []string{long}}, fn); !errors.Is(err, kv.ErrInvalidKey) ||
		!strings.Contains(err.Error(), "2000 bytes, the limit is") {
		t.Errorf("watch of a 2000-byte key: %v, want ErrInvalidKey naming its length", err)
	}
}

// A lock's key is held to its bucket's limit when the lock is made.
func TestLockKeyTooLong(t *testing.T) {
	err := kv.LockConfig{Bucket: "locks", Key: strings.Repeat("k", 2000)}.Validate()
	if !errors.Is(err, kv.ErrInvalidKey) || !strings.Contains(err.Error(), "2000 bytes, the limit is 1990") {
		t.Fatalf("lock with a 2000-byte key: %v, want ErrInvalidKey naming both lengths", err)
	}
}
