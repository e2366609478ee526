package subject

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Each value is refused one byte past its limit, with an error that names
// its length and the limit, and accepted at the limit. The lengths are
// written out so that the test also runs against code without the limits.
func TestLengthLimits(t *testing.T) {
	subj := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name  string
		check func(string) error
		limit int
	}{
		{"literal subject", func(s string) error { return Validate(s, false) }, 2000},
		{"wildcard subject", func(s string) error { return Validate(s, true) }, 2000},
		{"queue group", ValidateQueue, 2000},
		{"bucket", ValidBucket, 251},
	} {
		if err := tc.check(subj(tc.limit)); err != nil {
			t.Errorf("%s of %d bytes: %v, want it accepted", tc.name, tc.limit, err)
		}
		for _, n := range []int{tc.limit + 1, 70000} {
			err := tc.check(subj(n))
			want := fmt.Sprintf("%d bytes, the limit is %d", n, tc.limit)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s of %d bytes: %v, want an error saying %q", tc.name, n, err, want)
			}
			if !errors.Is(err, ErrTooLong) {
				t.Errorf("%s of %d bytes: %v, want ErrTooLong", tc.name, n, err)
			}
		}
	}
}

// A subscription's control line holds a subject and a queue group, a
// publish's a subject and a reply: at their limits both still fit in the
// server's default max_control_line.
func TestLimitsFitOneControlLine(t *testing.T) {
	const maxControlLine = 4096 // nats-server's default
	sub := fmt.Sprintf("%s %s %d", strings.Repeat("s", MaxLen), strings.Repeat("q", MaxLen), uint64(1<<64-1))
	hpub := fmt.Sprintf("%s %s %d %d", strings.Repeat("s", MaxLen), strings.Repeat("r", MaxLen), uint64(1<<64-1), uint64(1<<64-1))
	for verb, args := range map[string]string{"SUB": sub, "HPUB": hpub} {
		if len(args) > maxControlLine {
			t.Errorf("%s arguments of %d bytes, want at most %d", verb, len(args), maxControlLine)
		}
	}
	if got := len("OBJ_") + MaxBucketLen; got > MaxNameLen {
		t.Errorf("a store's stream name of %d bytes, want at most %d", got, MaxNameLen)
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{
		"settings-watch": true, "a_b": true, strings.Repeat("n", 255): true, strings.Repeat("n", 256): false,
		"": false, "a.b": false, "a b": false, "a*": false, "a>": false, "a/b": false, `a\b`: false, "a\nb": false,
	} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", head(name), err, ok)
		}
	}
	if err := ValidName(strings.Repeat("n", 256)); !errors.Is(err, ErrTooLong) ||
		!strings.Contains(err.Error(), "256 bytes, the limit is 255") {
		t.Errorf("ValidName of 256 bytes: %v, want ErrTooLong naming both lengths", err)
	}
}
