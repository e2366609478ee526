package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

func TestQuickstartRunsAndExits(t *testing.T) {
	// The quickstart keeps its data under the working directory.
	t.Chdir(t.TempDir())
	t.Setenv("NATS_URL", "")

	var out bytes.Buffer
	if err := run(context.Background(), nil, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"event: connection.connected", "├── connection", "running", "stopped:",
		`handler greetings received: "hello, corral"`, "endpoint clock answered: ", "code 400",
		`handler orders processed order #1: 3 x widget (stream sequence`,
		"watch settings-watch saw put greeting = {Text:hello Shout:false}",
		"watch settings-watch saw put greeting = {Text:hello Shout:true}",
		"object report.csv: put 22000 bytes", "got 22000 bytes back", "└── settings-watch",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The configuration file beside the quickstart retunes what its code
// declares, and the stream it declares is the one the code's handler uses.
func TestQuickstartRunsWithItsConfigFile(t *testing.T) {
	path, err := filepath.Abs("corral.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("NATS_URL", "")

	var out bytes.Buffer
	if err := run(context.Background(), []string{"-config", path}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`handler orders processed order #1: 3 x widget (stream sequence`, "stream=QUICKSTART consumer=orders workers=8",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
