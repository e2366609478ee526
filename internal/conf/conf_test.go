package conf

import (
	"errors"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"512", 512, true}, {"8MiB", 8 << 20, true}, {"1GB", 1e9, true}, {"64 KiB", 64 << 10, true},
		{"-1", -1, true}, {"12XB", 0, false}, {"lots", 0, false}, {"9000000000GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseByteSize(%q): got %d, %v", tt.in, got, err)
		}
	}
}

func TestProblemsNestAndJoin(t *testing.T) {
	inner := NewProblems("")
	inner.Addf("port", "bad")
	outer := NewProblems("")
	outer.Merge("server", inner.Err())
	outer.Under("list").Addf("[2]", "empty")
	err := outer.Err()
	if !errors.Is(err, ErrInvalid) || err.Error() != "invalid config: server.port: bad; list[2]: empty" {
		t.Fatalf("got %v", err)
	}
}
