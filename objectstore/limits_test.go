package objectstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
)

// An object name whose metadata subject, "$O.<store>.M.<base64 name>",
// is longer than the server takes in one control line is refused by every
// call that names an object, before any request, naming its length and
// the limit; the connection stays up. A name at the limit is stored, read,
// described, linked to and deleted.
func TestObjectNameTooLongIsRefusedAndTheConnectionStays(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, lost := natstest.WatchedConn(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const store = "limits"
	s, err := objectstore.Open(store, objectstore.Config{}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	limit := (2000 - len("$O."+store+".M.")) / 4 * 3
	if _, err := s.PutBytes(ctx, "warm", []byte("up")); err != nil { // the store is declared
		t.Fatal(err)
	}
	for _, n := range []int{5000, limit + 1, 70000} {
		name := strings.Repeat("o", n)
		want := fmt.Sprintf("%d bytes, the limit is %d", n, limit)
		calls := map[string]func() error{
			"put":    func() error { _, err := s.PutBytes(ctx, name, []byte("v")); return err },
			"get":    func() error { _, err := s.GetBytes(ctx, name); return err },
			"info":   func() error { _, err := s.Info(ctx, name); return err },
			"delete": func() error { return s.Delete(ctx, name) },
			"link":   func() error { _, err := s.AddLink(ctx, name, "warm"); return err },
			"target": func() error { _, err := s.AddLink(ctx, "link", name); return err },
		}
		for op, call := range calls {
			if err := call(); !errors.Is(err, objectstore.ErrInvalidName) || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s with a %d-byte name: %v, want ErrInvalidName saying %q", op, n, err, want)
			}
		}
		natstest.KeptUp(t, nc, lost)
	}
	name := strings.Repeat("o", limit)
	if got := len("$O." + store + ".M." + base64.URLEncoding.EncodeToString([]byte(name))); got > 2000 {
		t.Fatalf("the subject of a name at the limit is %d bytes", got)
	}
	if _, err := s.PutBytes(ctx, name, []byte("at the limit")); err != nil {
		t.Fatalf("put of a %d-byte name: %v", limit, err)
	}
	if got, err := s.GetBytes(ctx, name); err != nil || string(got) != "at the limit" {
		t.Fatalf("get of a %d-byte name: %q, %v", limit, got, err)
	}
	if _, err := s.Info(ctx, name); err != nil {
		t.Fatalf("info of a %d-byte name: %v", limit, err)
	}
	if _, err := s.AddLink(ctx, "link", name); err != nil {
		t.Fatalf("link to a %d-byte name: %v", limit, err)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("delete of a %d-byte name: %v", limit, err)
	}
	natstest.KeptUp(t, nc, lost)
}

// A store name whose stream, OBJ_<name>, passes JetStream's 255 is refused
// when the store is opened; one at the limit is declared.
func TestStoreNameLimit(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, lost := natstest.WatchedConn(t, srv.URL())
	src := connection.NewFixed(nc)
	_, err := objectstore.Open(strings.Repeat("s", 252), objectstore.Config{}, src)
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "252 bytes, the limit is 251") {
		t.Fatalf("open of a 252-byte store: %v, want supervisor.ErrInvalidConfig naming both lengths", err)
	}
	s, err := objectstore.Open(strings.Repeat("s", 251), objectstore.Config{}, src)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.PutBytes(ctx, "o", []byte("v")); err != nil {
		t.Fatalf("put in a 251-byte store: %v", err)
	}
	natstest.KeptUp(t, nc, lost)
}

// A watch's name becomes a supervised service's: one the rules of a
// consumer name refuse is refused when the watch is made.
func TestWatchNameIsChecked(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, _ := natstest.WatchedConn(t, srv.URL())
	s, err := objectstore.Open("watched", objectstore.Config{}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(context.Context, objectstore.Change) error { return nil }
	for _, name := range []string{"", "a.b", "a b", "a*", "a>", "a/b", `a\b`, strings.Repeat("w", 256)} {
		if _, err := s.Watch(name, objectstore.WatchConfig{}, fn); !errors.Is(err, supervisor.ErrInvalidConfig) {
			t.Errorf("watch named %.20q: %v, want supervisor.ErrInvalidConfig", name, err)
		}
	}
	if _, err := s.Watch(strings.Repeat("w", 255), objectstore.WatchConfig{}, fn); err != nil {
		t.Errorf("watch with a 255-byte name: %v", err)
	}
}
