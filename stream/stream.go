package stream

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/subject"
)

// Config declares a JetStream stream that a handler or the publisher
// needs: it is created, or updated to match, before they use it. The zero
// value of every field but Subjects is its default.
type Config struct {
	// Subjects the stream stores. Required.
	Subjects []string `yaml:"subjects"`
	// Retention is limits (default), workqueue or interest.
	Retention string `yaml:"retention"`
	// Storage is file (default) or memory.
	Storage string `yaml:"storage"`
	// Replicas is the number of copies in a cluster. Range 0 to 5 (0 is
	// the default). Default 1.
	Replicas int `yaml:"replicas"`
	// MaxAge, MaxBytes and MaxMsgs bound what is kept. Ranges 0 to 87600h
	// (ten years), and -1 (unlimited) to the largest int64 for the sizes.
	// Default unlimited.
	MaxAge   time.Duration `yaml:"max_age"`
	MaxBytes conf.ByteSize `yaml:"max_bytes"`
	MaxMsgs  int64         `yaml:"max_msgs"`
	// Duplicates is the window in which a repeated Nats-Msg-Id is
	// dropped. Range 0 to 87600h (ten years). Default 2m (the server's).
	Duplicates time.Duration `yaml:"duplicates"`
	// AllowMsgSchedules lets the stream store message schedules: a message
	// with a Nats-Schedule header, which the server publishes again on
	// its Nats-Schedule-Target, a subject of the same stream, at the time
	// or the interval the header says. It needs nats-server 2.12 or
	// later: Declare fails with an error wrapping
	// ErrSchedulesUnsupported when the server did not keep it. It also
	// allows rollups (Nats-Rollup), which the server requires with it,
	// and cannot be turned off once on: Declare of the stream without it
	// is then a change the server cannot make in place. A consumer whose
	// filter selects a schedule's subject receives the schedule itself,
	// and on a work-queue stream its ack deletes the schedule before it
	// fires. Default false.
	AllowMsgSchedules bool `yaml:"allow_msg_schedules"`
	// Placement puts the stream in a cluster of a supercluster, or on
	// servers with tags. Default: the cluster of the server the
	// declaration reaches. Changed on a stream that exists, it moves
	// the stream: the server copies it to its new servers.
	Placement *Placement `yaml:"placement"`
}

// Placement says which servers hold a stream (a bucket's, an object
// store's, a task queue's).
type Placement struct {
	// Cluster is the name of a cluster of the supercluster.
	Cluster string `yaml:"cluster"`
	// Tags are server tags every server holding the stream has.
	Tags []string `yaml:"tags"`
}

// Validate reports a placement that names nothing, a cluster name that
// is not one, and an empty tag. A nil Placement is valid: the default.
func (pl *Placement) Validate() error {
	if pl == nil {
		return nil
	}
	p := conf.NewProblems("")
	if pl.Cluster == "" && len(pl.Tags) == 0 {
		p.Addf("", "names no cluster and no tags: set one, or remove placement")
	}
	if pl.Cluster != "" && strings.ContainsAny(pl.Cluster, " \t\r\n.*>") {
		p.Addf("cluster", "%q is not a cluster name: no whitespace, '.', '*' or '>'", pl.Cluster)
	}
	for i, tag := range pl.Tags {
		if strings.TrimSpace(tag) == "" {
			p.Addf(fmt.Sprintf("tags[%d]", i), "is empty")
		}
	}
	return p.Err()
}

// JetStream is nats.go's placement, nil for the default.
func (pl *Placement) JetStream() *jetstream.Placement {
	if pl == nil {
		return nil
	}
	return &jetstream.Placement{Cluster: pl.Cluster, Tags: append([]string(nil), pl.Tags...)}
}

// MaxNameLen is the longest stream or consumer name nats-server accepts
// (its JSMaxNameLen), in bytes: subject.MaxNameLen, the one limit.
const MaxNameLen = subject.MaxNameLen

// ValidName reports whether name can name a stream or a consumer: not
// empty, at most [MaxNameLen] bytes (an error wrapping subject.ErrTooLong),
// and without whitespace (any Unicode space), '.', '*', '>', '/' or a
// backslash. The server refuses the others, and only when the stream is
// first declared. It is subject.ValidName, the one rule for every name
// that becomes a stream's or a consumer's.
func ValidName(name string) error {
	return subject.ValidName(name)
}

// Validate reports every invalid field at once, wrapping
// supervisor.ErrInvalidConfig.
func (c Config) Validate() error {
	p := conf.NewProblems("")
	if len(c.Subjects) == 0 {
		p.Addf("subjects", "at least one subject is required")
	}
	for i, s := range c.Subjects {
		if err := subject.Validate(s, true); err != nil {
			p.Addf(fmt.Sprintf("subjects[%d]", i), "%v", err)
		}
	}
	switch c.Retention {
	case "", "limits", "workqueue", "interest":
	default:
		p.Addf("retention", "%q is not one of limits, workqueue, interest", c.Retention)
	}
	p.Storage(c.Storage)
	p.Replicas(c.Replicas)
	p.Durations(conf.MaxDuration, conf.NamedDuration{Name: "max_age", V: c.MaxAge},
		conf.NamedDuration{Name: "duplicates", V: c.Duplicates})
	p.Between("max_bytes", int64(c.MaxBytes), -1, math.MaxInt64)
	p.Between("max_msgs", c.MaxMsgs, -1, math.MaxInt64)
	p.Merge("placement", c.Placement.Validate())
	return p.Err()
}

// Stores reports whether the stream stores every subject subj selects:
// one of its subjects is subj or a wildcard over it.
func (c Config) Stores(subj string) bool {
	return slices.ContainsFunc(c.Subjects, func(s string) bool { return subject.Subset(subj, s) })
}

// JetStream turns the declaration into nats.go's stream configuration.
func (c Config) JetStream(name string) jetstream.StreamConfig {
	sc := jetstream.StreamConfig{
		Name:       name,
		Subjects:   append([]string(nil), c.Subjects...),
		Replicas:   max(c.Replicas, 1),
		Storage:    jsapi.Storage(c.Storage),
		MaxAge:     c.MaxAge,
		MaxBytes:   int64(c.MaxBytes),
		MaxMsgs:    c.MaxMsgs,
		Duplicates: c.Duplicates,
		// The server requires rollups with schedules (it rolls a
		// schedule's subject up to its latest); it would set the flag
		// itself, and a declaration that says so reads back as it is.
		AllowMsgSchedules: c.AllowMsgSchedules,
		AllowRollup:       c.AllowMsgSchedules,
	}
	sc.Placement = c.Placement.JetStream()
	if sc.MaxBytes == 0 {
		sc.MaxBytes = -1
	}
	if sc.MaxMsgs == 0 {
		sc.MaxMsgs = -1
	}
	switch c.Retention {
	case "workqueue":
		sc.Retention = jetstream.WorkQueuePolicy
	case "interest":
		sc.Retention = jetstream.InterestPolicy
	}
	return sc
}

// Declare creates the stream named name, or updates it to match. A change
// the server cannot make in place to a stream that exists (storage,
// retention, turning off message TTLs...) is an error that names the
// stream, never a silent change; any other refusal is the server's,
// wrapped. A stream that asks for message schedules and was declared by
// a server that did not keep them (one older than 2.12 ignores the
// setting) is an error wrapping ErrSchedulesUnsupported that names the
// stream and the connected server's version.
func (c Config) Declare(ctx context.Context, js jetstream.JetStream, name string) (jetstream.Stream, error) {
	// The server checks a configuration before it looks the stream up, so
	// a refusal alone does not tell an update from a creation: only the
	// update of a stream that create found in use is one.
	s, existed, err := jsapi.DeclareStream(ctx, js, c.JetStream(name))
	if err != nil {
		if jsapi.UpdateRefused(err, existed) {
			return nil, fmt.Errorf("stream: %q exists with a configuration that cannot be changed in place: %w", name, err)
		}
		return nil, fmt.Errorf("stream: declare %q: %w", name, err)
	}
	if c.AllowMsgSchedules {
		if err := checkSchedules(name, s.CachedInfo().Config, serverVersion(js)); err != nil {
			return nil, err
		}
	}
	return s, nil
}
