package consumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
)

type order struct {
	ID    int    `json:"id"`
	Item  string `json:"item"`
	Price int    `json:"price,omitempty"`
}

// A typed core handler gets each payload decoded; one that cannot be
// decoded never reaches it and is counted as a failure.
func TestTypedCoreHandler(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := make(chan order, 4)
	h := consumer.Typed(func(ctx context.Context, o order, m *consumer.Msg) error {
		got <- o
		return nil
	})
	if err := e.sup.Handle("typed", consumer.Config{Subject: "typed"}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("typed", 1, []byte(`{"id":`))
	e.publish("typed", 1, []byte(`{"id":7,"item":"pen"}`))
	if o := <-got; o != (order{ID: 7, Item: "pen"}) {
		t.Fatalf("decoded: got %+v, want order 7, pen", o)
	}
	eventually(t, "both counted", func() bool {
		c := e.status("typed").Counters
		return c.Processed+c.Failed == 2
	})
	cleanStop(t, stop)
	if c := e.status("typed").Counters; c.Processed != 1 || c.Failed != 1 || len(got) != 0 {
		t.Fatalf("counters %+v, %d more handled: want 1 processed, 1 failed, the bad one never handled", c, len(got))
	}
}

// A JetStream payload that cannot be decoded is terminated at its first
// delivery, with the decode error as the reason: never naked, never
// redelivered, while the good messages around it are acked.
func TestTypedJetStreamTerminatesUndecodable(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "TYPED", Subjects: []string{"typed.>"}})
	advisories, err := e.pub.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.TYPED.typed")
	if err != nil {
		t.Fatal(err)
	}
	var handled []order
	h := consumer.Typed(func(ctx context.Context, o order, m *consumer.Msg) error {
		handled = append(handled, o) // one worker
		return nil
	})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "TYPED", MaxDeliver: 5, Backoff: []time.Duration{time.Millisecond}}}
	if err := e.sup.Handle("typed", cfg, h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range []string{`{"id":1}`, `["not", "an", "order"]`, `{"id":3}`} {
		if _, err := e.js.Publish(ctx, "typed.created", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	stop := e.serve()
	eventually(t, "settled", func() bool {
		c := e.status("typed").Counters
		return c.Acked == 2 && c.Terminated == 1
	})
	msg, err := advisories.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
		Reason     string `json:"reason"`
	}
	if err := json.Unmarshal(msg.Data, &adv); err != nil {
		t.Fatal(err)
	}
	want := "decode payload of typed.created as consumer_test.order: json: cannot unmarshal array"
	if adv.StreamSeq != 2 || adv.Deliveries != 1 || !strings.Contains(adv.Reason, want) {
		t.Fatalf("terminated: got %+v, want sequence 2 at its first delivery, reason containing %q", adv, want)
	}
	cleanStop(t, stop)
	if c := e.status("typed").Counters; c.Naked != 0 || c.Redelivered != 0 || c.Processed != 2 || c.Failed != 1 {
		t.Fatalf("counters: %+v", c)
	}
	if len(handled) != 2 || handled[0].ID != 1 || handled[1].ID != 3 {
		t.Fatalf("handled %+v, want orders 1 and 3", handled)
	}
}

// upper is a codec of strings sent upper-cased, refusing empty payloads.
type upper struct{}

func (upper) Encode(v string) ([]byte, error) { return []byte(strings.ToUpper(v)), nil }
func (upper) Decode(b []byte) (string, error) {
	if len(b) == 0 {
		return "", errors.New("empty")
	}
	return strings.ToLower(string(b)), nil
}

// A typed request handler decodes the request and encodes its reply, with
// JSON or a codec; a request it cannot decode is answered 400 (a client
// error, not a failure) naming what could not be decoded, and its errors
// are answered as a RequestHandler's are.
func TestTypedRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	calls := 0
	quote := consumer.TypedRequest(func(ctx context.Context, o order, m *consumer.Msg) (order, error) {
		calls++ // one worker
		if o.Item == "" {
			return order{}, consumer.Errorf(404, "no item")
		}
		o.Price = 42
		return o, nil
	})
	echo := consumer.TypedRequestWith[string, string](upper{}, nil, func(ctx context.Context, s string, m *consumer.Msg) (string, error) {
		return s + "!", nil
	})
	if err := e.sup.HandleRequest("quote", consumer.Config{Subject: "svc.quote"}, quote); err != nil {
		t.Fatal(err)
	}
	if err := e.sup.HandleRequest("echo", consumer.Config{Subject: "svc.echo"}, echo); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(2)
	request := func(subject, data string) *nats.Msg {
		t.Helper()
		reply, err := e.pub.Request(subject, []byte(data), 10*time.Second)
		if err != nil {
			t.Fatalf("%s %s: %v", subject, data, err)
		}
		return reply
	}

	if r := request("svc.quote", `{"id":1,"item":"pen"}`); string(r.Data) != `{"id":1,"item":"pen","price":42}` || consumer.ResponseError(r) != nil {
		t.Fatalf("reply: got %q (%v)", r.Data, consumer.ResponseError(r))
	}
	want := &consumer.ServiceError{Code: 400,
		Description: `decode payload of svc.quote as consumer_test.order: invalid character 'o' in literal null (expecting 'u')`}
	if se := consumer.ResponseError(request("svc.quote", `not json`)); se == nil || *se != *want {
		t.Fatalf("undecodable: got %v, want %v", se, want)
	}
	if se := consumer.ResponseError(request("svc.quote", `{"id":2}`)); se == nil || se.Code != 404 {
		t.Fatalf("handler's error: got %v, want 404", se)
	}
	// A nil response codec is JSON.
	if r := request("svc.echo", "hi"); string(r.Data) != `"hi!"` {
		t.Fatalf("echo: got %q, want %q", r.Data, `"hi!"`)
	}
	if se := consumer.ResponseError(request("svc.echo", "")); se == nil || se.Code != 400 || !strings.Contains(se.Description, "as string: empty") {
		t.Fatalf("echo of nothing: got %v, want a 400 naming string", se)
	}
	eventually(t, "counted", func() bool {
		c := e.status("quote").Counters
		return c.Processed+c.Failed == 3
	})
	cleanStop(t, stop)
	if c := e.status("quote").Counters; c.ClientErrors != 2 || c.Failed != 0 || calls != 2 {
		t.Fatalf("counters %+v, %d calls: want 2 client errors, no failure, the undecodable one never handled", c, calls)
	}
}

// A typed handler of a nil function is refused as a nil handler, and a
// nil codec means JSON.
func TestTypedNil(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.sup.Handle("h", consumer.Config{Subject: "x"}, consumer.Typed[order](nil)); !errors.Is(err, consumer.ErrNilHandler) {
		t.Fatalf("Handle: got %v, want ErrNilHandler", err)
	}
	if err := e.sup.HandleRequest("r", consumer.Config{Subject: "y"}, consumer.TypedRequest[order, order](nil)); !errors.Is(err, consumer.ErrNilHandler) {
		t.Fatalf("HandleRequest: got %v, want ErrNilHandler", err)
	}
	var got order
	h := consumer.TypedWith(nil, func(ctx context.Context, o order, m *consumer.Msg) error {
		got = o
		return nil
	})
	if err := e.sup.Handle("json", consumer.Config{Subject: "json"}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("json", 1, []byte(`{"id":5}`))
	eventually(t, "handled", func() bool { return e.status("json").Counters.Processed == 1 })
	cleanStop(t, stop)
	if got.ID != 5 {
		t.Fatalf("got %+v, want order 5", got)
	}
}

// A typed handler gets each payload decoded from JSON; a typed request
// handler also answers with its reply encoded, and answers 400 to a
// request it cannot decode.
func ExampleTyped() {
	type Order struct {
		ID   int    `json:"id"`
		Item string `json:"item"`
	}
	type Quote struct {
		Item  string `json:"item"`
		Cents int    `json:"cents"`
	}
	handled := make(chan Order, 1)
	exampleGroup(func(g *consumer.Group) int {
		_ = g.Handle("orders", consumer.Config{Subject: "orders.created"},
			consumer.Typed(func(ctx context.Context, o Order, m *consumer.Msg) error {
				handled <- o
				return nil
			}))
		_ = g.HandleRequest("quotes", consumer.Config{Subject: "svc.quote"},
			consumer.TypedRequest(func(ctx context.Context, o Order, m *consumer.Msg) (Quote, error) {
				return Quote{Item: o.Item, Cents: 42}, nil
			}))
		return 2
	}, func(ctx context.Context, nc *nats.Conn) {
		_ = nc.Publish("orders.created", []byte(`{"id":1,"item":"pen"}`))
		fmt.Printf("handled: %+v\n", <-handled)
		reply, err := nc.RequestWithContext(ctx, "svc.quote", []byte(`{"id":2,"item":"ink"}`))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("quote:", string(reply.Data))
		reply, err = nc.RequestWithContext(ctx, "svc.quote", []byte(`ink please`))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(consumer.ResponseError(reply))
	})
	// Output:
	// handled: {ID:1 Item:pen}
	// quote: {"item":"ink","cents":42}
	// service error 400: decode payload of svc.quote as consumer_test.Order: invalid character 'i' looking for beginning of value
}
