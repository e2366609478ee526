package corraltest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/corraltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, corraltest.IgnoreServerLeaks()...) }
