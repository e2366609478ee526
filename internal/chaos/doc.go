// Package chaos is Corral's fault campaign: a workload run through the
// public API only (buffered publishers writing ledgered orders and tasks,
// JetStream handlers and a task queue writing results to a bucket, a
// watch following the bucket, requests answered alongside), a nemesis
// doing the faults of the fault matrix to it on a schedule, and a checker
// that compares the ledger with what the servers hold at the end, in the
// manner of Jepsen's queue tests.
//
// TestChaos runs a short schedule, each fault once, on a child-process
// server, on a three-node cluster, and from a leaf node whose
// applications keep everything in their hub's JetStream domain (its leaf
// link cut, blackholed and flapped); CORRAL_CHAOS_DURATION=10m runs each
// for longer, the faults in random order. It ends with one line:
//
//	chaos: faults=<n> published=<n> acked=<n> processed_unique=<n> lost=<n> unexpected=<n> duplicates=<n> wedged=<n> redeliveries=<n> recovery_p99_ms=<n>
//
// and fails unless lost, unexpected, duplicates and wedged (task slots
// held with no task running once everything settled) are 0 and nothing
// else the checker looks at went wrong.
package chaos
