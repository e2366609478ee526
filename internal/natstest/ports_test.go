package natstest_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/corral-go/corral/internal/natstest"
)

// ReservePort never hands out a port that is still reserved: with 200 picks
// from its 10,000 ports, unlocked picks would repeat one most of the time.
func TestReservePortHandsOutEachPortOnce(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 200 {
		port := natstest.ReservePort(t)
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		if port >= 32768 {
			t.Fatalf("port %d is in the kernel's ephemeral range", port)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("reserved port %d: %v", port, err)
		}
		_ = ln.Close()
	}
}
