// Package fleet finds the processes of a Corral fleet over NATS and asks
// them what they are doing, as NATS micro's $SRV.PING and $SRV.STATS do
// for services: every corral.Client answers requests on
//
//	$CORRAL.PING                   every process
//	$CORRAL.PING.<name>            every instance of the service name
//	$CORRAL.PING.<name>.<id>       one instance
//
// and likewise on $CORRAL.STATUS, whose answer carries the Client's Status
// as JSON beside its Identity. One request gathers many replies: [Ping]
// and [Status] wait for them until a deadline ([Query]).
//
// # Overview
//
// A [Responder] answers for one process; a corral.Client runs one as the
// child "discovery" of its tree, unless its configuration turns discovery
// off. Any program with a NATS connection can ask, the corral command
// among them:
//
//	found, err := fleet.Ping(ctx, nc, fleet.Query{Name: "orders"})
//	for _, in := range found {
//		fmt.Println(in.Name, in.ID, in.Host, in.PID, in.Uptime)
//	}
//
// # Permissions
//
// A process that answers subscribes to $CORRAL.*, $CORRAL.*.<name> and
// $CORRAL.*.<name>.<id>, and publishes its replies to the asker's inbox
// (allow_responses in the server's permissions). Who may ask is whoever
// may publish to $CORRAL.>: deny it to the users that should not see
// the fleet, as a Status names subjects, streams and counts.
//
// # Concurrency
//
// A Responder is a suture.Service and serves once at a time; Ping and
// Status are safe for concurrent use.
package fleet
