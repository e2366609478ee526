// Package conf holds what the configuration of every Corral package shares:
// the invalid-config sentinel, a collector that reports every problem at once,
// sizes written as "64MiB", and environment overrides keyed by yaml tags.
package conf
