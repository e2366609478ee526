package objectstore

import "github.com/corral-go/corral/supervisor"

// StoreRecreated is emitted when the store, declared again (after a call
// or a watch found it missing, or on a replaced connection), or with Bind
// found again, is not the one declared before: its stream was created
// since (the store was deleted, or a memory store lost in a server
// restart). The objects it held before are gone. A store only reported
// missing, as a cluster's replica still creating it may, is not
// recreated.
type StoreRecreated struct {
	supervisor.EventTime
	Store string
}

// Kind returns "objectstore.store_recreated".
func (StoreRecreated) Kind() string { return "objectstore.store_recreated" }

// Level returns WarnLevel: the store's earlier objects were lost.
func (StoreRecreated) Level() supervisor.Level { return supervisor.WarnLevel }
