package natstest

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// Ports are picked from below the kernel's ephemeral range (32768 and up
// on Linux by default), where neither an outgoing connection nor a
// listener on port 0 can take one, and reserved with a lock file that
// every test process on the machine honours.
const (
	portsFrom  = 20000
	portsCount = 10000
)

// ReservePort returns a free loopback port that no other test process
// will pick until this test ends. A server that restarts binds its port
// again; with a port from the ephemeral range, whatever another process
// bound in between (a server, a client's connection) would answer in its
// place.
func ReservePort(t testing.TB) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "corral-natstest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	for range 10 * portsCount {
		port := portsFrom + rand.IntN(portsCount)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatalf("natstest: %v", err)
		}
		// The lock is the process's until the file closes, or it exits.
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			_ = f.Close()
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil { // bound by something that is not a test
			_ = f.Close()
			continue
		}
		_ = ln.Close()
		t.Cleanup(func() { _ = f.Close() })
		return port
	}
	t.Fatalf("natstest: no free port in [%d, %d)", portsFrom, portsFrom+portsCount)
	return 0
}
