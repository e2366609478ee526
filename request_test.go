package corral_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

type order struct {
	N int `json:"n"`
}

type doubled struct {
	Twice int `json:"twice"`
}

// bindEcho binds svc.echo (upper-cases the data, returns the Trace
// header, answers "bad" with a 400) and svc.double (JSON) on c.
func bindEcho(t *testing.T, c *corral.Client) {
	t.Helper()
	err := c.HandleRequest("echo", consumer.Config{Subject: "svc.echo"}, consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		if string(m.Data()) == "bad" {
			return consumer.Reply{}, consumer.Errorf(400, "bad input")
		}
		return consumer.Reply{Data: bytes.ToUpper(m.Data()), Header: nats.Header{"Trace": {m.Header().Get("Trace")}}}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.HandleRequest("double", consumer.Config{Subject: "svc.double"}, consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		var o order
		if err := json.Unmarshal(m.Data(), &o); err != nil {
			return consumer.Reply{}, consumer.Errorf(400, "%v", err)
		}
		data, err := json.Marshal(doubled{Twice: 2 * o.N})
		return consumer.Reply{Data: data}, err
	}))
	if err != nil {
		t.Fatal(err)
	}
}

func ready(t *testing.T, c *corral.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// A request gets its reply, with headers and as JSON; a service error,
// from Corral's request handlers and from a nats.go micro service, is a
// *consumer.ServiceError; no responders is ErrNoResponders, at once.
func TestRequest(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := newOutageClient(t, srv, nil)
	bindEcho(t, c)
	running(t, c)
	ready(t, c)
	nc := plainConn(t, srv.URL())
	defer nc.Close()
	svc, err := micro.AddService(nc, micro.Config{Name: "overloaded", Version: "1.0.0", Endpoint: &micro.EndpointConfig{
		Subject: "svc.micro",
		Handler: micro.HandlerFunc(func(r micro.Request) { _ = r.Error("503", "overloaded", nil) }),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Stop() }()
	// The service subscribes on nc; the Client asks on its own connection,
	// so the server must have nc's subscription first.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reply, err := c.Request(ctx, "svc.echo", []byte("hi"))
	if err != nil || string(reply.Data) != "HI" {
		t.Fatalf("Request: %v, %v", reply, err)
	}
	reply, err = c.RequestMsg(ctx, &nats.Msg{Subject: "svc.echo", Data: []byte("hdr"), Header: nats.Header{"Trace": {"t-7"}}})
	if err != nil || reply.Header.Get("Trace") != "t-7" {
		t.Fatalf("RequestMsg: %v, %v", reply, err)
	}
	got, err := corral.RequestJSON[doubled](ctx, c, "svc.double", order{N: 21})
	if err != nil || got.Twice != 42 {
		t.Fatalf("RequestJSON: %+v, %v", got, err)
	}
	if _, err := corral.RequestJSON[doubled](ctx, c, "svc.echo", "not json back"); err == nil || !strings.Contains(err.Error(), `request to "svc.echo": decode the reply: `) {
		t.Fatalf("RequestJSON of a reply that is not JSON: %v", err)
	}

	for _, tc := range []struct {
		subject, data string
		code          int
		text          string
	}{
		{"svc.echo", "bad", 400, `request to "svc.echo": service error 400: bad input`},
		{"svc.micro", "", 503, `request to "svc.micro": service error 503: overloaded`},
	} {
		_, err := c.Request(ctx, tc.subject, []byte(tc.data))
		var se *consumer.ServiceError
		if !errors.As(err, &se) || se.Code != tc.code || err.Error() != tc.text {
			t.Errorf("Request to %s: got %v, want a *consumer.ServiceError: %s", tc.subject, err, tc.text)
		}
	}

	_, err = c.Request(ctx, "svc.nobody", nil)
	if !errors.Is(err, corral.ErrNoResponders) || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("Request with no responders: got %v, want ErrNoResponders and nats.ErrNoResponders", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("no responders waited until the ctx ended")
	}
	if want := `corral: no responders: nothing subscribes to "svc.nobody"`; err.Error() != want {
		t.Fatalf("error: got %q, want %q", err, want)
	}
}

// A request made just after the connection closed for good waits for its
// replacement and gets its reply on it; so does every later one.
func TestRequestFollowsAReplacedConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	// The responder has its own connection, which stays up.
	responder := plainConn(t, srv.URL())
	defer responder.Close()
	if _, err := responder.Subscribe("svc.gen", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if err := responder.Flush(); err != nil {
		t.Fatal(err)
	}
	c := outageClient(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Request(ctx, "svc.gen", []byte("first")); err != nil {
		t.Fatal(err)
	}
	first, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // closed for good: the supervisor makes a new connection
	for _, data := range []string{"right after", "later"} {
		reply, err := c.Request(ctx, "svc.gen", []byte(data))
		if err != nil || string(reply.Data) != data {
			t.Fatalf("Request %s the close: %v, %v", data, reply, err)
		}
	}
	if gen := c.ConnectionSupervisor().Status().Generation; gen < 2 {
		t.Fatalf("generation %d: the connection was not replaced", gen)
	}
}

// While disconnected, a request waits for the connection within its ctx
// (the default) and then gets its reply, or with
// requests.wait_for_connection: false fails at once with ErrDisconnected.
func TestRequestWhileDisconnected(t *testing.T) {
	t.Parallel()
	t.Run("waits", func(t *testing.T) {
		t.Parallel()
		srv := natstest.RunServer(t)
		c := newOutageClient(t, srv, nil)
		bindEcho(t, c)
		running(t, c)
		ready(t, c)
		srv.Shutdown()
		waitConnState(t, c, "reconnecting", reconnecting)

		short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := c.Request(short, "svc.echo", []byte("lost"))
		if want := `request to "svc.echo": waiting for the connection: context deadline exceeded`; err == nil || err.Error() != want {
			t.Fatalf("Request while reconnecting: got %v, want %s", err, want)
		}
		long, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		type result struct {
			reply *nats.Msg
			err   error
		}
		done := make(chan result, 1)
		go func() {
			reply, err := c.Request(long, "svc.echo", []byte("waited"))
			done <- result{reply, err}
		}()
		srv.Start()
		if r := <-done; r.err != nil || string(r.reply.Data) != "WAITED" {
			t.Fatalf("Request once the server is up: %v, %v", r.reply, r.err)
		}
	})
	t.Run("fails at once", func(t *testing.T) {
		t.Parallel()
		srv := natstest.RunServer(t)
		srv.Shutdown()
		c := outageClient(t, srv, func(cfg *corral.Config) {
			no := false
			cfg.Requests.WaitForConnection = &no
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		check := func(state connection.State) {
			t.Helper()
			_, err := c.Request(ctx, "svc.echo", nil)
			want := `corral: not connected: request to "svc.echo": the connection is ` + string(state) + ` (requests.wait_for_connection: false)`
			if !errors.Is(err, corral.ErrDisconnected) || err.Error() != want {
				t.Fatalf("Request: got %v, want %s", err, want)
			}
			if ctx.Err() != nil {
				t.Fatalf("Request waited for the connection")
			}
		}
		waitConnState(t, c, "connecting", func(st connection.Status) bool { return st.State == connection.StateConnecting })
		check(connection.StateConnecting) // before the first connection
		srv.Start()
		waitConn(t, c)
		responder := plainConn(t, srv.URL())
		defer responder.Close()
		if _, err := responder.Subscribe("svc.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
			t.Fatal(err)
		}
		if err := responder.Flush(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Request(ctx, "svc.echo", nil); err != nil {
			t.Fatalf("Request while connected: %v", err)
		}
		srv.Shutdown()
		waitConnState(t, c, "reconnecting", reconnecting)
		check(connection.StateReconnecting)
	})
}

// A request whose ctx has no deadline gets requests.timeout.
func TestRequestTimeoutWithoutADeadline(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	silent := plainConn(t, srv.URL())
	defer silent.Close()
	if _, err := silent.SubscribeSync("svc.silent"); err != nil {
		t.Fatal(err)
	}
	if err := silent.Flush(); err != nil {
		t.Fatal(err)
	}
	c := outageClient(t, srv, func(cfg *corral.Config) { cfg.Requests.Timeout = 200 * time.Millisecond })
	waitConn(t, c)
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), "svc.silent", nil)
		done <- err
	}()
	select {
	case err := <-done:
		if want := `request to "svc.silent": no reply: context deadline exceeded`; !errors.Is(err, context.DeadlineExceeded) || err.Error() != want {
			t.Fatalf("got %v, want %s", err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request without a deadline was not bounded by requests.timeout")
	}
}

// The requests section reads from YAML and the environment, and a
// negative timeout is refused.
func TestRequestsConfig(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte("requests: {wait_for_connection: false, timeout: 2s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Requests.WaitForConnection; w == nil || *w || cfg.Requests.Timeout != 2*time.Second {
		t.Fatalf("parsed: %+v", cfg.Requests)
	}
	if err := cfg.ApplyEnv([]string{"CORRAL_REQUESTS_WAIT_FOR_CONNECTION=true"}); err != nil {
		t.Fatal(err)
	}
	if w := cfg.Requests.WaitForConnection; w == nil || !*w {
		t.Fatalf("after the environment: %+v", cfg.Requests)
	}
	cfg.Requests.Timeout = -time.Second
	if err := cfg.Validate(); !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "requests.timeout: must not be negative, got -1s") {
		t.Fatalf("Validate: %v", err)
	}
	cfg.Requests.Timeout = 87601 * time.Hour
	if err := cfg.Validate(); !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "requests.timeout: must be between 0s and 87600h0m0s") {
		t.Fatalf("Validate of a timeout past ten years: %v", err)
	}
}

func ExampleRequestJSON() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)
	var cfg corral.Config
	cfg.Server.StoreDir = dir
	c, _ := corral.New(cfg, embeddedServer)
	_ = c.HandleRequest("double", consumer.Config{Subject: "svc.double"}, consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		var o order
		if err := json.Unmarshal(m.Data(), &o); err != nil || o.N < 0 {
			return consumer.Reply{}, consumer.Errorf(400, "want a count, got %s", m.Data())
		}
		data, err := json.Marshal(doubled{Twice: 2 * o.N})
		return consumer.Reply{Data: data}, err
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	reqCtx, reqCancel := context.WithTimeout(ctx, 10*time.Second)
	defer reqCancel()
	if err := c.Ready(reqCtx); err != nil {
		fmt.Println(err)
		return
	}
	d, err := corral.RequestJSON[doubled](reqCtx, c, "svc.double", order{N: 21})
	fmt.Println(d.Twice, err)
	_, err = corral.RequestJSON[doubled](reqCtx, c, "svc.double", order{N: -1})
	if se := (*consumer.ServiceError)(nil); errors.As(err, &se) {
		fmt.Println(se.Code, se.Description)
	}
	_, err = c.Request(reqCtx, "svc.nobody", nil)
	fmt.Println(errors.Is(err, corral.ErrNoResponders), err)
	// Output:
	// 42 <nil>
	// 400 want a count, got {"n":-1}
	// true corral: no responders: nothing subscribes to "svc.nobody"
}
