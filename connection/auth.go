package connection

import (
	"crypto/tls"

	"github.com/nats-io/nats.go"
)

func tlsOptions(t TLSConfig) []nats.Option {
	if !t.enabled() {
		return nil
	}
	// Secure must come first: it replaces the tls.Config the others fill.
	opts := []nats.Option{nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName})}
	if t.CAFile != "" {
		opts = append(opts, nats.RootCAs(t.CAFile))
	}
	if t.CertFile != "" {
		opts = append(opts, nats.ClientCert(t.CertFile, t.KeyFile))
	}
	return opts
}

func authOptions(a AuthConfig) []nats.Option {
	switch {
	case a.Token != "":
		return []nats.Option{nats.Token(a.Token)}
	case a.User != "":
		return []nats.Option{nats.UserInfo(a.User, a.Password)}
	case a.CredsFile != "":
		return []nats.Option{nats.UserCredentials(a.CredsFile)}
	case a.NKeySeedFile != "":
		return []nats.Option{nkeyFromSeed(a.NKeySeedFile)}
	}
	return nil
}

// nkeyFromSeed reads the seed when connecting, so that a bad file is an
// error of Connect rather than of building options.
func nkeyFromSeed(file string) nats.Option {
	return func(o *nats.Options) error {
		opt, err := nats.NkeyOptionFromSeed(file)
		if err != nil {
			return err
		}
		return opt(o)
	}
}
