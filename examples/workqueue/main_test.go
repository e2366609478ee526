package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func TestNothingIsLost(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "dead_lettered=10 lost=0") {
		t.Fatalf("summary:\n%s", out.String())
	}
}
