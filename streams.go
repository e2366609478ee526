package corral

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/stream"
)

// declaredStreams is every stream the configuration declares, by name:
// under streams, under publisher.streams, and as a handler's
// create_stream. Each is declared by the publisher when it connects, by
// every JetStream handler of it before its consumer and by every handler
// whose dead letters it stores, so none waits on another to start first.
func (c Config) declaredStreams() map[string]stream.Config {
	out := maps.Clone(c.Streams)
	if out == nil {
		out = map[string]stream.Config{}
	}
	for name, sc := range c.Publisher.Streams {
		if _, ok := out[name]; !ok {
			out[name] = sc
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		j := c.Handlers[name].JetStream
		if _, ok := out[j.Stream]; !ok && j.CreateStream != nil && j.Stream != "" {
			out[j.Stream] = *j.CreateStream
		}
	}
	return out
}

// validateStreams checks what the file can tell about its streams: each
// is valid and, written in more than one place, the same in each; no two
// store the same subject (the
// server would refuse the second), and each handler of a declared stream
// selects subjects the stream stores.
func (c Config) validateStreams(p conf.Problems) {
	for _, name := range slices.Sorted(maps.Keys(c.Streams)) {
		if err := stream.ValidName(name); err != nil {
			p.Addf("streams", "stream %v", err)
		}
		p.Merge("streams."+name, c.Streams[name].Validate())
	}
	all := c.declaredStreams()
	for _, name := range slices.Sorted(maps.Keys(c.Publisher.Streams)) {
		if !reflect.DeepEqual(c.Publisher.Streams[name], all[name]) {
			p.Addf("publisher.streams."+name, "differs from streams.%s: declare a stream once, under streams", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		j := c.Handlers[name].JetStream
		if j.CreateStream != nil && !reflect.DeepEqual(*j.CreateStream, all[j.Stream]) {
			p.Addf("handlers."+name+".create_stream", "differs from the stream %s declared elsewhere in the file: declare a stream once, under streams", j.Stream)
		}
	}
	c.validateOverlaps(p, c.taskStreams(all))
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		if field, err := checkHandlerStream(c.Handlers[name], all); err != nil {
			p.Addf("handlers."+name+"."+field, "%v", err)
		}
	}
}

// validateOverlaps reports every two streams of all that store a subject
// in common.
func (c Config) validateOverlaps(p conf.Problems, all map[string]stream.Config) {
	names := slices.Sorted(maps.Keys(all))
	for i, a := range names {
		for _, b := range names[i+1:] {
			for _, sa := range all[a].Subjects {
				for _, sb := range all[b].Subjects {
					if subject.Overlap(sa, sb) {
						p.Addf("streams", "%s's subject %q overlaps %s's %q: a subject is stored by one stream only", a, sa, b, sb)
					}
				}
			}
		}
	}
}

// checkHandlerStream checks a JetStream handler against the stream it
// consumes, when the configuration declares that stream: each subject it
// selects must be one the stream stores, and its dead letters must not be
// delivered back to it. It returns the field at fault with the error.
func checkHandlerStream(hc consumer.Config, all map[string]stream.Config) (string, error) {
	j := hc.JetStream
	sc, ok := all[j.Stream]
	if !ok || j.Stream == "" {
		return "", nil // not declared here: only the server can tell
	}
	filters := slices.DeleteFunc(append([]string{hc.Subject}, j.FilterSubjects...), func(s string) bool { return s == "" })
	for _, f := range filters {
		if !sc.Stores(f) {
			return "subject", fmt.Errorf("%q is not stored by stream %s (subjects %v)", f, j.Stream, sc.Subjects)
		}
	}
	if j.DeadLetter == "" || !sc.Stores(j.DeadLetter) {
		return "", nil
	}
	if len(filters) == 0 || slices.ContainsFunc(filters, func(f string) bool { return subject.Subset(j.DeadLetter, f) }) {
		return "dead_letter", fmt.Errorf("%q is stored by stream %s and selected by this handler: its dead letters would come back to it; use a subject of another stream", j.DeadLetter, j.Stream)
	}
	return "", nil
}

// storing returns the stream of all that stores subj, if any: at most
// one does (validateOverlaps).
func storing(all map[string]stream.Config, subj string) (string, stream.Config, bool) {
	if subj == "" {
		return "", stream.Config{}, false
	}
	for name, sc := range all {
		if sc.Stores(subj) {
			return name, sc, true
		}
	}
	return "", stream.Config{}, false
}

// withStream gives the JetStream handler name the declarations of its
// stream and of the stream that stores its dead letters, when the
// configuration has them, and checks the handler against them, with
// errors as Validate's.
func (c *Client) withStream(name string, hc *consumer.Config) error {
	all := c.streams
	p := conf.NewProblems("handlers." + name)
	j := &hc.JetStream
	if sc, ok := all[j.Stream]; ok && j.Stream != "" && c.inAPI(p, "jetstream", j.Stream, "its", j.JetStreamAPI) {
		if j.CreateStream != nil && !reflect.DeepEqual(*j.CreateStream, sc) {
			p.Addf("create_stream", "differs from the stream %s the configuration declares: declare a stream once, under streams", j.Stream)
		}
		if !j.Bind {
			j.CreateStream = &sc
		}
	}
	if dl, sc, ok := storing(all, j.DeadLetter); ok && dl != j.Stream && c.inAPI(p, "jetstream", dl, "its dead-letter", j.JetStreamAPI) {
		j.DeadLetterStream, j.CreateDeadLetterStream = dl, &sc
	}
	if field, err := checkHandlerStream(*hc, all); err != nil {
		p.Addf(field, "%v", err)
	}
	return p.Err()
}
