package consumer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/supervisor"
)

// Each declaration error reads once, from the outside in: the package
// prefix and the handler's name come first, and neither again.
func TestDeclarationErrorsReadOnce(t *testing.T) {
	g := consumer.NewGroup(connection.NewFixed(nil), supervisor.Events{})
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	if err := g.Handle("fromfile", consumer.Config{Subject: "a"}, ok); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		declare func() error
	}{
		{"duplicate", func() error { return g.Handle("fromfile", consumer.Config{Subject: "a"}, ok) }},
		{"nil handler", func() error { return g.Handle("h1", consumer.Config{Subject: "a"}, nil) }},
		{"nil request handler", func() error { return g.HandleRequest("h2", consumer.Config{Subject: "a"}, nil) }},
		{"invalid", func() error { return g.Handle("h3", consumer.Config{Subject: "a..b"}, ok) }},
		{"reject", func() error { return g.Handle("h4", consumer.Config{Subject: "a", Overflow: consumer.Reject}, ok) }},
		{"bad name", func() error { return g.Handle("a b", consumer.Config{Subject: "a"}, ok) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.declare()
			if err == nil {
				t.Fatal("declared")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "consumer: handler") || strings.Count(msg, "consumer:") != 1 || strings.Count(msg, "handler") > 2 {
				t.Fatalf("got %q, want one \"consumer:\" prefix, then the handler, each once", msg)
			}
		})
	}
	if got, want := g.Handle("fromfile", consumer.Config{Subject: "a"}, ok).Error(), `consumer: handler "fromfile": already declared`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
