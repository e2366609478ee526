package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

// bin is the corral command, built once for the tests that run it.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "corral-cmd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "corral")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the corral command:", err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := leakcheck.Find(natstest.IgnoreServerLeaks()...); err != nil {
			fmt.Fprintln(os.Stderr, "leakcheck: the tests passed, but", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
