package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/corraltest"
)

// start runs the kit's Client until the test ends, waits until it is
// ready, and returns a ctx for the test's calls.
func start(t *testing.T, k *corraltest.Kit) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	k.Start(ctx)
	return ctx
}
