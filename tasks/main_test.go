package tasks_test

import (
	"os"
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChildWorker())
	}
	leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...)
}
