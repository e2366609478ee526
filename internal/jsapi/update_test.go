package jsapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
)

// A stream declared again without a setting the server will not turn off
// (message TTLs, message schedules) is refused as a change it cannot make
// in place, though the server's words for it do not say "update"; the
// same code for a stream that does not exist is no such refusal.
func TestUpdateRefusedByCode(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const inPlace = "cannot be changed in place"
	for _, tc := range []struct {
		name, desc string
		cfg        jetstream.StreamConfig
	}{
		{"TTL", "message TTL status can not be disabled",
			jetstream.StreamConfig{Name: "TTL", Subjects: []string{"ttl.>"}, AllowMsgTTL: true}},
		{"SCHED", "message schedules can not be disabled",
			jetstream.StreamConfig{Name: "SCHED", Subjects: []string{"sched.>"}, AllowMsgSchedules: true}},
	} {
		if _, err := js.CreateStream(ctx, tc.cfg); err != nil {
			t.Fatal(err)
		}
		_, err := stream.Config{Subjects: tc.cfg.Subjects}.Declare(ctx, js, tc.name)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsapi.CodeStreamInvalidConfig ||
			!strings.Contains(err.Error(), tc.desc) || !strings.Contains(err.Error(), inPlace) {
			t.Errorf("declaring %s without it: %v, want %q for the server's %d %q", tc.name, err, inPlace,
				jsapi.CodeStreamInvalidConfig, tc.desc)
		}
		if !jsapi.UpdateRefused(err, true) || jsapi.UpdateRefused(err, false) {
			t.Errorf("UpdateRefused(%v): want it only for a stream that existed", err)
		}
	}
	// The same code for a name the server refuses: nothing existed.
	_, err := stream.Config{Subjects: []string{"ff"}}.Declare(ctx, js, "A\fB")
	if code, _ := jsapi.Code(err); code != jsapi.CodeStreamInvalidConfig || strings.Contains(err.Error(), inPlace) {
		t.Errorf("declaring a bad name: %v, want the server's %d, not %q", err, jsapi.CodeStreamInvalidConfig, inPlace)
	}
	if jsapi.UpdateRefused(errors.New("update refused"), true) || jsapi.UpdateRefused(nil, true) {
		t.Error("UpdateRefused of an error without a code: true, want false")
	}
}
