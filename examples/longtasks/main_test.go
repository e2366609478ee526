package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// The example's own check (no task lost, none completed twice) holds, and
// the killed and cut-off workers' tasks went through recovery.
func TestNoTaskLostOrCompletedTwice(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "completed=2000 lost=0 duplicate_completions=0 recovered=") || strings.Contains(s, "recovered=0 keepalive") {
		t.Fatalf("summary:\n%s", s)
	}
}
