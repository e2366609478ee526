package publisher_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
)

// effect is what a fault must be seen to do, so that a test whose fault
// missed fails rather than pass on nothing.
type effect int

const (
	resends     effect = 1 << iota // the publisher sent messages again
	disconnects                    // the connection was lost
)

// publishThroughFault publishes a third of n messages to a child-process
// server and waits for their acks, pauses the server (SIGSTOP) and
// publishes the rest, and once some are in flight, which the paused server
// cannot acknowledge, applies fault to it. It checks that every message is
// in the stream exactly once, and that the fault had its effects. Pausing
// first is what makes the fault find messages in flight and buffered: on
// a loaded machine the publisher could otherwise finish before the fault.
func publishThroughFault(t *testing.T, n int, cc connection.Config, cfg publisher.Config, want effect,
	fault func(proc *natstest.Process, rec *natstest.Recorder)) {
	t.Helper()
	proc := natstest.StartProcess(t)
	newStream(t, proc.URL(), "FAULT", "fault")
	cc.Servers = []string{proc.URL()}
	if cc.ReconnectWait == 0 {
		cc.ReconnectWait, cc.MaxReconnectWait = 50*time.Millisecond, 200*time.Millisecond
	}
	cfg.BufferMsgs, cfg.OnFull = n, publisher.Block
	p, rec, stop := runOn(t, cc, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	futures := make([]*publisher.Future, n)
	publish := func(from, to int) error {
		for i := from; i < to; i++ {
			f, err := p.Publish(ctx, "fault", []byte(strconv.Itoa(i)))
			if err != nil {
				return err
			}
			futures[i] = f
		}
		return nil
	}
	if err := publish(0, n/3); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return p.Status().Acked >= uint64(n/3) },
		func() string { return "a third not acknowledged" })
	proc.Pause()
	published := make(chan error, 1)
	go func() { published <- publish(n/3, n) }()
	natstest.Eventually(t, 30*time.Second, func() bool { return p.Status().InFlight > 0 },
		func() string { return fmt.Sprintf("nothing in flight to the paused server: %+v", p.Status()) })
	faultAt := rec.Len()
	fault(proc, rec)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	for i, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	got := contents(t, proc.URL(), "FAULT")
	lost, dups := 0, 0
	for i := range n {
		switch got[strconv.Itoa(i)] {
		case 0:
			lost++
		case 1:
		default:
			dups++
		}
	}
	st := p.Status()
	t.Logf("acked %d, stored %d distinct, lost %d, duplicates %d; retried %d, acks of duplicates %d",
		st.Acked, len(got), lost, dups, st.Retried, st.Duplicates)
	if lost != 0 || dups != 0 || len(got) != n {
		t.Fatalf("lost %d, stored twice %d, stored %d of %d", lost, dups, len(got), n)
	}
	if want&resends != 0 && st.Retried == 0 {
		t.Fatal("nothing was sent again: the fault hit no message in flight")
	}
	if want&disconnects != 0 {
		natstest.WaitFor[connection.Disconnected](t, rec, faultAt, time.Second, nil)
	}
	if st.Failed != 0 || st.Acked != uint64(n) {
		t.Fatalf("status %+v", st)
	}
	if err := stop(); err == nil {
		t.Fatal("stop: want ctx.Err()")
	}
}

// A server killed with messages in flight to it: every one is stored once.
// Who sends them again depends on where the kill found them: in the
// socket, the publisher does (Retried); still in nats.go's buffer, nats.go
// flushes it on the new connection and the publisher sees only their
// acks. On a loaded machine either happens, so the fault is known to have
// hit by the disconnect alone.
func TestPublishThroughKill9(t *testing.T) {
	t.Parallel()
	publishThroughFault(t, 20000, connection.Config{}, publisher.Config{}, disconnects, func(proc *natstest.Process, _ *natstest.Recorder) {
		proc.Kill()
		time.Sleep(time.Second) // the outage
		proc.Start()
	})
}

// The server (paused already) stops answering without the connection
// dropping: acks time out and messages are sent again, and deduplicated
// once it answers.
func TestPublishThroughAPause(t *testing.T) {
	t.Parallel()
	publishThroughFault(t, 20000, connection.Config{}, publisher.Config{AckTimeout: 300 * time.Millisecond}, resends,
		func(proc *natstest.Process, _ *natstest.Recorder) {
			time.Sleep(2 * time.Second) // the outage: several ack timeouts, fewer than the pings that drop the connection
			proc.Resume()
		})
}

// A server stopping gracefully (SIGTERM) may acknowledge all that was in
// flight before it closes the connection, so nothing need be sent again;
// the rest waits in the buffer for the restart.
func TestPublishThroughAGracefulRestart(t *testing.T) {
	t.Parallel()
	publishThroughFault(t, 20000, connection.Config{}, publisher.Config{}, disconnects, func(proc *natstest.Process, _ *natstest.Recorder) {
		proc.Terminate()
		proc.Start()
	})
}

func TestPublishThroughALongOutage(t *testing.T) {
	t.Parallel()
	publishThroughFault(t, 20000, connection.Config{}, publisher.Config{}, resends|disconnects, func(proc *natstest.Process, _ *natstest.Recorder) {
		proc.Kill()
		time.Sleep(20 * time.Second) // the outage the buffer absorbs
		proc.Start()
	})
}

// nats.go gives up reconnecting and closes the connection; the supervisor
// makes a new one, and what was in flight on the old one is sent on it.
func TestPublishThroughAReplacedConnection(t *testing.T) {
	t.Parallel()
	cc := connection.Config{MaxReconnects: 2, ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 20 * time.Millisecond}
	publishThroughFault(t, 20000, cc, publisher.Config{}, resends|disconnects, func(proc *natstest.Process, rec *natstest.Recorder) {
		proc.Kill()
		natstest.WaitFor[connection.Closed](t, rec, 0, 30*time.Second, nil)
		proc.Start()
		natstest.WaitFor[connection.Connected](t, rec, 0, 30*time.Second, func(e connection.Connected) bool {
			return e.Generation > 1
		})
	})
}

// TestSpoolSurvivesACrash runs a publisher with a spool in a child
// process, kills it with SIGKILL while it still buffers messages, and
// checks that a new publisher on the same spool delivers them: every
// message the child accepted is in the stream exactly once.
func TestSpoolSurvivesACrash(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	s := newStream(t, srv.URL(), "SPOOL", "spool")
	dir := t.TempDir()
	const n = 20000

	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SPOOL_TEST_HELPER=1", "SPOOL_TEST_URL="+srv.URL(),
		"SPOOL_TEST_DIR="+dir, "SPOOL_TEST_N="+strconv.Itoa(n))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	accepted := map[string]bool{}
	var mu sync.Mutex
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "accepted "); ok {
				mu.Lock()
				accepted[v] = true
				mu.Unlock()
			}
		}
	}()
	// Kill it once some messages are stored and many are only buffered.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	natstest.Eventually(t, time.Minute, func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs >= n/10
	}, func() string { return "the child stored too little" })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	<-scanned
	info, _ := s.Info(ctx)
	mu.Lock()
	t.Logf("child killed after accepting %d, %d stored", len(accepted), info.State.Msgs)
	mu.Unlock()

	p, _, stop := run(t, []string{srv.URL()}, publisher.Config{SpoolDir: dir})
	natstest.Eventually(t, 30*time.Second, func() bool { return p.Status().Buffered == 0 },
		func() string { return fmt.Sprintf("the spooled messages were not all sent: %+v", p.Status()) })
	_ = stop()
	got := contents(t, srv.URL(), "SPOOL")
	mu.Lock()
	defer mu.Unlock()
	for v := range accepted {
		if got[v] == 0 {
			t.Fatalf("accepted message %s is not in the stream", v)
		}
	}
	for v, c := range got {
		if c > 1 {
			t.Fatalf("message %s stored %d times", v, c)
		}
	}
	if len(accepted) == int(info.State.Msgs) {
		t.Fatal("nothing was left in the spool: the test proved nothing")
	}
}

// TestSpoolHelperProcess is the child of TestSpoolSurvivesACrash.
func TestSpoolHelperProcess(t *testing.T) {
	if os.Getenv("SPOOL_TEST_HELPER") == "" {
		t.Skip("run by TestSpoolSurvivesACrash")
	}
	n, _ := strconv.Atoi(os.Getenv("SPOOL_TEST_N"))
	p, _, _ := run(t, []string{os.Getenv("SPOOL_TEST_URL")},
		publisher.Config{SpoolDir: os.Getenv("SPOOL_TEST_DIR"), BufferMsgs: n, MaxInFlight: 64})
	w := bufio.NewWriter(os.Stdout)
	for i := range n {
		if _, err := p.Publish(context.Background(), "spool", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "accepted %d\n", i)
		if i%100 == 0 {
			_ = w.Flush()
		}
	}
	_ = w.Flush()
	select {} // until killed
}
