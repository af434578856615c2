package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/restart"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// Each keyed flag's help names the Flink key its errors come back with.
func TestKeyedFlagsNameTheirKeys(t *testing.T) {
	cmd, _ := newRunCmdOptions()
	for key, name := range keyFlags {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("no flag --%s for %s", name, key)
		}
		if !strings.Contains(f.Usage, "("+key+")") && !strings.Contains(f.Usage, "("+key+";") {
			t.Errorf("--%s's help does not name %s: %q", name, key, f.Usage)
		}
	}
}

// An unusable restart option is told by its flag, in one line, as a usage
// error.
func TestRestartOptionErrorsNameTheFlag(t *testing.T) {
	opts := restart.DefaultOptions()
	opts.Exponential.Max = 500 * time.Millisecond
	_, err := restart.Parse("exponential-delay", opts)
	got := asFlagError(err)
	var ue usageError
	if !errors.As(got, &ue) || got.Error() != "--backoff-max 500ms: want at least the initial backoff (1s)" {
		t.Fatalf("asFlagError = %v (%T)", got, got)
	}
	_, err = restart.ParseFailoverStrategy("sideways")
	if got := asFlagError(err).Error(); got != `--failover-strategy "sideways": want one of full, region, individual, none` {
		t.Fatalf("asFlagError = %q", got)
	}
}

// The Kafka client's settings are told by their flags, and a setting that
// is used only with another names both.
func TestKafkaClientErrorsNameTheFlags(t *testing.T) {
	for _, tc := range []struct {
		c    kafka.Client
		want string
	}{
		{kafka.Client{TLSCA: "ca.pem"}, "--tls-ca ca.pem is used only with --tls: add --tls, or drop --tls-ca"},
		{kafka.Client{SASLMechanism: "gssapi"}, `--sasl-mechanism "gssapi": want plain, scram-sha-256 or scram-sha-512`},
		{kafka.Client{SASLMechanism: "plain"}, "--sasl-mechanism plain is used only with --sasl-user: add --sasl-user, or drop --sasl-mechanism"},
		{kafka.Client{TLS: true, TLSCA: "/nonexistent/ca.pem"}, "--tls-ca /nonexistent/ca.pem: want a PEM file of CAs that can be read"},
	} {
		_, err := tc.c.Config()
		got := asFlagError(err)
		var ue usageError
		if !errors.As(got, &ue) || !strings.HasPrefix(got.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error %q", tc.c, got, tc.want)
		}
	}
}
