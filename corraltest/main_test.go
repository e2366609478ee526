package corraltest_test

import (
	"testing"

	"github.com/corral-go/corral/corraltest"
)

func TestMain(m *testing.M) { corraltest.VerifyTestMain(m) }
