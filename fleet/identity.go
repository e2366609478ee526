package fleet

import (
	"encoding/json"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

// Prefix begins every subject of the fleet's requests.
const Prefix = "$CORRAL"

// The requests a process answers.
const (
	// VerbPing asks who a process is: its Identity alone.
	VerbPing = "PING"
	// VerbStatus asks for its Identity and its Status.
	VerbStatus = "STATUS"
)

// The types of the replies, as NATS micro names its own.
const (
	PingType   = "io.corral.v1.ping_response"
	StatusType = "io.corral.v1.status_response"
)

// Subject is where verb is asked: of every process when name is empty,
// of every instance of the service name when id is empty, otherwise of
// the one instance id of name.
func Subject(verb, name, id string) string {
	s := Prefix + "." + verb
	if name == "" {
		return s
	}
	s += "." + name
	if id == "" {
		return s
	}
	return s + "." + id
}

// Identity says which process answered.
type Identity struct {
	// Name is the service's name: the Client's Config.Name.
	Name string `json:"name"`
	// ID tells the instances of one service apart: a NUID made when the
	// process's Client was built.
	ID   string `json:"id"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Version is the application's version; Corral is the version of
	// Corral it was built with. Empty when unknown (a build from a work
	// tree).
	Version string `json:"version,omitempty"`
	Corral  string `json:"corral_version,omitempty"`
	// Started is when the process began to answer; Uptime is how long
	// ago that was when it answered, as a Go duration ("1h2m3s").
	Started time.Time `json:"started"`
	Uptime  string    `json:"uptime"`
}

// Instance is one process's answer to a request: who it is, and, to
// VerbStatus, its status.
type Instance struct {
	Type string `json:"type"`
	Identity
	// Status is the process's Status as JSON (a corral.Status for a
	// Client); empty in a ping's answer.
	Status json.RawMessage `json:"status,omitempty"`
	// Error says why a status asked for is missing.
	Error string `json:"error,omitempty"`
}

// Self returns the identity of this process as a service named name with
// instance id: its host, its pid, and the versions its build records.
func Self(name, id string) Identity {
	host, _ := os.Hostname()
	in := Identity{Name: name, ID: id, Host: host, PID: os.Getpid()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in.Version = moduleVersion(bi.Main)
		if bi.Main.Path == corralModule {
			in.Corral = in.Version
		}
		for _, dep := range bi.Deps {
			if dep.Path == corralModule {
				in.Corral = moduleVersion(*dep)
			}
		}
	}
	return in
}

const corralModule = "github.com/corral-go/corral"

// moduleVersion is m's version, or "" when the build does not know it.
func moduleVersion(m debug.Module) string {
	if m.Replace != nil {
		m = *m.Replace
	}
	if m.Version == "" || m.Version == "(devel)" || strings.HasPrefix(m.Version, "(") {
		return ""
	}
	return m.Version
}
