package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func TestEveryUpdateSeenOnceThroughARestart(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"restarting the server after 1000 updates",
		" gaps=0 duplicates=0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Watcher b fails once on purpose; a transient error around the
	// server restart may add a restart, which gaps and duplicates, not
	// this count, show to be harmless.
	r := regexp.MustCompile(`watcher b: config-watch restarts=(\d+) `).FindStringSubmatch(out.String())
	if r == nil {
		t.Fatalf("output lacks watcher b's restarts:\n%s", out.String())
	}
	if n, _ := strconv.Atoi(r[1]); n < 1 {
		t.Errorf("watcher b restarted %d times, want at least the one it caused:\n%s", n, out.String())
	}
	// A put retried after a lost reply may add a revision: the count is
	// the bucket's, and each watcher must have seen exactly that many.
	m := regexp.MustCompile(`summary: updates=(\d+) seen_a=(\d+) seen_b=(\d+) `).FindStringSubmatch(out.String())
	if m == nil || m[1] != m[2] || m[1] != m[3] {
		t.Fatalf("summary: %v\n%s", m, out.String())
	}
	if n, _ := strconv.Atoi(m[1]); n < 2000 {
		t.Fatalf("updates=%d, want at least 2000", n)
	}
}
