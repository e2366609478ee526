package natstest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Child is a process a test started: a server, or a worker program, that
// the test kills, pauses and resumes. It is killed when the test ends.
type Child struct {
	t      testing.TB
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

// StartChild starts cmd, keeping what it writes to stdout and stderr.
func StartChild(t testing.TB, cmd *exec.Cmd) *Child {
	t.Helper()
	c := &Child{t: t, cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = (*lockedWriter)(c), (*lockedWriter)(c)
	if err := cmd.Start(); err != nil {
		t.Fatalf("natstest: start %s: %v", cmd.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(c.Kill)
	return c
}

// lockedWriter is a Child's output, written by the process's copying
// goroutines and read by the test.
type lockedWriter Child

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(b)
}

// Output is what the process has written so far.
func (c *Child) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// Pid is the process's id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Kill sends SIGKILL and waits for the process to exit: it has no chance
// to clean up. A no-op once it has exited.
func (c *Child) Kill() { c.signalAndWait(syscall.SIGKILL) }

// Terminate sends SIGTERM and waits for the process to exit.
func (c *Child) Terminate() { c.signalAndWait(syscall.SIGTERM) }

// Signal sends sig to the process.
func (c *Child) Signal(sig syscall.Signal) {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(sig)
	}
}

// Pause stops the process (SIGSTOP) and returns once every thread of it
// has stopped: its sockets stay open but nothing is read or answered.
// kill(2) only queues SIGSTOP, so without the wait a thread could still
// answer a request sent right after Pause.
func (c *Child) Pause() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("natstest: SIGSTOP: %v", err)
	}
	// WSTOPPED reports the group stop once it is complete; WNOWAIT leaves
	// the state for the goroutine that waits for the exit.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, c.cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			c.t.Fatalf("natstest: wait for SIGSTOP to take effect: %v", err)
		}
		return
	}
}

// Resume continues a paused process (SIGCONT) and returns once it runs.
func (c *Child) Resume() {
	c.t.Helper()
	c.Signal(syscall.SIGCONT)
	c.waitState(func(s byte) bool { return s != 'T' && s != 't' }, "running")
}

// waitState polls the process state in /proc until ok accepts it. Signals
// are delivered asynchronously; without this a test could act before the
// process is stopped.
func (c *Child) waitState(ok func(byte) bool, want string) {
	c.t.Helper()
	path := fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			return // exited
		}
		// The state follows the parenthesised command name.
		if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) && ok(data[i+2]) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: process not %s after 10s", want)
		}
		time.Sleep(time.Millisecond)
	}
}

// Wait waits until the process has exited.
func (c *Child) Wait() { <-c.exited }

func (c *Child) signalAndWait(sig syscall.Signal) {
	select {
	case <-c.exited:
		return
	default:
	}
	if sig != syscall.SIGKILL {
		_ = c.cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot act on SIGTERM
	}
	_ = c.cmd.Process.Signal(sig)
	c.Wait()
}
