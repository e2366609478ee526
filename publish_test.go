package corral_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
)

func TestPublishesBeforeAndDuringRun(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.Publisher.Streams = map[string]stream.Config{"EVENTS": {Subjects: []string{"events.>"}}}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Accepted before there is any connection; sent once there is.
	early, err := c.Publish(ctx, "events.early", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	ack, err := early.Wait(ctx)
	if err != nil || ack.Stream != "EVENTS" || ack.Sequence != 1 {
		t.Fatalf("early message: %+v, %v", ack, err)
	}
	ack, err = c.PublishSync(ctx, "events.later", []byte("2"))
	if err != nil || ack.Sequence != 2 {
		t.Fatalf("PublishSync: %+v, %v", ack, err)
	}
	if err := c.PublishCore(ctx, "events.core", []byte("3")); err != nil {
		t.Fatal(err)
	}
	// Too large for the server: the error says how large, and the limit.
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	limit := nc.MaxPayload()
	err = c.PublishCore(ctx, "events.core", make([]byte, limit+1))
	if !errors.Is(err, publisher.ErrTooLarge) || !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("PublishCore of %d bytes: got %v, want ErrTooLarge and nats.ErrMaxPayload", limit+1, err)
	}
	for _, want := range []string{strconv.FormatInt(limit+1, 10) + " bytes", "accepts " + strconv.FormatInt(limit, 10)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("PublishCore's error does not say %q: %v", want, err)
		}
	}
	if st := c.Status().Publisher; st.Acked != 2 || st.Buffered != 0 {
		t.Fatalf("publisher status: %+v", st)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestSpoolIsReleasedByRunAndClose(t *testing.T) {
	cfg := embeddedConfig(t)
	cfg.Publisher.SpoolDir = t.TempDir()
	first, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := corral.New(cfg); !errors.Is(err, publisher.ErrSpoolLocked) {
		t.Fatalf("second client on the same spool: %v, want ErrSpoolLocked", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := corral.New(cfg)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	stop := running(t, second)
	waitConn(t, second)
	if err := second.Close(); !errors.Is(err, publisher.ErrServing) {
		t.Fatalf("Close while running: %v, want ErrServing", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	third, err := corral.New(cfg)
	if err != nil {
		t.Fatalf("after Run returned: %v", err)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
}
