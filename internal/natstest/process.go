package natstest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const serverModule = "github.com/nats-io/nats-server/v2"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// ServerBinary returns the path of a nats-server binary built from the
// module version this module requires. It is built once into the user's
// cache directory and reused by later test runs.
func ServerBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { buildPath, buildErr = buildServer() })
	if buildErr != nil {
		t.Fatalf("natstest: build nats-server: %v", buildErr)
	}
	return buildPath
}

func buildServer() (string, error) {
	// A test binary's build info lists no dependencies; ask the go command.
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", serverModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", serverModule, err)
	}
	version := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "corral-natstest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("nats-server-%s-%s-%s", version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	// Build beside the target and rename, so that concurrent test
	// processes never run a half-written binary.
	tmp, err := os.CreateTemp(dir, "build-*")
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	cmd := exec.Command("go", "build", "-o", tmp.Name(), serverModule)
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("%v: %s", err, out)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}

// Process is a nats-server running as a child process, with JetStream, on
// a loopback port that stays the same across restarts.
type Process struct {
	t     testing.TB
	bin   string
	dir   string
	mu    sync.Mutex
	port  int
	child *Child // the running server, nil between runs
}

// StartProcess starts a child-process server and kills it when the test
// ends.
func StartProcess(t testing.TB) *Process {
	t.Helper()
	p := &Process{t: t, bin: ServerBinary(t), dir: t.TempDir()}
	p.Start()
	t.Cleanup(p.Kill)
	return p
}

// Start starts the server (again), on the port of its first start.
func (p *Process) Start() {
	p.t.Helper()
	p.mu.Lock()
	if p.child != nil {
		p.mu.Unlock()
		p.t.Fatalf("natstest: process already running")
	}
	if p.port == 0 {
		p.port = ReservePort(p.t)
	}
	port := p.port
	p.mu.Unlock()
	// The name tells this server's INFO from another's, should anything
	// else answer on the port.
	name := fmt.Sprintf("natstest-process-%d", port)
	// The shortest lame duck the server takes, so that LameDuck is a fault
	// a test can wait out (the default spreads the closing over two
	// minutes).
	cfg := fmt.Sprintf("listen: \"127.0.0.1:%d\"\nserver_name: %q\njetstream { store_dir: %q }\n"+
		"lame_duck_duration: \"30s\"\nlame_duck_grace_period: \"1s\"\n",
		port, name, filepath.Join(p.dir, "store"))
	cfgPath := filepath.Join(p.dir, "server.conf")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		p.t.Fatalf("natstest: %v", err)
	}
	child := StartChild(p.t, exec.Command(p.bin, "-c", cfgPath))
	p.mu.Lock()
	p.child = child
	p.mu.Unlock()

	deadline := time.Now().Add(15 * time.Second)
	for !answers(port, name) {
		select {
		case <-child.exited:
			p.t.Fatalf("natstest: nats-server exited at start: %s", child.Output())
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			p.t.Fatalf("natstest: nats-server not ready after 15s: %s", child.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answers reports whether the server named name answers with INFO on port.
func answers(port int, name string) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "INFO") && strings.Contains(line, `"server_name":"`+name+`"`)
}

// URL is the client URL, stable across restarts.
func (p *Process) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "nats://127.0.0.1:" + strconv.Itoa(p.port)
}

// Kill sends SIGKILL and waits for the server to exit. A no-op when it is
// not running.
func (p *Process) Kill() { p.stopped(func(c *Child) { c.Kill() }) }

// Terminate asks the server to shut down gracefully (SIGTERM) and waits.
func (p *Process) Terminate() { p.stopped(func(c *Child) { c.Terminate() }) }

// LameDuck puts the server in lame-duck mode (SIGUSR2): it stops accepting
// clients and closes the existing ones over its lame-duck duration, then
// exits. Wait returns when it has.
func (p *Process) LameDuck() {
	if c := p.running(); c != nil {
		c.Signal(syscall.SIGUSR2)
	}
}

// Pause stops the server (SIGSTOP): see Child.Pause.
func (p *Process) Pause() {
	if c := p.running(); c != nil {
		c.Pause()
	}
}

// Resume continues a paused server (SIGCONT) and returns once it runs.
func (p *Process) Resume() {
	if c := p.running(); c != nil {
		c.Resume()
	}
}

// Wait waits until the server has exited.
func (p *Process) Wait() { p.stopped(func(c *Child) { c.Wait() }) }

func (p *Process) running() *Child {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.child
}

// stopped runs stop on the running server, if any, which is then no
// longer running.
func (p *Process) stopped(stop func(*Child)) {
	c := p.running()
	if c == nil {
		return
	}
	stop(c)
	p.mu.Lock()
	if p.child == c {
		p.child = nil
	}
	p.mu.Unlock()
}
