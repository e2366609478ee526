// Package conf holds what the configuration of every Corral package shares:
// the invalid-config sentinel, a collector that reports every problem at once
// (with its YAML line when it was found in a file), YAML decoding that
// reports every mistake that way (one document, aliases bounded by
// MaxAliasNodes, a map's entries each at the same cost), sizes written as
// "64MiB", and environment overrides keyed by yaml tags, strict about the
// names under their prefix.
package conf
