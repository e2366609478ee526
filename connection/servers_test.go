package connection_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
)

// A server URL that does not parse is not shown, not even redacted: cut
// inside its password (at a comma of a list variable), it has no "@"
// that tells the password from the host. The error says how to write
// the comma. A port out of range is refused.
func TestServerURLMistakes(t *testing.T) {
	t.Parallel()
	cfg := connection.Config{Servers: []string{
		"nats://alice:S3cr3t", "Tail@127.0.0.1:4222", "Tail@127.0.0.1", "nats://bob:Pw0rd@127.0.0.1:99999",
		"nats://127.0.0.1:0", "nats://127.0.0.1:65535",
	}}
	err := cfg.Validate()
	if !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{
		"servers[0]: not a URL (nats://…; the rest is not shown, as it may hold credentials)",
		"servers[1]: not a URL (no known scheme;",
		"servers[2]: redacted@127.0.0.1: no scheme",
		"write a comma inside credentials as %2C",
		"servers[3]: nats://bob:redacted@127.0.0.1:99999: port 99999 is not between 1 and 65535",
		"servers[4]: nats://127.0.0.1:0: port 0 is not between 1 and 65535",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant it to say %q", err, want)
		}
	}
	for _, secret := range []string{"S3cr3t", "Tail", "Pw0rd", "alice"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %q: %v", secret, err)
		}
	}
	if strings.Contains(err.Error(), "servers[5]") {
		t.Errorf("port 65535 refused: %v", err)
	}
}
