package consumer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
)

// A declaration reports what the server refused: only a change it cannot
// make to an existing consumer reads as one. Its code for that, 10012, is
// also the code of any plain error, such as a consumer store it could not
// create for a consumer that does not exist.
func TestDeclareReportsTheServersRefusal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := natstest.RunServer(t, func(o *server.Options) { o.StoreDir = dir })
	js := natstest.JetStream(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "REF", Subjects: []string{"ref.>"}}); err != nil {
		t.Fatal(err)
	}
	// The server keeps each consumer's state in a directory named after
	// it: a file in its place fails the store, not the configuration.
	if err := os.WriteFile(filepath.Join(dir, "jetstream", "$G", "streams", "REF", "obs", "nostore"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ensure := func(c JetStream) error {
		cfg := Config{JetStream: c}.withDefaults()
		r := &jsRun{j: &jsHandler{handlerBase: handlerBase{name: "h", cfg: cfg, stats: &counters{}}}, held: newHeldMsgs()}
		_, err := r.ensure(ctx, js)
		return err
	}
	const inPlace = "cannot be changed in place"
	for _, tc := range []struct {
		what string
		c    JetStream
		code jetstream.ErrorCode
		desc string
	}{
		// Config.Validate refuses these names; the server's refusal is
		// reported as its own all the same.
		{"a form feed in the name", JetStream{Stream: "REF", Consumer: "a\fb"}, 10052, "name can not contain"},
		{"overlapping filters", JetStream{Stream: "REF", Consumer: "overlap", FilterSubjects: []string{"ref.>", "ref.a"}}, 10138, "filters cannot overlap"},
		{"a store it cannot create", JetStream{Stream: "REF", Consumer: "nostore"}, jetstream.JSErrCodeConsumerCreate, "error creating store"},
	} {
		err := ensure(tc.c)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != tc.code || !strings.Contains(err.Error(), tc.desc) ||
			strings.Contains(err.Error(), inPlace) {
			t.Errorf("%s: %v, want the server's %d %q, not %q", tc.what, err, tc.code, tc.desc, inPlace)
		}
	}

	if err := ensure(JetStream{Stream: "REF", Consumer: "changed"}); err != nil {
		t.Fatal(err)
	}
	err := ensure(JetStream{Stream: "REF", Consumer: "changed", DeliverPolicy: "new"})
	if !strings.Contains(err.Error(), inPlace) || !strings.Contains(err.Error(), "deliver policy can not be updated") {
		t.Errorf("changing the deliver policy: %v, want %q with the server's refusal", err, inPlace)
	}
}
