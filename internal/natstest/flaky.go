package natstest

import (
	"context"
	"errors"
	"testing"
)

// Flaky is a service (a watch, a child of a tree) that runs until its
// context ends, or fails when told to.
type Flaky struct {
	name string
	fail chan struct{}
}

// NewFlaky returns a Flaky service named name.
func NewFlaky(name string) *Flaky {
	return &Flaky{name: name, fail: make(chan struct{}, 1)}
}

// String is the service's name.
func (f *Flaky) String() string { return f.name }

// Serve runs until ctx ends, or returns an error when FailOnce tells it to.
func (f *Flaky) Serve(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-f.fail:
		return errors.New("told to fail")
	}
}

// FailOnce makes the service's current or next run fail; it fails the
// test when the last failure was not taken yet.
func (f *Flaky) FailOnce(t testing.TB) {
	t.Helper()
	select {
	case f.fail <- struct{}{}:
	default:
		t.Fatal("the last failure was not taken yet")
	}
}
