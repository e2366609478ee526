package procs

import (
	"context"
	"sync"
	"time"

	"github.com/corral-go/corral"
)

// Process is an example's worker process: a Client with a link of its
// own to the server, run until Stop.
type Process struct {
	Name   string
	Client *corral.Client
	Link   *Link
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Start makes a Client of cfg, named name, that reaches the server at url
// (nats://host:port) through a link of its own; setup declares what it
// runs; then it runs until Stop.
func Start(ctx context.Context, url, name string, cfg corral.Config, setup func(*corral.Client) error) (*Process, error) {
	l, err := NewLink(url[len("nats://"):])
	if err != nil {
		return nil, err
	}
	cfg.Name = name
	cfg.Connection.Servers = []string{l.URL()}
	c, err := corral.New(cfg)
	if err == nil {
		err = setup(c)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Process{Name: name, Client: c, Link: l, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- c.Run(rctx) }()
	return p, nil
}

// Stop stops the Client, waits for it and closes its link, once.
func (p *Process) Stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.Link.Close()
	})
}

// Until polls cond every period until it holds, for at most two minutes.
func Until(ctx context.Context, every time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t := time.NewTicker(every)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
