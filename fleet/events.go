package fleet

import "github.com/corral-go/corral/supervisor"

// Answering is emitted when a Responder answers the fleet's requests on a
// connection (again after a replacement): the server has its
// subscriptions, so a request sent from now on is answered.
type Answering struct {
	supervisor.EventTime
	Name, ID string
}

// Kind is "fleet.answering".
func (Answering) Kind() string { return "fleet.answering" }

// Level is debug: a Client's readiness says the same.
func (Answering) Level() supervisor.Level { return supervisor.DebugLevel }
