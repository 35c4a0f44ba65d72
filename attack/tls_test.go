package attack

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/internal/testpki"
)

// TestRunTLSConfigs: a server with a certificate from a generated CA is
// reached with the CA as root (HTTP/1.1 and HTTP/2) and with verification
// off; without the CA the handshake fails and nothing is sent.
func TestRunTLSConfigs(t *testing.T) {
	pki := testpki.New(t)
	rec := newRecorder()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = pki.ServerConfig(false)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	tg := []Target{{Name: "s", URL: srv.URL}}
	for name, c := range map[string]struct {
		cfg   *tls.Config
		proto string
	}{
		"ca h1":       {&tls.Config{RootCAs: pki.Pool}, ""},
		"ca h2":       {&tls.Config{RootCAs: pki.Pool}, ProtoH2},
		"insecure h1": {&tls.Config{InsecureSkipVerify: true}, ""},
	} {
		sum, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(4, strings.ReplaceAll(name, " ", "-")), Targets: tg, TLSConfig: c.cfg, Protocol: c.proto})
		if err != nil || !sum.Complete || sum.CodesByTarget["s"]["200"] != 4 {
			t.Errorf("%s: err %v summary %+v", name, err, sum)
		}
	}
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(3, "noca"), Targets: tg})
	if err != nil || sum.NotSent != 3 || !strings.Contains(lines[0].Error, "certificate") {
		t.Fatalf("without the CA: err %v summary %+v lines %+v", err, sum, lines)
	}
	if got := len(rec.snapshot()); got != 12 {
		t.Fatalf("server saw %d IDs, want 12", got)
	}
}

// TestRunMTLS: a server that requires a client certificate answers with
// one, and without one no request reaches its handler. Under TLS 1.3 the
// server rejects the client's missing certificate after the client's
// handshake has completed, so the request was written and is
// indeterminate (code 0, the alert as error); under TLS 1.2 the handshake
// itself fails and the request is not sent.
func TestRunMTLS(t *testing.T) {
	pki := testpki.New(t)
	for _, maxVersion := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		rec := newRecorder()
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.TLS = pki.ServerConfig(true)
		srv.TLS.MaxVersion = maxVersion
		srv.StartTLS()
		tg := []Target{{Name: "s", URL: srv.URL}}
		with := &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{pki.Client}}
		sum, err, _ := runToLines(t, context.Background(), Options{IDs: IDs(3, "with"), Targets: tg, TLSConfig: with})
		if err != nil || !sum.Complete || sum.CodesByTarget["s"]["200"] != 3 {
			t.Errorf("tls %x with a client certificate: err %v summary %+v", maxVersion, err, sum)
		}
		sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(3, "without"), Targets: tg, TLSConfig: &tls.Config{RootCAs: pki.Pool}})
		srv.Close()
		if err != nil || sum.CodesByTarget["s"]["0"] != 3 {
			t.Fatalf("tls %x without: err %v summary %+v", maxVersion, err, sum)
		}
		for _, l := range lines {
			// TLS 1.3: "certificate required"; TLS 1.2: "handshake failure".
			if !strings.Contains(l.Error, "remote error: tls: ") || l.NotSent != (maxVersion == tls.VersionTLS12) {
				t.Errorf("tls %x without a client certificate: %+v", maxVersion, l)
			}
		}
		if s := rec.snapshot(); len(s) != 3 || len(s["without-1"]) != 0 {
			t.Errorf("tls %x: the handler saw %v", maxVersion, s)
		}
	}
}
