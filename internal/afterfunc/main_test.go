package afterfunc_test

import (
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
