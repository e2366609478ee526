package objectstore

import (
	"math"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// Config declares an object store. The zero value of every field is its
// default.
type Config struct {
	// Description is shown by tools.
	Description string `yaml:"description"`
	// TTL removes objects this long after they were put. Range 0 to
	// 87600h (ten years). Default none.
	TTL time.Duration `yaml:"ttl"`
	// MaxBytes bounds the store. Range 0 (unlimited) to the largest
	// int64. Default unlimited.
	MaxBytes conf.ByteSize `yaml:"max_bytes"`
	// Storage is file (default) or memory.
	Storage string `yaml:"storage"`
	// Replicas is the number of copies in a cluster. Range 0 to 5 (0 is
	// the default). Default 1.
	Replicas int `yaml:"replicas"`
	// Placement puts the store in a cluster of a supercluster, or on
	// servers with tags (see stream.Placement). Default: the cluster of
	// the server its declaration reaches.
	Placement *stream.Placement `yaml:"placement"`
	// Compression compresses stored chunks (S2). Default off.
	Compression bool `yaml:"compression"`
	// Bind uses the existing store as it is and fails when it does not
	// exist. Default false: the store is created, or updated to match.
	Bind bool `yaml:"bind"`
	// JetStreamAPI is the JetStream the store is in, when it is not the
	// account's own: another domain's (a leaf node's hub) or an imported
	// one's. corral.Client sets it to its own (Config.JetStreamAPI) when
	// it is not set.
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Events says where the store's events ([StoreRecreated]) go.
	// Default: discarded.
	Events supervisor.Events `yaml:"-" json:"-"`
}

// Validate reports every invalid field at once, wrapping
// [supervisor.ErrInvalidConfig].
func (c Config) Validate() error {
	p := conf.NewProblems("")
	p.Durations(conf.MaxDuration, conf.NamedDuration{Name: "ttl", V: c.TTL})
	p.Between("max_bytes", int64(c.MaxBytes), 0, math.MaxInt64)
	p.Storage(c.Storage)
	p.Replicas(c.Replicas)
	p.Merge("placement", c.Placement.Validate())
	p.Merge("jetstream", c.JetStreamAPI.Validate())
	return p.Err()
}

// jetStream is the nats.go declaration of the store name.
func (c Config) jetStream(name string) jetstream.ObjectStoreConfig {
	oc := jetstream.ObjectStoreConfig{Bucket: name, Description: c.Description, TTL: c.TTL,
		MaxBytes: int64(c.MaxBytes), Replicas: max(c.Replicas, 1), Compression: c.Compression,
		Placement: c.Placement.JetStream()}
	if oc.MaxBytes == 0 {
		oc.MaxBytes = -1
	}
	oc.Storage = jsapi.Storage(c.Storage)
	return oc
}
