// Package ops serves what operators look for in a Corral application,
// from one http.Handler: health and readiness for the orchestrator,
// Prometheus metrics, the Client's Status as JSON, and a status page for
// people. It wraps a corral.Client; only a program that imports it links
// Prometheus.
//
// # Overview
//
// [New] returns a [Handler] for a Client. Mount it on the application's
// own server (behind its own auth), or let the Client serve it as the
// child "ops" of its tree at ops.listen:
//
//	client, err := corral.New(cfg, corral.WithOps(ops.New))
//
// [Config] puts the Client's metrics in the application's registry
// instead of one of the Handler's own: corral.WithOps(ops.Config{Registry:
// reg}.New). [NewCollector] is the collector alone, for an application
// that serves its registry itself.
//
// # Errors
//
// New fails when the registry refuses the Client's metrics (a second
// Client of the same name in one registry).
//
// # Concurrency
//
// A Handler is safe for concurrent use; every request reads the Client's
// Status afresh.
package ops
