package kv

import "github.com/corral-go/corral/supervisor"

// BucketRecreated is emitted when a bucket that a call or a watch found
// missing (deleted, or a memory bucket lost in a server restart) has been
// declared again; with Bind, when it has been found again. What it held
// before is gone.
type BucketRecreated struct {
	supervisor.EventTime
	Bucket string
}

// Kind returns "kv.bucket_recreated".
func (BucketRecreated) Kind() string { return "kv.bucket_recreated" }

// Level returns WarnLevel: the bucket's earlier contents were lost.
func (BucketRecreated) Level() supervisor.Level { return supervisor.WarnLevel }
