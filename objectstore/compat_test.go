package objectstore_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// Objects put by Corral are nats.go objects and the reverse: info, data,
// replacement, List, Watch and links, for empty, one-chunk and
// multi-chunk objects and names nats.go encodes.
func TestObjectsAreNatsGoObjects(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "compat")
	ctx := ctxT(t)
	js, _ := jetstream.New(nc)
	names := []string{"plain", "with space", "ünïcødé/日本", "a/b/c.txt", "dots.and-dashes_", "x=y+z?&"}
	sizes := []int{0, 1, 128 << 10, 128<<10 + 1, 3*128<<10 + 7}
	if _, err := s.PutBytes(ctx, "warmup", nil); err != nil {
		t.Fatal(err)
	}
	raw, err := js.ObjectStore(ctx, "compat")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		for _, size := range sizes {
			data := make([]byte, size)
			rand.Read(data)
			// Corral put -> nats.go get
			cn := fmt.Sprintf("c:%s:%d", name, size)
			ci, err := s.PutBytes(ctx, cn, data)
			if err != nil {
				t.Fatalf("corral put %q: %v", cn, err)
			}
			ni, err := raw.GetInfo(ctx, cn)
			if err != nil {
				t.Fatalf("nats getinfo %q: %v", cn, err)
			}
			if ni.Digest != ci.Digest || ni.Size != ci.Size || ni.Chunks != ci.Chunks || ni.NUID != ci.NUID || ni.ModTime.IsZero() {
				t.Errorf("%q info: nats %+v corral %+v", cn, ni, ci)
			}
			got, err := raw.GetBytes(ctx, cn)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("nats get %q: %d bytes, %v", cn, len(got), err)
			}
			// nats.go put -> corral get
			nn := fmt.Sprintf("n:%s:%d", name, size)
			if _, err := raw.PutBytes(ctx, nn, data); err != nil {
				t.Fatal(err)
			}
			got, err = s.GetBytes(ctx, nn)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("corral get %q: %d bytes, %v", nn, len(got), err)
			}
			// corral replaces a nats.go object and vice versa
			if _, err := s.PutBytes(ctx, nn, data[:size/2]); err != nil {
				t.Fatal(err)
			}
			if got, err := raw.GetBytes(ctx, nn); err != nil || !bytes.Equal(got, data[:size/2]) {
				t.Fatalf("nats get replaced %q: %v", nn, err)
			}
			if _, err := raw.PutBytes(ctx, cn, data[:size/2]); err != nil {
				t.Fatal(err)
			}
			if got, err := s.GetBytes(ctx, cn); err != nil || !bytes.Equal(got, data[:size/2]) {
				t.Fatalf("corral get replaced %q: %v", cn, err)
			}
		}
	}
	// List / Watch from nats.go see everything, and the stream holds exactly the live chunks.
	list, err := raw.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + 2*len(names)*len(sizes); len(list) != want {
		t.Errorf("nats list: %d objects, want %d", len(list), want)
	}
	var chunks uint32
	for _, i := range list {
		chunks += i.Chunks
	}
	st, _ := raw.Status(ctx)
	si := st.(*jetstream.ObjectBucketStatus).StreamInfo()
	if si.State.Msgs != uint64(len(list))+uint64(chunks) {
		t.Errorf("stream holds %d msgs, want %d metas + %d chunks", si.State.Msgs, len(list), chunks)
	}
	w, err := raw.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	n := 0
	for i := range w.Updates() {
		if i == nil {
			break
		}
		n++
	}
	if n != len(list) {
		t.Errorf("nats watch: %d, want %d", n, len(list))
	}
	// Corral Info/List of nats.go-written
	cl, err := s.List(ctx)
	if err != nil || len(cl) != len(list) {
		t.Errorf("corral list %d %v", len(cl), err)
	}
	// Corral Get via io.Writer of a nats.go link
	if _, err := raw.AddLink(ctx, "lnk", list[1]); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := s.Get(ctx, "lnk", &b); err != nil {
		t.Fatal(err)
	}
}
