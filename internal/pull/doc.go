// Package pull asks JetStream pull consumers for exactly as many messages
// as its owner has room for, and keeps asking across lost requests,
// leader changes, reconnects and a consumer deleted under it. JetStream
// handlers and task workers share it.
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
//
// # Tiers
//
// A puller of several consumers of one stream (Config.Consumers) pulls
// them in strict priority order; each has its own inbox, failures and
// declaration. When half the room is free it probes them top down: a
// no_wait request for the free room to the first, which the server
// answers at once, and, once that consumer answered short (a 404 "No
// Messages" after what it had), the rest of the room to the next, and so
// on. A consumer that fills its probe may have more: the next round
// starts from the top again. When every consumer answered empty, the
// puller is idle: it leaves a doorbell, a waiting request for one
// message, with each consumer top down as far as the free room goes,
// and probes those the room did not reach once a second; the first
// message ends idleness, and a round probes from the top for the rest
// of the room. A doorbell left with a consumer below one that may have
// messages is withdrawn (its inbox replaced), so that it takes nothing
// ahead of them. Probes may ask for the room doorbells wait for: a
// doorbell that rings when that room is taken brings a message that goes
// back at once (Owner.Refuse).
//
// So the owner never takes a message from a consumer while one before it
// had messages when the owner asked: strict at every request, not at
// every instant. A message that arrives while the owner's room is full
// waits for the next round; one that arrives as a doorbell below rings
// may lose that race by the time a request takes to travel; and the
// server counts a message for its consumers just after it acknowledged
// it to the publisher, so a probe within that instant misses it. A
// consumer starves while those before it keep a backlog the owner cannot
// work off. A consumer that cannot be asked for now (failing, or waiting
// to be declared again) is passed over until it can.
package pull
