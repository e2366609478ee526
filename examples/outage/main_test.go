package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) {
	// The example runs itself as its child server.
	if len(os.Args) > 1 && os.Args[1] == "-server" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		if err := serve(ctx, os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}

func TestNothingLostNothingDuplicated(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "summary: published=50000 acked=50000 stored=50000 duplicates=0 lost=0") {
		t.Fatalf("summary:\n%s", out.String())
	}
}
