// Package testpki makes a throw-away certificate authority for tests: a CA,
// a server certificate for 127.0.0.1 and localhost, and a client
// certificate, all signed by the CA (ECDSA P-256, valid for one day), as
// tls.Certificates, a CertPool and PEM files.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is one test CA with a server and a client certificate.
type PKI struct {
	// Pool holds the CA certificate.
	Pool *x509.CertPool
	// Server and Client are leaf certificates with their keys.
	Server, Client tls.Certificate
	// CAFile, ClientCertFile and ClientKeyFile are PEM files in a
	// temporary directory removed when the test ends.
	CAFile, ClientCertFile, ClientKeyFile string
}

// New makes a PKI; it fails the test on any error.
func New(t testing.TB) *PKI {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Helper()
			t.Fatalf("testpki: %v", err)
		}
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rlbench test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(err)
	ca, err := x509.ParseCertificate(caDER)
	must(err)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) (tls.Certificate, []byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
			tmpl.DNSNames = []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		must(err)
		kder, err := x509.MarshalECPrivateKey(key)
		must(err)
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		must(err)
		return c, certPEM, keyPEM
	}
	p := &PKI{Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	var clientCert, clientKey []byte
	p.Server, _, _ = leaf(2, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	p.Client, clientCert, clientKey = leaf(3, "rlbench test client", x509.ExtKeyUsageClientAuth)
	dir := t.TempDir()
	p.CAFile = filepath.Join(dir, "ca.pem")
	p.ClientCertFile = filepath.Join(dir, "client.pem")
	p.ClientKeyFile = filepath.Join(dir, "client.key")
	must(os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	must(os.WriteFile(p.ClientCertFile, clientCert, 0o600))
	must(os.WriteFile(p.ClientKeyFile, clientKey, 0o600))
	return p
}

// ServerConfig is a server TLS configuration with the server certificate;
// with mTLS it requires a client certificate signed by the CA.
func (p *PKI) ServerConfig(mTLS bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.Server}}
	if mTLS {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = p.Pool
	}
	return c
}
