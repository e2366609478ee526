package ops_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }
