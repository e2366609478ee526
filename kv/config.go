package kv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// Config declares a bucket. The zero value of every field is its
// default.
type Config struct {
	// Description is shown by tools.
	Description string `yaml:"description"`
	// History is how many revisions of each key are kept, 1 to 64.
	// Default 1.
	History int `yaml:"history"`
	// TTL removes values this long after they were written. Range 0 to
	// 87600h (ten years). Default none.
	TTL time.Duration `yaml:"ttl"`
	// MaxValueSize bounds one value. Range 0 to 2147483647 bytes (2GiB
	// less a byte): the server keeps it as an int32. Default the server's
	// max payload.
	MaxValueSize conf.ByteSize `yaml:"max_value_size"`
	// MaxBytes bounds the bucket. Range 0 to the largest int64. Default
	// unlimited.
	MaxBytes conf.ByteSize `yaml:"max_bytes"`
	// Storage is file (default) or memory.
	Storage string `yaml:"storage"`
	// Replicas is the number of copies in a cluster. Default 1.
	Replicas int `yaml:"replicas"`
	// Placement puts the bucket in a cluster of a supercluster, or on
	// servers with tags (see stream.Placement). Default: the cluster of
	// the server its declaration reaches.
	Placement *stream.Placement `yaml:"placement"`
	// LimitMarkerTTL keeps a marker this long when a key expires, so that
	// watches see the expiry, and allows a TTL per key (CreateTTL). It
	// needs nats-server 2.11 or later. Range 1s to 87600h (ten years), or
	// 0. Default off.
	LimitMarkerTTL time.Duration `yaml:"limit_marker_ttl"`
	// Bind uses the existing bucket as it is and fails when it does not
	// exist. Default false: the bucket is created, or updated to match.
	Bind bool `yaml:"bind"`
	// JetStreamAPI is the JetStream the bucket is in, when it is not the
	// account's own: another domain's (a leaf node's hub) or an imported
	// one's. corral.Client sets it to its own (Config.JetStreamAPI) when
	// it is not set.
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Events says where the bucket's events ([BucketRecreated]) go.
	// Default: discarded.
	Events supervisor.Events `yaml:"-"`

	// lockBucket: declare the bucket if missing, but never change an
	// existing one's TTL, which other locks in it rely on.
	lockBucket bool
}

// Validate reports every invalid field at once, wrapping
// [supervisor.ErrInvalidConfig].
func (c Config) Validate() error {
	p := conf.NewProblems("")
	if c.History < 0 || c.History > 64 {
		p.Addf("history", "must be between 1 and 64, got %d", c.History)
	}
	p.Durations(conf.MaxDuration, conf.NamedDuration{Name: "ttl", V: c.TTL})
	p.Between("max_value_size", int64(c.MaxValueSize), 0, math.MaxInt32)
	p.Between("max_bytes", int64(c.MaxBytes), 0, math.MaxInt64)
	p.Storage(c.Storage)
	p.Replicas(c.Replicas)
	if c.LimitMarkerTTL < 0 || c.LimitMarkerTTL != 0 && c.LimitMarkerTTL < time.Second || c.LimitMarkerTTL > conf.MaxDuration {
		p.Addf("limit_marker_ttl", "must be 0 (off) or between 1s and %v, got %v", conf.MaxDuration, c.LimitMarkerTTL)
	}
	p.Merge("placement", c.Placement.Validate())
	p.Merge("jetstream", c.JetStreamAPI.Validate())
	return p.Err()
}

func (c Config) jetStream(name string) jetstream.KeyValueConfig {
	kc := jetstream.KeyValueConfig{
		Bucket:         name,
		Description:    c.Description,
		History:        uint8(max(c.History, 1)),
		TTL:            c.TTL,
		MaxValueSize:   int32(min(c.MaxValueSize, math.MaxInt32)), // Validate bounds it; never wrap
		MaxBytes:       int64(c.MaxBytes),
		Replicas:       max(c.Replicas, 1),
		LimitMarkerTTL: c.LimitMarkerTTL,
		Placement:      c.Placement.JetStream(),
	}
	if kc.MaxValueSize == 0 {
		kc.MaxValueSize = -1
	}
	if kc.MaxBytes == 0 {
		kc.MaxBytes = -1
	}
	kc.Storage = jsapi.Storage(c.Storage)
	return kc
}

// open binds or declares the bucket name on js. Each request is asked
// until answered (jsapi.Ask): a cluster answers one of several processes
// declaring a new bucket at once, and may answer no lookup of it until
// its stream has a leader.
func (c Config) open(ctx context.Context, js jetstream.JetStream, name string) (jetstream.KeyValue, error) {
	bind := func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, name) }
	create := func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateKeyValue(ctx, c.jetStream(name))
	}
	if c.Bind {
		b, err := jsapi.Ask(ctx, bind)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%w: %s: %w", ErrBucketNotFound, name, err)
		}
		return b, err
	}
	if c.lockBucket {
		return c.openLockBucket(ctx, name, bind, create)
	}
	// Create first, as stream.Declare does: a bucket that already matches
	// is not updated on every start.
	b, err := jsapi.Ask(ctx, create)
	if errors.Is(err, jetstream.ErrBucketExists) {
		b, err = jsapi.Ask(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
			return js.UpdateKeyValue(ctx, c.jetStream(name))
		})
	}
	if err != nil {
		return nil, fmt.Errorf("kv: declare bucket %s: %w", name, err)
	}
	return b, nil
}

// openLockBucket binds the lock bucket name with bind, or declares it
// with create when it does not exist, and checks its TTL.
func (c Config) openLockBucket(ctx context.Context, name string, bind, create func(context.Context) (jetstream.KeyValue, error)) (jetstream.KeyValue, error) {
	for attempt := 0; ; attempt++ {
		b, err := jsapi.Ask(ctx, bind)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			b, err = jsapi.Ask(ctx, create)
			if errors.Is(err, jetstream.ErrBucketExists) && attempt < 3 {
				continue // another process created it meanwhile: check its TTL
			}
			if err != nil {
				return nil, fmt.Errorf("kv: declare bucket %s: %w", name, err)
			}
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("kv: bind bucket %s: %w", name, err)
		}
		st, err := jsapi.Ask(ctx, b.Status)
		if err != nil {
			return nil, fmt.Errorf("kv: bucket %s: %w", name, err)
		}
		if st.TTL() != c.TTL {
			return nil, fmt.Errorf("%w: lock bucket %s has TTL %v, this lock's is %v: use one TTL per lock bucket",
				supervisor.ErrInvalidConfig, name, st.TTL(), c.TTL)
		}
		return b, nil
	}
}
