package kafkalane

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These run in every `go test`: they need no Java.

// A cluster id is 16 bytes in base64url, and never starts with '-', which
// the storage tool's argument parser takes for an option (one in 64 did).
func TestClusterIDIsWhatKafkaStorageTakes(t *testing.T) {
	for range 1000 {
		id := clusterID()
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) != 16 || len(id) != 22 || id[0] == '-' {
			t.Fatalf("cluster id %q: %d bytes, %v", id, len(b), err)
		}
	}
}

// The PEM keystore holds a key and a chain that a Go client trusts with
// the CA file alone, for 127.0.0.1.
func TestCertsVerifyFor127001(t *testing.T) {
	dir := t.TempDir()
	if err := writeCerts(dir); err != nil {
		t.Fatal(err)
	}
	ks, err := os.ReadFile(filepath.Join(dir, "server-keystore.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(ks), "-----BEGIN PRIVATE KEY-----") {
		t.Fatalf("the keystore does not start with a PKCS#8 key:\n%.60s", ks)
	}
	cert, err := tls.X509KeyPair(ks, ks)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("ca.pem holds no certificate")
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
}

func TestPropertiesNameEveryListener(t *testing.T) {
	b := &Broker{Tools: Tools{dir: "/d"}, opt: Options{SCRAM: true, TLS: true}, plain: 1, controller: 2, scram: 3, tls: 4}
	p := b.properties()
	for _, want := range []string{
		"listeners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2,SASL_PLAINTEXT://127.0.0.1:3,SSL://127.0.0.1:4\n",
		"advertised.listeners=PLAINTEXT://127.0.0.1:1,SASL_PLAINTEXT://127.0.0.1:3,SSL://127.0.0.1:4\n",
		"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n",
		"ssl.keystore.type=PEM\n",
		"transaction.state.log.min.isr=1\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, p)
		}
	}
	if plain := (&Broker{Tools: Tools{dir: "/d"}, plain: 1, controller: 2}).properties(); strings.Contains(plain, "SASL") || strings.Contains(plain, "SSL") {
		t.Errorf("a plaintext broker has other listeners:\n%s", plain)
	}
}
