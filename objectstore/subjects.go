package objectstore

import (
	"encoding/base64"
	"fmt"

	"github.com/corral-go/corral/internal/subject"
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

// nameLimit is the longest object name of store, in bytes: its metadata
// subject, "$O.<store>.M.<base64 of the name>", must fit subject.MaxLen,
// past which the server would close the connection that sends it (see
// subject.MaxLen). Padded base64 takes 4 bytes for every 3, or part of 3.
func nameLimit(store string) int {
	room := subject.MaxLen - len(fmt.Sprintf(objMetaPreTmpl, store, ""))
	return room / 4 * 3
}

// checkName refuses an object name whose subject in store would be too
// long, with an error naming both lengths.
func checkName(store, name string) error {
	return subject.CheckLen("object name", name, nameLimit(store))
}
