package connection

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// An error whose text quotes a credential, as url.Parse's errors quote the
// URL, is reported without it and still matches what it wraps.
func TestRedactErrRemovesEverySecret(t *testing.T) {
	cfg := Config{
		Servers: []string{"nats://alice:Pa%2Css@127.0.0.1:4222", "nats://t0ken@127.0.0.1:4223"},
		Auth:    AuthConfig{User: "bob", Password: "B0bPass"},
	}
	s := &Supervisor{secrets: secrets(cfg)}
	_, parseErr := url.Parse("nats://alice:Pa,ss@127.0.0.1:4222 x")
	base := errors.New("base")
	err := fmt.Errorf("seen Pa%%2Css, Pa,ss, t0ken, B0bPass and %w: %w", base, parseErr)
	got := s.redactErr(err)
	for _, secret := range []string{"Pa%2Css", "Pa,ss", "t0ken", "B0bPass"} {
		if strings.Contains(got.Error(), secret) {
			t.Errorf("got %q, which holds %q", got, secret)
		}
	}
	if !errors.Is(got, base) {
		t.Errorf("got %v, which no longer matches what it wraps", got)
	}
	if plain := errors.New("nats: authorization violation"); s.redactErr(plain) != plain {
		t.Errorf("an error without secrets is wrapped")
	}
	if s.redactErr(nil) != nil {
		t.Errorf("nil is not kept")
	}
}
