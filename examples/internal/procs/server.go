package procs

import (
	"context"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
)

// StartServer runs the embedded server, storing in dir, until the stop it
// returns is called; it returns the server's client URL.
func StartServer(ctx context.Context, dir string) (url string, stop func(), err error) {
	srv, err := embedded.New(corral.ServerConfig{StoreDir: dir})
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx) }()
	stop = func() { cancel(); <-done }
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if url, err = srv.ClientURL(wctx); err != nil {
		stop()
		return "", nil, err
	}
	return url, stop, nil
}
