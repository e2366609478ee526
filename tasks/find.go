package tasks

import (
	"context"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
)

// QueueRef is a task queue found on a server: its name, its stream, the
// subject tasks are enqueued on (Config.Subject), and the JetStream it
// was found in (FindQueues leaves that to its caller, who knows it).
type QueueRef struct {
	Name, Stream, Subject string
	JetStreamAPI          connection.JetStreamAPI
}

// Config is the configuration that reads the queue from outside
// (NewQueue): its stream, subject and JetStream, the rest defaults. A
// queue's DeadLetter subject is its workers' to say: set it to read dead
// letters.
func (r QueueRef) Config() Config {
	return Config{Stream: r.Stream, Subject: r.Subject, JetStreamAPI: r.JetStreamAPI}
}

// FindQueues returns the task queues whose streams the server holds, by
// name: every stream that stores corral.tasks.<queue>.t.>, as a queue's
// stream does (Config.QueueStream).
func FindQueues(ctx context.Context, js jetstream.JetStream) ([]QueueRef, error) {
	var out []QueueRef
	lister := js.ListStreams(ctx, jetstream.WithStreamListSubject("corral.tasks.*.t.>"))
	for info := range lister.Info() {
		if ref, ok := queueOf(info.Config); ok {
			out = append(out, ref)
		}
	}
	if err := lister.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b QueueRef) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// queueOf reads a queue's reference from its stream's configuration.
func queueOf(cfg jetstream.StreamConfig) (QueueRef, bool) {
	ref := QueueRef{Stream: cfg.Name}
	for _, s := range cfg.Subjects {
		rest, ok := strings.CutPrefix(s, "corral.tasks.")
		if name, tail, _ := strings.Cut(rest, "."); ok && tail == "t.>" {
			ref.Name = name
		}
	}
	if ref.Name == "" {
		return QueueRef{}, false
	}
	for _, s := range cfg.Subjects {
		if !strings.HasPrefix(s, "corral.tasks."+ref.Name+".") {
			ref.Subject = s
		}
	}
	return ref, true
}
