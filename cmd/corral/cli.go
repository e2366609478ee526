package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
)

// cli is one command line: where output goes, the environment, and the
// flags every command takes.
type cli struct {
	out io.Writer
	env func(string) string

	server, context, creds, nkey, user, password string
	tlsCA, tlsCert, tlsKey                       string
	jsDomain, jsAPIPrefix                        string
	// api is the JetStream the queues are in, as connect resolved it.
	api     connection.JetStreamAPI
	timeout time.Duration
	json    bool
}

// flags returns a flag set for command name with the connection and
// output flags, on which the command adds its own.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, n := range []string{"s", "server"} {
		fs.StringVar(&c.server, n, "", "NATS server URLs, comma-separated (NATS_URL)")
	}
	fs.StringVar(&c.context, "context", "", "a context of the nats command (NATS_CONTEXT)")
	fs.StringVar(&c.creds, "creds", "", "user credentials file (NATS_CREDS)")
	fs.StringVar(&c.nkey, "nkey", "", "user NKey seed file (NATS_NKEY)")
	fs.StringVar(&c.user, "user", "", "user name or token (NATS_USER)")
	fs.StringVar(&c.password, "password", "", "password (NATS_PASSWORD)")
	fs.StringVar(&c.tlsCA, "tlsca", "", "TLS certificate authority chain file (NATS_CA)")
	fs.StringVar(&c.tlsCert, "tlscert", "", "TLS client certificate file (NATS_CERT)")
	fs.StringVar(&c.tlsKey, "tlskey", "", "TLS client key file (NATS_KEY)")
	fs.StringVar(&c.jsDomain, "js-domain", "", "the JetStream domain of the queues and consumers")
	fs.StringVar(&c.jsAPIPrefix, "js-api-prefix", "", "the subject prefix of an imported JetStream API")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "how long to wait for the server and the answers")
	fs.BoolVar(&c.json, "json", false, "print JSON rather than tables")
	return fs
}

// parse parses args with fs, flags and arguments in any order, and
// returns the arguments; it wants between min and max of them.
func parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(rest) < minArgs || len(rest) > maxArgs {
		return nil, fmt.Errorf("%w: %s takes %s", errUsage, fs.Name(), argCount(minArgs, maxArgs))
	}
	return rest, nil
}

func argCount(lo, hi int) string {
	switch {
	case lo == hi:
		return fmt.Sprintf("%d argument(s)", lo)
	case lo == 0:
		return fmt.Sprintf("at most %d argument(s)", hi)
	}
	return fmt.Sprintf("%d to %d arguments", lo, hi)
}

// connect connects as the flags, the environment and the context say,
// flags first.
func (c *cli) connect() (*nats.Conn, error) {
	ctxName := first(c.context, c.env("NATS_CONTEXT"))
	nctx, err := loadContext(ctxName, c.env)
	if err != nil {
		return nil, err
	}
	// The flags, when either is given, replace the context's pair whole.
	c.api = connection.JetStreamAPI{Domain: nctx.JSDomain, APIPrefix: nctx.JSAPIPrefix}
	if c.jsDomain != "" || c.jsAPIPrefix != "" {
		c.api = connection.JetStreamAPI{Domain: c.jsDomain, APIPrefix: c.jsAPIPrefix}
	}
	if err := c.api.Validate(); err != nil {
		return nil, fmt.Errorf("%w: --js-domain/--js-api-prefix: %v", errUsage, err)
	}
	url := first(c.server, c.env("NATS_URL"), nctx.URL, nats.DefaultURL)
	opts := []nats.Option{nats.Name("corral"), nats.Timeout(c.timeout), nats.MaxReconnects(0)}
	user, password := first(c.user, c.env("NATS_USER"), nctx.User), first(c.password, c.env("NATS_PASSWORD"), nctx.Password)
	switch {
	case user != "" && password != "":
		opts = append(opts, nats.UserInfo(user, password))
	case user != "":
		opts = append(opts, nats.Token(user))
	case nctx.Token != "":
		opts = append(opts, nats.Token(nctx.Token))
	}
	if creds := first(c.creds, c.env("NATS_CREDS"), nctx.Creds); creds != "" {
		opts = append(opts, nats.UserCredentials(expand(creds, c.env)))
	}
	if nkey := first(c.nkey, c.env("NATS_NKEY"), nctx.NKey); nkey != "" {
		opt, err := nats.NkeyOptionFromSeed(expand(nkey, c.env))
		if err != nil {
			return nil, fmt.Errorf("nkey: %w", err)
		}
		opts = append(opts, opt)
	}
	if ca := first(c.tlsCA, c.env("NATS_CA"), nctx.CA); ca != "" {
		opts = append(opts, nats.RootCAs(expand(ca, c.env)))
	}
	cert, key := first(c.tlsCert, c.env("NATS_CERT"), nctx.Cert), first(c.tlsKey, c.env("NATS_KEY"), nctx.Key)
	if cert != "" || key != "" {
		opts = append(opts, nats.ClientCert(expand(cert, c.env), expand(key, c.env)))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		// The URL as given may hold a password: name the servers alone.
		return nil, fmt.Errorf("connect to %s: %w", redact(url), err)
	}
	return nc, nil
}

// redact is urls without the credentials in them.
func redact(urls string) string {
	var out []string
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		if scheme, rest, ok := strings.Cut(u, "://"); ok {
			if _, host, ok := strings.Cut(rest, "@"); ok {
				u = scheme + "://" + host
			}
		} else if _, host, ok := strings.Cut(u, "@"); ok {
			u = host
		}
		out = append(out, u)
	}
	return strings.Join(out, ",")
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// printJSON prints v as indented JSON.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
