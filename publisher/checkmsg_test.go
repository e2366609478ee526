package publisher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
)

// Every message Publish refuses is refused with a sentinel a caller can
// match, and CheckMsg, what core publishes and requests check, refuses the
// same with the same errors, reply subjects too.
func TestRefusedMessagesMatchTheirSentinel(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	p, _, _ := run(t, []string{srv.URL()}, publisher.Config{})
	long := "a." + strings.Repeat("x", 3000)
	bad := []error{publisher.ErrBadSubject, nats.ErrBadSubject}
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want []error
	}{
		{"nil", nil, []error{publisher.ErrNilMsg}},
		{"empty subject", &nats.Msg{}, bad},
		{"whitespace", &nats.Msg{Subject: "not valid"}, bad},
		{"empty token", &nats.Msg{Subject: "a..b"}, bad},
		{"wildcard", &nats.Msg{Subject: "a.*"}, bad},
		{"full wildcard", &nats.Msg{Subject: "a.>"}, bad},
		{"too long", &nats.Msg{Subject: long}, []error{publisher.ErrSubjectTooLong}},
		{"bad header", &nats.Msg{Subject: "a", Header: nats.Header{"a b": {"v"}}}, []error{publisher.ErrBadHeader}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, pubErr := p.PublishMsg(ctx, tc.msg)
		cancel()
		checkErr := publisher.CheckMsg(tc.msg)
		for _, want := range tc.want {
			if !errors.Is(pubErr, want) {
				t.Errorf("%s: PublishMsg = %.200v, want %v", tc.name, pubErr, want)
			}
			if !errors.Is(checkErr, want) {
				t.Errorf("%s: CheckMsg = %.200v, want %v", tc.name, checkErr, want)
			}
		}
	}
	for _, reply := range []string{"in valid", "a.*", "a..b"} {
		err := publisher.CheckMsg(&nats.Msg{Subject: "a", Reply: reply})
		if !errors.Is(err, publisher.ErrBadSubject) || !strings.Contains(err.Error(), "reply") {
			t.Errorf("CheckMsg with reply %q = %v, want ErrBadSubject naming the reply", reply, err)
		}
	}
	if st := p.Status(); st.Published != 0 {
		t.Fatalf("%d messages accepted, want none", st.Published)
	}
}
