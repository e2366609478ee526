package kv

import "github.com/corral-go/corral/supervisor"

// BucketRecreated is emitted when the bucket, declared again (after a
// call or a watch found it missing, or on a replaced connection), or with
// Bind found again, is not the one declared before: its stream was
// created since (the bucket was deleted, or a memory bucket lost in a
// server restart). What it held before is gone. A bucket only reported
// missing, as a cluster's replica still creating it may, is not
// recreated.
type BucketRecreated struct {
	supervisor.EventTime
	Bucket string
}

// Kind returns "kv.bucket_recreated".
func (BucketRecreated) Kind() string { return "kv.bucket_recreated" }

// Level returns WarnLevel: the bucket's earlier contents were lost.
func (BucketRecreated) Level() supervisor.Level { return supervisor.WarnLevel }
