package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
)

// With -serve the quickstart serves its status page and prints its URL;
// it stops cleanly when interrupted.
func TestQuickstartServesTheStatusPage(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out natstest.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-serve", "-listen", "127.0.0.1:0"}, &out) }()

	printed := regexp.MustCompile(`status page: (http://127\.0\.0\.1:\d+/)`)
	var url string
	natstest.Eventually(t, 30*time.Second, func() bool {
		m := printed.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return url != "" && strings.Contains(out.String(), "serving; interrupt to stop")
	}, func() string { return "no status page URL printed:\n" + out.String() })

	client := &http.Client{Timeout: 10 * time.Second}
	for path, want := range map[string]string{"": "quickstart", "metrics": "corral_handler_processed_total", "readyz": "ready"} {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: got %d %v, want 200 with %q:\n%.500s", url+path, resp.StatusCode, err, want, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
}
