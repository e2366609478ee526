package publisher

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
)

// A spool written by an older version may hold a message Publish refuses
// now: a subject past the server's control line, which would have it
// close the connection on every send, or a header name nats.go cannot
// encode. Recovery fails it, reported as any failed message is, and
// queues the rest.
func TestSpoolRecoveryFailsWhatPublishRefuses(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := mustOpen(t, dir, 0)
	long := &nats.Msg{Subject: strings.Repeat("a", maxSubjectLen+1), Data: []byte("long")}
	badHeader := &nats.Msg{Subject: "s", Data: []byte("header"), Header: nats.Header{"Bad:Name": {"v"}}}
	for _, m := range []*nats.Msg{testEntry(0).msg, long, badHeader, testEntry(3).msg} {
		if err := s.append(&entry{msg: m, size: msgSize(m)}); err != nil {
			t.Fatal(err)
		}
	}
	s.close()

	var mu sync.Mutex
	var failed []error
	p, err := New(Config{SpoolDir: dir, OnUndelivered: func(_ *nats.Msg, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, err)
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(failed) != 2 || !errors.Is(failed[0], ErrSubjectTooLong) || !errors.Is(failed[1], ErrBadHeader) {
		t.Errorf("reported %v, want ErrSubjectTooLong then ErrBadHeader", failed)
	}
	mu.Unlock()
	if st := p.Status(); st.Failed != 2 || st.Buffered != 2 {
		t.Errorf("status %+v: want 2 failed and 2 buffered", st)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	s, rec, _ := mustOpen(t, dir, 0)
	defer s.close()
	if got := data(rec); got != "0 3 " {
		t.Fatalf("spool holds %q, want the two messages that can be sent", got)
	}
}
