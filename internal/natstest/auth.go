package natstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// TLSFiles are PEM files for a server and a client, signed by one CA.
type TLSFiles struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	// ServerName is the only name in the server's certificate: a client
	// connecting to 127.0.0.1 must be told to expect it.
	ServerName string
}

// NewTLSFiles writes a fresh CA, server and client certificate into a
// temporary directory.
func NewTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "natstest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	f := TLSFiles{CAFile: filepath.Join(dir, "ca.pem"), ServerName: "natstest.local"}
	writePEM(t, f.CAFile, "CERTIFICATE", caDER)

	issue := func(serial int64, name string, usage x509.ExtKeyUsage, dns []string, certPath, keyPath string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, certPath, "CERTIFICATE", der)
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, keyPath, "EC PRIVATE KEY", kder)
	}
	f.ServerCert, f.ServerKey = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	f.ClientCert, f.ClientKey = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	issue(2, "natstest server", x509.ExtKeyUsageServerAuth, []string{f.ServerName}, f.ServerCert, f.ServerKey)
	issue(3, "natstest client", x509.ExtKeyUsageClientAuth, nil, f.ClientCert, f.ClientKey)
	return f
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// WithTLS requires TLS with the server certificate of f and, with
// verifyClients, a client certificate signed by f's CA.
func WithTLS(t testing.TB, f TLSFiles, verifyClients bool) Option {
	cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{
		CertFile: f.ServerCert, KeyFile: f.ServerKey, CaFile: f.CAFile, Verify: verifyClients, Timeout: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(o *server.Options) {
		o.TLSConfig, o.TLSVerify, o.TLSTimeout = cfg, verifyClients, 2
	}
}

// WithToken requires a token.
func WithToken(token string) Option {
	return func(o *server.Options) { o.Authorization = token }
}

// NKeyUser creates an NKey user, writes its seed to a file and returns the
// option that admits it and the file.
func NKeyUser(t testing.TB) (Option, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	path := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} }, path
}

// CredsUser sets up decentralized auth (an operator, an account and a user
// signed in turn) and returns the option for the server and the user's
// credentials file. JetStream is off: the account grants none.
func CredsUser(t testing.TB) (Option, string) {
	t.Helper()
	okp, _ := nkeys.CreateOperator()
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	ojwt, err := oc.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := jwt.DecodeOperatorClaims(ojwt)
	if err != nil {
		t.Fatal(err)
	}
	akp, _ := nkeys.CreateAccount()
	apub, _ := akp.PublicKey()
	ajwt, err := jwt.NewAccountClaims(apub).Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	ujwt, err := jwt.NewUserClaims(upub).Encode(akp)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "user.creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	resolver := &server.MemAccResolver{}
	if err := resolver.Store(apub, ajwt); err != nil {
		t.Fatal(err)
	}
	return func(o *server.Options) {
		o.JetStream = false
		o.TrustedOperators = []*jwt.OperatorClaims{operator}
		o.AccountResolver = resolver
	}, path
}
