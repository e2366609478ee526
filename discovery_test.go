package corral_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/internal/natstest"
)

// A running Client answers the fleet's requests: a ping with its
// identity, a status request with its Status as JSON; once it stops, it
// no longer answers.
func TestClientAnswersTheFleet(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "orders", Discovery: corral.DiscoveryConfig{Version: "v1.2.3"}}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, srv.URL())
	found, err := fleet.Ping(ctx, nc, fleet.Query{Name: "orders", Wait: 500 * time.Millisecond})
	if err != nil || len(found) != 1 {
		t.Fatalf("ping: %+v, %v; want the Client", found, err)
	}
	if in, want := found[0].Identity, c.Identity(); in.ID != want.ID || in.Version != "v1.2.3" || in.Host != want.Host || in.PID != want.PID {
		t.Fatalf("ping: %+v, want %+v", in, want)
	}
	found, err = fleet.Status(ctx, nc, fleet.Query{Name: "orders", ID: c.Identity().ID, Expect: 1, Wait: 5 * time.Second})
	if err != nil || len(found) != 1 {
		t.Fatalf("status: %+v, %v; want the Client's", found, err)
	}
	var st corral.Status
	if err := json.Unmarshal(found[0].Status, &st); err != nil || st.Name != "orders" || !st.Running || st.Connection.URL == "" {
		t.Fatalf("status: %+v, %v", st, err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if found, err := fleet.Ping(ctx, nc, fleet.Query{Name: "orders", Wait: 300 * time.Millisecond}); err != nil || len(found) != 0 {
		t.Fatalf("ping after the stop: %+v, %v; want no answer", found, err)
	}
}

// Discovery off: no child, and no answer.
func TestDiscoveryCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	off := false
	cfg := corral.Config{Name: "quiet", Discovery: corral.DiscoveryConfig{Enabled: &off}}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range c.Status().Children {
		if ch.Name == "discovery" {
			t.Fatal("a discovery child with discovery off")
		}
	}
	nc := natstest.Connect(t, srv.URL())
	if found, err := fleet.Ping(ctx, nc, fleet.Query{Wait: 300 * time.Millisecond}); err != nil || len(found) != 0 {
		t.Fatalf("ping: %+v, %v; want no answer", found, err)
	}
	if c.Identity().ID == "" || c.Identity().Name != "quiet" {
		t.Fatalf("identity: %+v", c.Identity())
	}
}

// A name that cannot be a subject token is refused at New while
// discovery is on, naming the field and the way out.
func TestDiscoveryNeedsATokenName(t *testing.T) {
	_, err := corral.New(corral.Config{Name: "orders.api"}, embeddedServer)
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "name:") ||
		!strings.Contains(err.Error(), "discovery.enabled: false") {
		t.Fatalf("New: %v, want name refused, saying discovery.enabled: false", err)
	}
	off := false
	if err := (corral.Config{Name: "orders.api", Discovery: corral.DiscoveryConfig{Enabled: &off}}).Validate(); err != nil {
		t.Fatalf("with discovery off: %v", err)
	}
}
