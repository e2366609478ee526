package natstest

import (
	"testing"
)

// ReservePort never hands out a port that is still reserved, nor one the
// kernel could give a connection: among its ~27,000 ports, 200 unlocked
// picks would repeat one about half the time.
func TestReservePortHandsOutEachPortOnce(t *testing.T) {
	t.Parallel()
	lo, hi := ephemeralRange()
	outside := len(reservable()) < portsHigh-portsLow+1 // else no port is
	seen := map[int]bool{}
	for range 200 {
		port := ReservePort(t)
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		if outside && port >= lo && port <= hi {
			t.Fatalf("port %d is in the kernel's ephemeral range [%d, %d]", port, lo, hi)
		}
	}
}
