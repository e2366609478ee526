// Package pull asks a JetStream pull consumer for exactly as many messages
// as its owner has room for, and keeps asking across lost requests, leader
// changes, reconnects and a consumer deleted under it. JetStream handlers
// and task workers share it.
//
// A [Puller] counts what its owner holds against a capacity: a request
// asks for the room free, so no message waits in a client-side buffer
// while its ack wait runs, and one that arrives beyond the capacity (a
// request presumed lost that delivered after all) goes back at once. The
// owner tells the puller when it is done with a message ([Puller.Release]).
//
// Requests are answered on an inbox subscription whose last callback the
// owner's pool waits for (Config.Feed) before it closes its queue. When
// requests are presumed lost (no heartbeat, a leadership change, a
// reconnect), a fresh inbox replaces the old one, which drains; each keeps
// its own credits (what its requests asked for and the server has not
// delivered), so late messages on a replaced inbox owe nothing to the
// requests of the new one.
package pull
