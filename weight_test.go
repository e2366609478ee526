package corral_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// heavy are the modules a program that connects to configured servers
// must not link: the server, metrics, tracing and their dependencies,
// and what only tests use.
var heavy = []string{
	"github.com/nats-io/nats-server", "github.com/prometheus/", "go.opentelemetry.io/",
	"google.golang.org/protobuf", "github.com/chromedp/", "go.uber.org/goleak",
}

// maxClientOnlySize is the most a client-only program may weigh, in
// bytes, built as go build builds it by default.
const maxClientOnlySize = 15 << 20

// A program that imports only the root package and connects to configured
// servers links none of the heavy modules (the embedded server, ops and
// tracing are packages of their own), and stays under 15 MiB.
func TestClientOnlyProgramLinksNoServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(deps)) {
		for _, h := range heavy {
			if strings.HasPrefix(dep, h) {
				t.Errorf("the root package depends on %s", dep)
			}
		}
	}

	bin := filepath.Join(t.TempDir(), "clientonly")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/clientonly").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxClientOnlySize {
		t.Errorf("a client-only program weighs %.1f MiB, more than %d MiB", float64(info.Size())/(1<<20), maxClientOnlySize>>20)
	}
	mods, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	for _, line := range strings.Split(string(mods), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "dep" {
			continue
		}
		for _, h := range heavy {
			if strings.HasPrefix(f[1], h) {
				t.Errorf("a client-only program links %s", f[1])
			}
		}
	}
	t.Logf("a client-only program: %.1f MiB", float64(info.Size())/(1<<20))
}

// testOnly are modules only tests and examples use: the library's go.mod
// does not list them, so its users' module graphs get none from it.
var testOnly = []string{
	"github.com/chromedp/", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/",
	"go.uber.org/goleak",
}

// The library's go.mod requires no module that only its tests and
// examples use: those live in the modules internal/e2e and
// examples/tracing.
func TestGoModRequiresNoTestOnlyModule(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		for _, m := range testOnly {
			if strings.HasPrefix(strings.TrimSpace(line), m) {
				t.Errorf("go.mod requires %s", strings.TrimSpace(line))
			}
		}
	}
}
