package objectstore

import "github.com/corral-go/corral/supervisor"

// StoreRecreated is emitted when a store that a call or a watch found
// missing (deleted, or a memory store lost in a server restart) has been
// declared again; with Bind, when it has been found again. The objects it
// held before are gone.
type StoreRecreated struct {
	supervisor.EventTime
	Store string
}

// Kind returns "objectstore.store_recreated".
func (StoreRecreated) Kind() string { return "objectstore.store_recreated" }

// Level returns WarnLevel: the store's earlier objects were lost.
func (StoreRecreated) Level() supervisor.Level { return supervisor.WarnLevel }
