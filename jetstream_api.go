package corral

import (
	"maps"
	"slices"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
)

// A stream the Client declares lives in one JetStream: a task queue's
// stream in the queue's, a stream a handler of Config.Handlers consumes in
// the handler's, any other in the publisher's. Each is declared only
// there: by the publisher when it is the publisher's, by its handlers and
// workers otherwise. Publishing needs no JetStream: a message reaches the
// stream that stores its subject, in whichever domain it is.

// JetStreamAPI is the JetStream the Client reaches unless a section
// names its own (Config.JetStreamAPI). For nats.go's API on the live
// connection:
//
//	nc, err := client.Conn(ctx)
//	js, err := client.JetStreamAPI().New(nc)
func (c *Client) JetStreamAPI() connection.JetStreamAPI { return c.cfg.JetStreamAPI }

// publisherAPI is the JetStream the publisher declares its streams in.
func (c Config) publisherAPI() connection.JetStreamAPI {
	return c.Publisher.JetStreamAPI.Or(c.JetStreamAPI)
}

// streamAPIs returns the JetStream each declared stream lives in, and
// reports to p a stream that two of its users would declare in two
// JetStreams.
func (c Config) streamAPIs(p conf.Problems) map[string]connection.JetStreamAPI {
	apis := map[string]connection.JetStreamAPI{}
	owner := map[string]string{}
	claim := func(stream, field string, api connection.JetStreamAPI) {
		if other, ok := apis[stream]; ok && other != api {
			p.Addf(field+".jetstream", "is %v, but stream %s is also used by %s in %v: a stream is declared in one JetStream; give them the same jetstream",
				api, stream, owner[stream], other)
			return
		}
		apis[stream], owner[stream] = api, field
	}
	for _, queue := range slices.Sorted(maps.Keys(c.Tasks)) {
		name, _ := c.Tasks[queue].QueueStream(queue)
		claim(name, "tasks."+queue, c.Tasks[queue].JetStreamAPI.Or(c.JetStreamAPI))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		if h := c.Handlers[name]; h.IsJetStream() {
			claim(h.Stream, "handlers."+name, h.JetStreamAPI.Or(c.JetStreamAPI))
		}
	}
	for name := range c.taskStreams(c.declaredStreams()) {
		if _, ok := apis[name]; !ok {
			apis[name] = c.publisherAPI()
		}
	}
	return apis
}

// inAPI checks that stream, if the Client declares it, lives in api: a
// handler or worker declares and uses its stream, its queue's and its
// dead-letter stream in its own JetStream only. what says whose stream it
// is ("its dead-letter"); a mismatch is reported to p under field.
func (c *Client) inAPI(p conf.Problems, field, stream, what string, api connection.JetStreamAPI) bool {
	home, ok := c.apis[stream]
	if ok && home != api {
		p.Addf(field, "is %v, but %s stream %s is declared in %v: give them the same jetstream", api, what, stream, home)
	}
	return !ok || home == api
}
