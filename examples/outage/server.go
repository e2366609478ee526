package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
)

// serve is the child: an embedded nats-server with JetStream on a port of
// its own choosing, which it prints on stdout once it accepts clients.
func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	store := fs.String("store", "", "JetStream store directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, err := embedded.New(corral.ServerConfig{StoreDir: *store})
	if err != nil {
		return err
	}
	go func() {
		if url, err := srv.ClientURL(ctx); err == nil {
			fmt.Println(strings.TrimPrefix(url, "nats://"))
		}
	}()
	if err := srv.Serve(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// server runs this program as a child nats-server, behind a relay whose
// address stays the same across restarts.
type server struct {
	store  string
	relay  *relay
	cmd    *exec.Cmd
	exited chan struct{} // closed when the running child has exited
}

// start starts the child and points the relay at it once it accepts
// clients.
func (s *server) start() error {
	cmd := exec.Command(os.Args[0], "-server", "-store", s.store)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addr <- strings.TrimSpace(line) // empty if it exited first
	}()
	select {
	case a := <-addr:
		if a == "" {
			return fmt.Errorf("the child server exited at start: %w", cmd.Wait())
		}
		s.relay.setTarget(a)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-addr
		_ = cmd.Wait()
		return errors.New("the child server did not start within 30s")
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	exited := s.exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

// kill kills the child (SIGKILL) and waits for it to exit. The relay
// refuses clients until the next start.
func (s *server) kill() {
	s.relay.setTarget("")
	_ = s.cmd.Process.Kill()
	<-s.exited
}
