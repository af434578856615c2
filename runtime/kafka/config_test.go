package kafka

import (
	"testing"
	"time"

	"github.com/faultline-dev/faultline/third_party/kfake"
)

func TestUnreachableBrokerFailsFastNamingIt(t *testing.T) {
	start := time.Now()
	_, err := Client{Brokers: []string{"127.0.0.1:1"}}.NewClient()
	if err == nil {
		t.Fatal("connected to nothing")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %s", time.Since(start))
	}
	if want := "127.0.0.1:1"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not name %s", err, want)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// SASL works against a broker that requires it, with each mechanism.
func TestSASLMechanisms(t *testing.T) {
	for _, mech := range []struct{ flag, kfake string }{
		{"plain", "PLAIN"}, {"scram-sha-256", "SCRAM-SHA-256"}, {"scram-sha-512", "SCRAM-SHA-512"},
	} {
		t.Run(mech.flag, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.EnableSASL(), kfake.Superuser(mech.kfake, "ada", "s3cret"), kfake.SeedTopics(1, "orders"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			good := Client{Brokers: c.ListenAddrs(), SASLMechanism: mech.flag, SASLUser: "ada", SASLPassword: "s3cret"}
			cl, err := good.NewClient()
			if err != nil {
				t.Fatalf("with the right password: %v", err)
			}
			if _, err := cl.Partitions("orders"); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			bad := good
			bad.SASLPassword = "wrong"
			if cl, err := bad.NewClient(); err == nil {
				cl.Close()
				t.Fatal("connected with a wrong password")
			}
		})
	}
}
