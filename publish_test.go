package corral_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
)

func TestPublishesBeforeAndDuringRun(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.Publisher.Streams = map[string]stream.Config{"EVENTS": {Subjects: []string{"events.>"}}}
	c, err := corral.New(cfg, embeddedServer)
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
	first, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := corral.New(cfg, embeddedServer); !errors.Is(err, publisher.ErrSpoolLocked) {
		t.Fatalf("second client on the same spool: %v, want ErrSpoolLocked", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second, err := corral.New(cfg, embeddedServer)
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
	third, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatalf("after Run returned: %v", err)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
}

// PublishMsg carries a message's headers and the options to the stream:
// its own Nats-Msg-Id is kept (a second publish is a duplicate), and an
// expectation the stream checks is final. PublishCoreMsg carries headers
// on core NATS, and counts them in the size it checks.
func TestPublishWithHeadersAndOptions(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.Streams = map[string]stream.Config{"EVENTS": {Subjects: []string{"events.>"}}}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}

	msg := &nats.Msg{Subject: "events.h", Data: []byte("1"), Header: nats.Header{"Trace": {"t-1"}, nats.MsgIdHdr: {"id-1"}}}
	for i, wantDup := range []bool{false, true} {
		f, err := c.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := f.Wait(ctx)
		if err != nil || ack.Sequence != 1 || ack.Duplicate != wantDup {
			t.Fatalf("PublishMsg #%d: %+v, %v; want sequence 1, duplicate %v", i+1, ack, err, wantDup)
		}
	}
	f, err := c.PublishMsg(ctx, &nats.Msg{Subject: "events.h", Data: []byte("2")}, publisher.WithMsgID("id-2"), publisher.WithExpectLastSequence(7))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); err == nil {
		t.Fatal("PublishMsg expecting last sequence 7 of a stream at 1: acknowledged")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.GetMsg(ctx, 1)
	if err != nil || stored.Header.Get("Trace") != "t-1" || stored.Header.Get(nats.MsgIdHdr) != "id-1" {
		t.Fatalf("stored: %+v, %v", stored, err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("the stream holds %d messages, want 1", n)
	}

	sub, err := nc.SubscribeSync("core.h")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PublishCoreMsg(ctx, &nats.Msg{Subject: "core.h", Data: []byte("x"), Header: nats.Header{"Trace": {"t-2"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := sub.NextMsgWithContext(ctx)
	if err != nil || got.Header.Get("Trace") != "t-2" || string(got.Data) != "x" {
		t.Fatalf("core message: %+v, %v", got, err)
	}
	limit := nc.MaxPayload()
	big := &nats.Msg{Subject: "core.h", Data: make([]byte, limit-4), Header: nats.Header{"Trace": {"t-3"}}}
	err = c.PublishCoreMsg(ctx, big)
	if !errors.Is(err, publisher.ErrTooLarge) || !errors.Is(err, nats.ErrMaxPayload) ||
		!strings.Contains(err.Error(), "bytes of data and headers, the server accepts "+strconv.FormatInt(limit, 10)) {
		t.Fatalf("PublishCoreMsg of data that fits with headers that do not: %v", err)
	}
}
