package middleware_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/middleware"
)

// A Msg-Id too long for a key, as it is or encoded, is recorded under its
// hash, rather than every such message failing with kv.ErrInvalidKey for
// ever; so is one that is a valid key but too long for a bucket with a
// long name. A message whose hashed key is recorded is skipped.
func TestDedupHashesLongMsgIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.stream("LONGID", "longid.>")
	bucket := e.bucket(strings.Repeat("b", 200), kv.Config{})
	hashed := func(id string) string {
		sum := sha256.Sum256([]byte(id))
		return "h.idh." + base64.RawURLEncoding.EncodeToString(sum[:])
	}
	ids := map[string]string{
		"valid":   strings.Repeat("v", 5000),
		"encoded": strings.Repeat("a b.", 1250), // not a valid key: base64, 6667 bytes
		"bucket":  strings.Repeat("k", 1900),    // a valid key, too long for this bucket's subjects
		"skipped": strings.Repeat("s", 5000),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := bucket.Put(ctx, hashed(ids["skipped"]), nil); err != nil {
		t.Fatal(err)
	}
	var skipped skips
	dedup := middleware.Dedup(bucket, middleware.DedupConfig{OnDuplicate: skipped.add})
	got := newRuns()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	cfg := consumer.Config{Middleware: []consumer.Middleware{dedup}, JetStream: consumer.JetStream{Stream: "LONGID"}}
	if err := e.group.Handle("h", cfg, h); err != nil {
		t.Fatal(err)
	}
	for _, data := range slices.Sorted(maps.Keys(ids)) {
		e.publish("longid.x", data, ids[data], true)
	}
	stop := e.serve(1)
	eventually(t, "all acked", func() bool { return e.counters("h").Acked == 4 })
	stop()
	if want := map[string]int{"valid": 1, "encoded": 1, "bucket": 1}; !maps.Equal(got.get(), want) {
		t.Fatalf("handled %v, want %v", got.get(), want)
	}
	if want := []string{"skipped " + hashed(ids["skipped"])}; !slices.Equal(skipped.get(), want) {
		t.Fatalf("skipped %.200q, want %.200q", skipped.get(), want)
	}
	keys, err := bucket.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, id := range ids {
		want = append(want, hashed(id))
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %.300q, want %.300q", keys, want)
	}
}
