// Command corral sees and steers a fleet of Corral processes and their task
// queues over NATS, as the nats command does for streams and services:
//
//	corral ps                         every process of every service
//	corral status [service [id]]      the tree of one instance, or of all
//	corral queues                     every task queue, with its counts
//	corral tasks ls <queue> [--state waiting|scheduled|running|completed|failed|cancelled]
//	corral tasks show <queue> <id>
//	corral tasks cancel <queue> <id>
//	corral tasks delete <queue> <id>
//	corral tasks dead <queue> --dead-letter <subject>
//	corral tasks retry <queue> (<id> | --all) --dead-letter <subject>
//	corral pause <queue> [--for 1h]
//	corral resume <queue>
//
// It connects as the nats command does: -s/--server (or NATS_URL),
// --creds, --nkey, --user and --password, --tlsca, --tlscert and --tlskey,
// and --context, a context of the nats command's (its selected one by
// default); --js-domain and --js-api-prefix (or the context's
// jetstream_domain and jetstream_api_prefix) say which JetStream holds the
// queues and consumers, as they do for nats. It prints tables, or JSON with --json. It exits 0 when the
// command did what it was asked, 1 when it failed (the server could not
// be reached, a task is not there, a state refuses the action), and 2
// for a command line it does not understand.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage marks a command line the command does not understand.
var errUsage = errors.New("usage")

// command is one of corral's commands.
type command struct {
	name, args, about string
	run               func(ctx context.Context, c *cli, args []string) error
}

func commands() []command {
	return []command{
		{"ps", "[--name service]", "every process of every service (or of one)", runPS},
		{"status", "[service [id]]", "the supervision tree and counters of instances", runStatus},
		{"queues", "", "every task queue the server holds, with its counts", runQueues},
		{"tasks ls", "<queue> [--state state] [--limit n] [--after cursor]", "a page of a queue's tasks in one state", runTasksList},
		{"tasks show", "<queue> <id>", "one task: its state, attempt, worker, progress, result or error", runTasksShow},
		{"tasks cancel", "<queue> <id>", "cancel a task waiting, scheduled or running", runTasksCancel},
		{"tasks delete", "<queue> <id>", "remove a task waiting or scheduled, leaving no trace", runTasksDelete},
		{"tasks dead", "<queue> --dead-letter subject", "a page of a queue's dead letters", runTasksDead},
		{"tasks retry", "<queue> (<id> | --all) --dead-letter subject", "enqueue dead-lettered tasks again under their ids", runTasksRetry},
		{"pause", "<queue> [--for duration]", "no worker takes a task from the queue until then", runPause},
		{"resume", "<queue>", "workers take tasks from the queue again", runResume},
	}
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) int {
	c := &cli{out: stdout, env: env}
	err := c.dispatch(ctx, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "corral: %s\n\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		usage(stderr)
		return exitUsage
	case errors.Is(err, errHelp):
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "corral: %v\n", err)
	return exitFail
}

var errHelp = errors.New("help")

func (c *cli) dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return errHelp
	}
	for _, cmd := range commands() {
		words := strings.Fields(cmd.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == cmd.name {
			return cmd.run(ctx, c, args[len(words):])
		}
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, strings.Join(args, " "))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: corral <command> [flags]")
	fmt.Fprintln(w)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-13s %s\n  %-13s   %s\n", cmd.name, cmd.args, "", cmd.about)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "connection flags, as the nats command's: -s/--server url (NATS_URL), --context name (NATS_CONTEXT),")
	fmt.Fprintln(w, "  --creds file, --nkey file, --user, --password, --tlsca, --tlscert, --tlskey, --timeout (default 5s),")
	fmt.Fprintln(w, "  --js-domain domain, --js-api-prefix prefix (the JetStream the queues and consumers are in)")
	fmt.Fprintln(w, "output: tables, or --json")
}
