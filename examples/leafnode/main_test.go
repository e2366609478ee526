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

// Every order is handled and every task recorded completed once across
// the cut, and the run prints its line.
func TestLeafNode(t *testing.T) {
	var out bytes.Buffer
	s, err := run(context.Background(), &out)
	t.Log(out.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := s.check(); err != nil {
		t.Fatal(err)
	}
	if line := out.String(); !strings.HasPrefix(line, "leafnode: orders=400 handled=400 tasks=100 completed_once=100 lost=0") {
		t.Fatalf("summary: %s", line)
	}
	if s.leasesLost == 0 {
		t.Errorf("the worker kept its lease through a cut %v long: the cut did not reach it", 3*leaseTTL)
	}
}
