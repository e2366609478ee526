package natstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Ports are picked from outside the kernel's ephemeral range, where
// neither an outgoing connection nor a listener on port 0 can take one,
// and reserved with a lock file that every test process on the machine
// honours. Ports below 10000 are left to the services a machine runs.
const (
	portsLow  = 10000
	portsHigh = 65535
)

// ReservePort returns a free loopback port that no other test process
// will pick until this test ends. A server that restarts binds its port
// again; with a port from the ephemeral range, whatever another process
// bound in between (a server, a client's connection) would answer in its
// place.
func ReservePort(t testing.TB) int {
	t.Helper()
	ports := reservable()
	dir := filepath.Join(os.TempDir(), "corral-natstest-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	for range 10 * len(ports) {
		port := ports[rand.IntN(len(ports))]
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
	t.Fatalf("natstest: no free port among %d outside the ephemeral range", len(ports))
	return 0
}

// reservable is the ports from portsLow to portsHigh outside the kernel's
// ephemeral range. Where the range covers them all, it is every one of
// them, and a restarted server may find its port taken by a connection.
func reservable() []int {
	lo, hi := ephemeralRange()
	var ports []int
	for p := portsLow; p <= portsHigh; p++ {
		if p < lo || p > hi {
			ports = append(ports, p)
		}
	}
	if len(ports) == 0 {
		for p := portsLow; p <= portsHigh; p++ {
			ports = append(ports, p)
		}
	}
	return ports
}

// ephemeralRange is the kernel's range for ports it picks itself: Linux's
// setting for this network namespace, or IANA's dynamic range elsewhere.
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err == nil && lo <= hi {
			return lo, hi
		}
	}
	return 49152, 65535
}
