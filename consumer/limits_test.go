package consumer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/supervisor"
)

// A handler whose subject or queue group is too long for the server's
// control line is refused when it is declared, naming the length and the
// limit: subscribed, it would make the server close the connection the
// other handlers share, again after every reconnect. The handler already
// serving keeps answering on the same connection, and a handler whose
// subject and queue group are both at the limit subscribes and answers.
func TestSubjectTooLongIsRefusedAtDeclaration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.HandleRequest("ok", consumer.Config{Subject: "limits.ok"}, echo()); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	long := strings.Repeat("s", 5000)
	for name, cfg := range map[string]consumer.Config{
		"subject": {Subject: long},
		"queue":   {Subject: "limits.q", QueueGroup: long},
	} {
		err := e.sup.HandleRequest(name, cfg, echo())
		if want := "5000 bytes, the limit is 2000"; !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("handler with a 5000-byte %s: %v, want supervisor.ErrInvalidConfig saying %q", name, err, want)
		}
	}
	atLimit := strings.Repeat("s", 2000)
	cfg := consumer.Config{Subject: atLimit, QueueGroup: strings.Repeat("q", 2000)}
	if err := e.sup.HandleRequest("at-limit", cfg, echo()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the handler at the limit ready", func() bool { return e.status("at-limit").Ready })
	for _, subject := range []string{"limits.ok", atLimit} {
		if reply, err := e.pub.Request(subject, []byte("ping"), 5*time.Second); err != nil || string(reply.Data) != "ping" {
			t.Fatalf("request to a %d-byte subject: %v, %v", len(subject), reply, err)
		}
	}
	if err := e.sub.Flush(); err != nil {
		t.Fatal(err)
	}
	if r := e.sub.Stats().Reconnects; r != 0 {
		t.Fatalf("the handlers' connection reconnected %d times, want 0", r)
	}
	if st := e.status("ok"); st.Counters.Processed != 1 {
		t.Fatalf("handler ok: %+v, want 1 processed", st.Counters)
	}
	cleanStop(t, stop)
}
