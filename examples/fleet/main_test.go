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

// The run sees every process, delivers nothing while paused, loses
// nothing, and prints its line.
func TestFleet(t *testing.T) {
	var out bytes.Buffer
	s, err := run(context.Background(), &out)
	t.Log(out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if line := out.String(); !strings.HasPrefix(line, "fleet: instances=3 seen_by_ps=3 waiting=20 running=6 dead=5 retried=5 cancelled=2 paused_delivered=0 lost=0") {
		t.Fatalf("summary: %s", line)
	}
}
