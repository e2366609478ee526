package objectstore_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/objectstore"
)

// A store deleted after first use: calls fail with ErrStoreNotFound, then
// the store is declared again.
func TestStoreDeletedIsReportedThenDeclaredAgain(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "gone")
	ctx := ctxT(t)
	if _, err := s.PutBytes(ctx, "doc", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, "doc", []byte("lost")); !errors.Is(err, objectstore.ErrStoreNotFound) {
		t.Fatalf("put to a deleted store: %v, want ErrStoreNotFound", err)
	}
	if _, err := s.PutBytes(ctx, "doc", []byte("v2")); err != nil {
		t.Fatalf("put after the store was reported gone: %v, want it declared again", err)
	}
	if err := js.DeleteObjectStore(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBytes(ctx, "doc"); !errors.Is(err, objectstore.ErrStoreNotFound) {
		t.Fatalf("get from a deleted store: %v, want ErrStoreNotFound", err)
	}
	if _, err := s.GetBytes(ctx, "doc"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get after the store was declared again: %v, want ErrNotFound", err)
	}
}
