// Package natstest runs real nats-servers for tests: in process (one
// server or a three-node cluster), or as a child process for kill -9 and
// SIGSTOP; and a loopback TCP proxy that cuts or blackholes the path
// between a client and a server. Everything listens on 127.0.0.1 and is
// torn down by t.Cleanup.
package natstest
