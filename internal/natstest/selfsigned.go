package natstest

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// NewSelfSignedTLSFiles writes a self-signed certificate for 127.0.0.1
// and localhost, and its key, into a temporary directory. The server's
// certificate and the CA a client trusts are the one file (ServerCert and
// CAFile); there is no client certificate and no ServerName to set.
func NewSelfSignedTLSFiles(t testing.TB) TLSFiles {
	t.Helper()
	dir := t.TempDir()
	key := newKey(t)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := TLSFiles{ServerCert: filepath.Join(dir, "cert.pem"), ServerKey: filepath.Join(dir, "key.pem")}
	f.CAFile = f.ServerCert
	writePEM(t, f.ServerCert, "CERTIFICATE", der)
	writePEM(t, f.ServerKey, "EC PRIVATE KEY", kder)
	return f
}
