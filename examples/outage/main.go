// Command outage publishes 50,000 messages through the buffered publisher
// while its server, a child process, is killed (SIGKILL) and restarted
// twice. It reads the stream back and exits 0 only if every message is
// there exactly once:
//
//	go run ./examples/outage
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
)

const messages = 50_000

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if len(os.Args) > 1 && os.Args[1] == "-server" {
		err = serve(ctx, os.Args[2:])
	} else {
		err = run(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "corral-outage")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	relay, err := newRelay()
	if err != nil {
		return err
	}
	defer relay.close()
	srv := &server{store: dir, relay: relay}
	if err := srv.start(); err != nil {
		return err
	}
	defer srv.kill()

	// The buffer holds every message, so Publish never waits: what is
	// published while the server is down waits in the buffer.
	var cfg corral.Config
	cfg.Name = "outage"
	cfg.Connection.Servers = []string{relay.URL()}
	cfg.Publisher = publisher.Config{BufferMsgs: messages, OnFull: publisher.Block,
		Streams: map[string]stream.Config{"OUTAGE": {Subjects: []string{"outage.>"}}}}
	client, err := corral.New(cfg)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()

	futures, err := publishThroughOutages(ctx, client, srv, out)
	if err != nil {
		return err
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer waitCancel()
	for i, f := range futures {
		if _, err := f.Wait(waitCtx); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return report(waitCtx, client, len(futures), out)
}

// publishThroughOutages publishes every message while the server goes
// down twice, and returns each message's Future, in order.
func publishThroughOutages(ctx context.Context, client *corral.Client, srv *server, out io.Writer) ([]*publisher.Future, error) {
	ctx, stopPublishing := context.WithCancel(ctx)
	defer stopPublishing()
	futures := make([]*publisher.Future, messages)
	published := make(chan error, 1)
	go func() {
		for i := range futures {
			f, err := client.Publish(ctx, "outage.events", []byte(strconv.Itoa(i)))
			if err != nil {
				published <- err
				return
			}
			futures[i] = f
		}
		published <- nil
	}()
	if err := outages(ctx, client, srv, out); err != nil {
		stopPublishing()
		<-published
		return nil, err
	}
	if err := <-published; err != nil {
		return nil, err
	}
	return futures, nil
}

// outages kills the server once a third of the messages are acknowledged,
// and again at two thirds, and starts it again a second later each time.
func outages(ctx context.Context, client *corral.Client, srv *server, out io.Writer) error {
	for _, at := range []uint64{messages / 3, 2 * messages / 3} {
		for client.Status().Publisher.Acked < at {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-srv.exited:
				return errors.New("the child server exited by itself")
			case <-time.After(time.Millisecond):
			}
		}
		srv.kill()
		fmt.Fprintf(out, "server killed after %d acks; restarting in 1s\n", client.Status().Publisher.Acked)
		time.Sleep(time.Second) // the outage
		if err := srv.start(); err != nil {
			return err
		}
	}
	return nil
}

// report reads the stream back and prints the summary; it fails if a
// message is missing or stored more than once.
func report(ctx context.Context, client *corral.Client, acked int, out io.Writer) error {
	stored, counts, err := readBack(ctx, client)
	if err != nil {
		return err
	}
	duplicates, lost := 0, 0
	for i := range messages {
		switch c := counts[strconv.Itoa(i)]; {
		case c == 0:
			lost++
		case c > 1:
			duplicates += c - 1
		}
	}
	st := client.Status().Publisher
	fmt.Fprintf(out, "publisher: retried %d sends, %d were already stored\n", st.Retried, st.Duplicates)
	fmt.Fprintf(out, "summary: published=%d acked=%d stored=%d duplicates=%d lost=%d\n",
		messages, acked, stored, duplicates, lost)
	if lost != 0 || duplicates != 0 {
		return fmt.Errorf("lost %d, duplicated %d", lost, duplicates)
	}
	return nil
}

// readBack reads the whole stream and counts each payload.
func readBack(ctx context.Context, client *corral.Client) (int, map[string]int, error) {
	nc, err := client.Conn(ctx)
	if err != nil {
		return 0, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, nil, err
	}
	s, err := js.Stream(ctx, "OUTAGE")
	if err != nil {
		return 0, nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, nil, err
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return 0, nil, err
	}
	counts := map[string]int{}
	n := 0
	for uint64(n) < info.State.Msgs {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return 0, nil, err
		}
		for m := range batch.Messages() {
			counts[string(m.Data())]++
			n++
		}
		if err := batch.Error(); err != nil {
			return 0, nil, err
		}
	}
	return n, counts, nil
}
