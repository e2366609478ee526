package jsapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/conf"
)

// CheckDeadLetter makes sure some stream stores subject, a dead-letter
// subject: what is dead-lettered leaves its queue only once its copy is
// stored, so without a stream it would be tried again for ever. An empty
// subject passes. None stores it: an error wrapping conf.ErrInvalid that
// names the field and the fix; a failed lookup: its error.
func CheckDeadLetter(ctx context.Context, js jetstream.JetStream, subject string) error {
	if subject == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, err := Ask(ctx, func(ctx context.Context) (string, error) { return js.StreamNameBySubject(ctx, subject) })
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: dead_letter %q: no stream stores the subject: declare one that does "+
			"under the top-level streams: section of the configuration", conf.ErrInvalid, subject)
	}
	if err != nil {
		return fmt.Errorf("dead_letter %q: %w", subject, err)
	}
	return nil
}
