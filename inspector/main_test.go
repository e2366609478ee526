package inspector_test

import (
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }
