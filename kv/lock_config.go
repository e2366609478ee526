package kv

import (
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// LockConfig configures a lock: a key in a bucket whose TTL is the lock's.
type LockConfig struct {
	// Bucket holds the lock; it is declared with TTL as its TTL. All locks
	// in one bucket must have the same TTL: a lock never changes an
	// existing bucket's TTL, and fails with supervisor.ErrInvalidConfig if it differs.
	// Required.
	Bucket string `yaml:"bucket"`
	// Key is the lock's key. Required.
	Key string `yaml:"key"`
	// TTL is how long a holder that stops renewing keeps the lock. Range
	// 1s to 87600h (ten years). Default [DefaultLockTTL], 10s.
	TTL time.Duration `yaml:"ttl"`
	// RenewEvery is how often the holder renews, at most
	// (TTL - TTL/10)/2. Default TTL/3.
	RenewEvery time.Duration `yaml:"renew_every"`
	// Storage, Replicas and LimitMarkerTTL are the bucket's, as in
	// [Config], when the lock declares it (it does so only if the bucket
	// is missing). Replicas range 0 to 5; LimitMarkerTTL is 0 or 1s to
	// 87600h (ten years). Defaults file, 1 and no markers.
	Storage        string        `yaml:"storage"`
	Replicas       int           `yaml:"replicas"`
	LimitMarkerTTL time.Duration `yaml:"limit_marker_ttl"`
	// Value says who holds the lock, to whoever reads its key: while a
	// lease holds it, the key's value is the lease's own identity (a
	// NUID, fresh for each acquisition), then, when Value is set, a space
	// and Value. At most MaxLockValueLen bytes. Default none: the
	// identity alone.
	Value string `yaml:"value"`
	// Placement is the bucket's, as in [Config], when the lock declares it.
	Placement *stream.Placement `yaml:"placement"`
	// JetStreamAPI is the JetStream of the lock's bucket, as in [Config].
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Events says where the events of the lock's bucket
	// ([BucketRecreated]) go. Default: discarded.
	Events supervisor.Events `yaml:"-" json:"-"`
}

// DefaultLockTTL is a lock's TTL when its configuration sets none.
const DefaultLockTTL = 10 * time.Second

// MaxLockValueLen is the longest LockConfig.Value, in bytes.
const MaxLockValueLen = 1024

// holdFor is how long a lease is counted on after its last stored renewal
// was sent: TTL less a tenth for clock drift, so that the holder gives it
// up before the server can expire the key.
func (c LockConfig) holdFor() time.Duration { return c.TTL - c.TTL/10 }

func (c LockConfig) withDefaults() LockConfig {
	if c.TTL == 0 {
		c.TTL = DefaultLockTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.TTL / 3
	}
	return c
}

// Validate reports every invalid field at once (bucket, key, ttl,
// renew_every, storage, replicas, limit_marker_ttl, value), wrapping
// [supervisor.ErrInvalidConfig]; an invalid key also matches
// [ErrInvalidKey]. [NewLock] calls it.
func (c LockConfig) Validate() error {
	c = c.withDefaults()
	p := conf.NewProblems("")
	if err := subject.ValidBucket(c.Bucket); err != nil {
		p.Addf("bucket", "%v", err)
	}
	badKey := true
	if err := subject.CheckLen("key", c.Key, KeyLimit(c.Bucket)); err != nil {
		p.Addf("key", "%v", err)
	} else if reason := keyProblem(c.Key); reason != "" {
		p.Addf("key", "%q: %s", c.Key, reason)
	} else {
		badKey = false
	}
	if c.TTL < time.Second || c.TTL > conf.MaxDuration {
		p.Addf("ttl", "must be between 1s and %v, got %v", conf.MaxDuration, c.TTL)
	}
	p.Storage(c.Storage)
	p.Replicas(c.Replicas)
	if c.LimitMarkerTTL != 0 && (c.LimitMarkerTTL < time.Second || c.LimitMarkerTTL > conf.MaxDuration) {
		p.Addf("limit_marker_ttl", "must be 0 (none) or between 1s and %v, got %v", conf.MaxDuration, c.LimitMarkerTTL)
	}
	if len(c.Value) > MaxLockValueLen {
		p.Addf("value", "is %d bytes, the limit is %d", len(c.Value), MaxLockValueLen)
	}
	// A lease is lost 0.9·TTL after its last renewal was sent; two renewals
	// must fit in that, so that one failed renewal does not lose it.
	if limit := c.holdFor() / 2; c.RenewEvery <= 0 || c.RenewEvery > limit {
		p.Addf("renew_every", "must be positive and at most (ttl - ttl/10)/2 = %v, got %v", limit, c.RenewEvery)
	}
	p.Merge("placement", c.Placement.Validate())
	p.Merge("jetstream", c.JetStreamAPI.Validate())
	err := p.Err()
	if err != nil && badKey {
		return invalidKey{err}
	}
	return err
}

// invalidKey is a configuration error that also matches ErrInvalidKey,
// as NewLock's error for a bad key did before LockConfig had Validate.
type invalidKey struct{ error }

func (e invalidKey) Unwrap() error        { return e.error }
func (e invalidKey) Is(target error) bool { return target == ErrInvalidKey }
