package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/third_party/kfake"

	"github.com/faultline-dev/faultline/runtime"
)

// testCA makes a CA and a certificate it signs for 127.0.0.1, and writes
// the CA's certificate as PEM into dir.
func testCA(t *testing.T, dir string) (server *tls.Config, caFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "faultline test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, caFile
}

// connectWithin returns NewClient's error, failing t when it takes longer
// than limit.
func connectWithin(t *testing.T, c Client, limit time.Duration) error {
	t.Helper()
	start := time.Now()
	cl, err := c.NewClient()
	if took := time.Since(start); took > limit {
		t.Errorf("NewClient took %s, more than %s", took.Round(time.Millisecond), limit)
	}
	if err == nil {
		cl.Close()
	}
	return err
}

// --tls with --tls-ca reaches a broker whose certificate that CA signed;
// without the CA, with TLS against a plaintext listener and without TLS
// against a TLS listener, the connection fails within seconds and says
// what is wrong.
func TestTLS(t *testing.T) {
	server, caFile := testCA(t, t.TempDir())
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.TLS(server), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	good := Client{Brokers: c.ListenAddrs(), TLS: true, TLSCA: caFile, DialTimeout: time.Second}
	cl, err := good.NewClient()
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	if _, err := cl.Partitions("orders"); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	t.Run("system CAs only", func(t *testing.T) {
		c := good
		c.TLSCA = ""
		// The handshake that fails on the certificate took past a second
		// on a busy make test: "deadline exceeded", not the certificate.
		c.DialTimeout = 4 * time.Second
		err := connectWithin(t, c, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), KeySSLCA) {
			t.Fatalf("err = %v, want a certificate error that points at %s", err, KeySSLCA)
		}
	})
	t.Run("plaintext client, TLS listener", func(t *testing.T) {
		c := good
		c.TLS, c.TLSCA = false, ""
		err := connectWithin(t, c, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), KeySecurityProtocol) {
			t.Fatalf("err = %v, want an error that suggests TLS (%s)", err, KeySecurityProtocol)
		}
	})
	t.Run("TLS client, plaintext listener", func(t *testing.T) {
		plain, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Close()
		c := good
		c.Brokers = plain.ListenAddrs()
		err = connectWithin(t, c, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), "TLS handshake") {
			t.Fatalf("err = %v, want a failed TLS handshake", err)
		}
	})
}

// A CA file without TLS is refused before anything connects: the CA
// would be read for nothing, and the connection would go in the clear.
func TestTLSCAWithoutTLSIsRefused(t *testing.T) {
	_, err := Client{Brokers: []string{"127.0.0.1:1"}, TLSCA: "ca.pem"}.Config()
	var ce *runtime.ConfigError
	if !errors.As(err, &ce) || ce.Key != KeySSLCA || ce.Needs != KeySecurityProtocol || ce.Value != "ca.pem" {
		t.Fatalf("err = %v, want a ConfigError: %s needs %s", err, KeySSLCA, KeySecurityProtocol)
	}
}
