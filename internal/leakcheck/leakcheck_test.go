package leakcheck

import (
	"bytes"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The checker checks its own tests; none of them runs in parallel, since
// each reads every goroutine of the process.
func TestMain(m *testing.M) { VerifyTestMain(m) }

// blockTop is block's name as a stack prints it.
const blockTop = "github.com/corral-go/corral/internal/leakcheck.block"

// block is the goroutine the tests leave running: it waits until release
// is closed, then closes done.
func block(release <-chan struct{}, done chan<- struct{}) {
	<-release
	close(done)
}

// startBlocked starts block in a goroutine, waits until it is blocked,
// and returns the func that releases it, safe to call again and from any
// goroutine. The test's cleanup releases it and waits until it has
// returned, so that no test leaves it to the next.
func startBlocked(t *testing.T) (release func()) {
	t.Helper()
	ch, done := make(chan struct{}), make(chan struct{})
	go block(ch, done)
	release = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(func() {
		release()
		<-done
	})
	// Until it runs, a new goroutine is listed runnable, with its go
	// statement's wrapper on top.
	for deadline := time.Now().Add(5 * time.Second); !blocked(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("block is not blocked after 5s:\n%+v", goroutines())
		}
	}
	return release
}

// blocked reports whether a goroutine waits in block.
func blocked() bool {
	for _, g := range goroutines() {
		if g.top == blockTop && g.state == "chan receive" {
			return true
		}
	}
	return false
}

func TestFindNamesABlockedGoroutine(t *testing.T) {
	startBlocked(t)
	start := time.Now()
	err := Find()
	if err == nil {
		t.Fatal("Find returned nil with a goroutine left blocked")
	}
	if waited := time.Since(start); waited < Patience {
		t.Errorf("Find gave up after %v, want it to wait %v", waited, Patience)
	}
	for _, want := range []string{
		"leakcheck: found 1 unexpected goroutine still running after 3s:",
		"in state chan receive, with " + blockTop + " on top of the stack:",
		blockTop + "(", "created by " + blockTop[:strings.LastIndexByte(blockTop, '.')] + ".startBlocked",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Find's error lacks %q:\n%v", want, err)
		}
	}
}

func TestFindWaitsForAGoroutineThatExits(t *testing.T) {
	release := startBlocked(t)
	if leaked := find(0, nil); len(leaked) != 1 || leaked[0].top != blockTop {
		t.Fatalf("before the release, one look found %+v, want the blocked goroutine", leaked)
	}
	// block returns a moment after Find has begun to look.
	timer := time.AfterFunc(200*time.Millisecond, release)
	defer timer.Stop()
	if err := Find(); err != nil {
		t.Fatalf("Find reported a goroutine that exits after 200ms: %v", err)
	}
}

func TestFindIgnoresATopFunction(t *testing.T) {
	startBlocked(t)
	if err := Find(blockTop); err != nil {
		t.Fatalf("Find reported a goroutine whose top function it was told to ignore: %v", err)
	}
	if leaked := find(10*time.Millisecond, []string{"example.com/other.f", blockTop + "x"}); len(leaked) != 1 {
		t.Fatalf("ignoring other functions, Find found %+v, want the blocked goroutine", leaked)
	}
}

func TestFindAfterEverythingStopped(t *testing.T) {
	for range 3 {
		startBlocked(t)()
	}
	// Waiting for each to return is the cleanups' work: Find must still
	// see none once they have.
	t.Run("stopped", func(t *testing.T) {
		for range 3 {
			startBlocked(t)()
		}
	})
	if err := Find(); err != nil {
		t.Fatalf("Find with every goroutine stopped: %v", err)
	}
}

// signal.Notify starts os/signal's loop, which runs until the process
// exits: it is the standard library's, not a leak.
func TestFindIgnoresTheSignalLoop(t *testing.T) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	signal.Stop(ch)
	var loop bool
	for _, g := range goroutines() {
		loop = loop || g.top == "os/signal.signal_recv"
	}
	if !loop {
		t.Fatalf("no os/signal loop after signal.Notify:\n%+v", goroutines())
	}
	if err := Find(); err != nil {
		t.Fatalf("Find reported the signal loop: %v", err)
	}
}

// The default filters, on listings in runtime.Stack's format: those of
// goroutines the tests cannot start without side effects (a tracer, cgo)
// or that runtime.Stack hides today (signal.Notify's mask thread, a cgo
// callback's runtime.goexit) included.
func TestIgnored(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listing string
		ignored bool
	}{
		{"the test runner", `goroutine 1 [chan receive]:
testing.(*T).Run(0xc000007860, {0x5bd2e3?, 0x0?}, 0x5dd1a0)
	/usr/local/go/src/testing/testing.go:2109 +0x4e5
testing.runTests.func1(0xc000007860)
	/usr/local/go/src/testing/testing.go:2585 +0x3e
`, true},
		{"a paused parallel test", `goroutine 18 [chan receive, 3 minutes]:
testing.(*T).Parallel(0xc000102008)
	/usr/local/go/src/testing/testing.go:1803 +0x230
created by testing.(*T).Run in goroutine 8
	/usr/local/go/src/testing/testing.go:2101 +0x4c5
`, true},
		{"the test runner in a select", `goroutine 1 [select]:
testing.(*T).Run(0xc000007860, {0x5bd2e3?, 0x0?}, 0x5dd1a0)
	/usr/local/go/src/testing/testing.go:2109 +0x4e5
`, false},
		{"the signal loop", `goroutine 17 [syscall]:
os/signal.signal_recv()
	/usr/local/go/src/runtime/sigqueue.go:152 +0x98
os/signal.loop()
	/usr/local/go/src/os/signal/signal_unix.go:23 +0x13
created by os/signal.Notify.func1.1 in goroutine 8
	/usr/local/go/src/os/signal/signal.go:152 +0x1f
`, true},
		{"signal.Notify's mask thread", `goroutine 5 [select, locked to thread]:
runtime.ensureSigM.func1()
	/usr/local/go/src/runtime/signal_unix.go:1060 +0x19f
created by runtime.ensureSigM in goroutine 1
	/usr/local/go/src/runtime/signal_unix.go:1043 +0xd6
`, true},
		{"the tracer's reader", `goroutine 9 [chan receive]:
runtime.ReadTrace()
	/usr/local/go/src/runtime/trace.go:798 +0x2e
runtime/trace.Start.func1()
	/usr/local/go/src/runtime/trace/trace.go:130 +0x45
created by runtime/trace.Start in goroutine 7
	/usr/local/go/src/runtime/trace/trace.go:128 +0xcb
`, true},
		{"a cgo callback's", `goroutine 3 [syscall, locked to thread]:
runtime.goexit({})
	/usr/local/go/src/runtime/asm_amd64.s:1700 +0x1
`, true},
		{"a syscall of the code's own", `goroutine 12 [syscall]:
syscall.Syscall(0x0, 0x3, 0xc000180000, 0x8000)
	/usr/local/go/src/syscall/syscall_linux.go:73 +0x25
example.com/app.read()
	/app/read.go:9 +0x1d
created by example.com/app.start in goroutine 1
	/app/read.go:5 +0x1d
`, false},
		{"an ignored function on top", `goroutine 40 [select]:
github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop(0xc000bc8008, 0xc0002c2a80, 0xc0002c2af0)
	/root/go/pkg/mod/github.com/nats-io/nats-server/v2@v2.15.3/server/filestore.go:11071 +0x12f
created by github.com/nats-io/nats-server/v2/server.newFileStoreWithCreated in goroutine 36
	/root/go/pkg/mod/github.com/nats-io/nats-server/v2@v2.15.3/server/filestore.go:533 +0x1a9a
`, true},
		{"an ignored function lower down", `goroutine 41 [chan receive]:
example.com/app.wait(...)
	/app/wait.go:3
github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop(0xc000bc8008, 0xc0002c2a80, 0xc0002c2af0)
	/root/go/pkg/mod/github.com/nats-io/nats-server/v2@v2.15.3/server/filestore.go:11071 +0x12f
`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := parse(tc.listing)
			if len(gs) != 1 {
				t.Fatalf("parsed %d goroutines, want 1: %+v", len(gs), gs)
			}
			ignore := []string{"github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"}
			if got := gs[0].ignored(ignore); got != tc.ignored {
				t.Errorf("ignored: got %v, want %v, for %+v", got, tc.ignored, gs[0])
			}
		})
	}
}

func TestParse(t *testing.T) {
	gs := parse(`goroutine 7 [running]:
example.com/app.check()
	/app/check.go:4 +0x3d

goroutine 23 [chan receive, 2 minutes]:
example.com/app.(*worker).wait[...](0xc000010000)
	/app/worker.go:12 +0x2a
...additional frames elided...
created by example.com/app.start in goroutine 7
	/app/worker.go:5 +0x1d
[originating from goroutine 7]:
example.com/app.start(...)
	/app/worker.go:5 +0x1d
`)
	if len(gs) != 2 {
		t.Fatalf("parsed %d goroutines, want 2: %+v", len(gs), gs)
	}
	if g := gs[0]; g.id != "7" || g.state != "running" || g.top != "example.com/app.check" {
		t.Errorf("first: %+v", g)
	}
	g := gs[1]
	if g.id != "23" || g.state != "chan receive, 2 minutes" || g.top != "example.com/app.(*worker).wait[...]" || len(g.funcs) != 1 {
		t.Errorf("second: %+v, want only wait, not its creator or ancestors, among its functions", g)
	}
	if !strings.HasPrefix(g.stack, "example.com/app.(*worker).wait[...](0xc000010000)\n") || !strings.Contains(g.stack, "created by example.com/app.start") {
		t.Errorf("second's stack:\n%s", g.stack)
	}
}

// VerifyTestMain looks only once the tests passed, and fails the binary
// when something leaked, saying what.
func TestVerify(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     int  // the tests' exit code
		leak     bool // the tests leave block running
		wantCode int
		wantOut  string
	}{
		{"passed, nothing left", 0, false, 0, ""},
		{"passed, a goroutine left", 0, true, 1, "leakcheck: the tests passed, but found 1 unexpected goroutine still running after 50ms:\n\n" +
			"Goroutine "},
		{"failed, a goroutine left", 1, true, 1, ""},
		{"failed, nothing left", 2, false, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			run := func() int {
				if tc.leak {
					startBlocked(t)
				}
				return tc.code
			}
			code := verify(run, &stderr, 50*time.Millisecond, nil)
			if code != tc.wantCode {
				t.Errorf("exit code: got %d, want %d", code, tc.wantCode)
			}
			if !strings.HasPrefix(stderr.String(), tc.wantOut) || (tc.wantOut == "") != (stderr.Len() == 0) {
				t.Errorf("printed %q, want it to begin %q", stderr.String(), tc.wantOut)
			}
			if tc.wantOut != "" && !strings.Contains(stderr.String(), "with "+blockTop+" on top of the stack:\n"+blockTop+"(") {
				t.Errorf("printed no stack of block:\n%s", stderr.String())
			}
		})
	}
}
