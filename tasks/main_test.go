package tasks_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChildWorker())
	}
	goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}
