package objectstore

import (
	"encoding/base64"
	"fmt"
)

// The names a store has on the wire, as nats.go's jetstream/object.go
// spells them, so that its clients read and write the same objects.
const (
	objNameTmpl       = "OBJ_%s"     // OBJ_<store>: the store's stream
	objAllMetaPreTmpl = "$O.%s.M.>"  // $O.<store>.M.>: every object's metadata
	objChunksPreTmpl  = "$O.%s.C.%s" // $O.<store>.C.<object-nuid>: one version's chunks
	objMetaPreTmpl    = "$O.%s.M.%s" // $O.<store>.M.<name-encoded>: one object's metadata
)

// streamName is the name of store's stream.
func streamName(store string) string { return fmt.Sprintf(objNameTmpl, store) }

// allMetaSubjects matches the metadata of every object in store.
func allMetaSubjects(store string) string { return fmt.Sprintf(objAllMetaPreTmpl, store) }

// chunkSubject holds the chunks of the version nuid of an object in store.
func chunkSubject(store, nuid string) string { return fmt.Sprintf(objChunksPreTmpl, store, nuid) }

// metaSubject holds the metadata of the object name in store.
func metaSubject(store, name string) string {
	return fmt.Sprintf(objMetaPreTmpl, store, base64.URLEncoding.EncodeToString([]byte(name)))
}
