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

// The run is sound (its times, which main bounds, are a benchmark's to
// judge on a shared machine, and logged), and it printed its line.
func TestJobs(t *testing.T) {
	var out bytes.Buffer
	s, err := run(context.Background(), &out)
	t.Log(out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := s.sound(); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "jobs: scheduled=200 early=0 ") || !strings.Contains(s, " duplicates_refused=100 ") ||
		!strings.Contains(s, " lost=0") {
		t.Fatalf("summary:\n%s", s)
	}
}
