// Package e2e holds the tests that need what the library's users should
// not have to download: a browser driver (the status page, in headless
// Chromium) and the OpenTelemetry SDK (the traces a Client makes). It is
// a module of its own, so the library's go.mod requires neither.
package e2e
