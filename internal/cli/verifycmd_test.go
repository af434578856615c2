package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// verifyTargetOf resolves verify's command line args as the command does.
func verifyTargetOf(t *testing.T, args ...string) (verifyTarget, error) {
	t.Helper()
	f := &verifyFlags{}
	cmd := &cobra.Command{}
	def := orders.Default()
	addVerifyFlags(cmd, f, def)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	f.given = cmd.Flags().Changed
	job, err := f.job(def)
	if err != nil {
		return verifyTarget{}, err
	}
	return f.target(job)
}

// Every flag not given takes the job's value: the default job's, or
// --job's; a flag given overrides it.
func TestVerifyFlagsResolveToWhatIsExpected(t *testing.T) {
	const job = "--job=../../fixtures/jobs/"
	paid := verify.Expect{Kind: "paid-orders", Inputs: []string{"orders", "payments"}, Joined: true, StateTTL: time.Minute, ID: "order_id"}
	for _, tc := range []struct {
		name      string
		args      []string
		expect    verify.Expect
		inputs    []string
		outputs   []string
		guarantee string
	}{
		{"the default job", nil, paid, []string{"orders", "payments"}, []string{"revenue"}, "exactly-once"},
		{"every order", []string{"--relation", "orders"},
			verify.Expect{Kind: "orders", Inputs: []string{"orders"}, ID: "order_id"}, []string{"orders"}, []string{"revenue"}, "exactly-once"},
		{"another engine's topics", []string{"--inputs", "shop.orders,shop.payments", "--output", "revenue-flink", "--state-ttl", "0", "--guarantee", "at-least-once"},
			verify.Expect{Kind: "paid-orders", Inputs: []string{"orders", "payments"}, Joined: true, ID: "order_id"},
			[]string{"shop.orders", "shop.payments"}, []string{"revenue-flink"}, "at-least-once"},
		{"several outputs, once each", []string{"--output", "a,b,a", "--id", "id"},
			verify.Expect{Kind: "paid-orders", Inputs: []string{"orders", "payments"}, Joined: true, StateTTL: time.Minute, ID: "id"},
			[]string{"orders", "payments"}, []string{"a", "b"}, "exactly-once"},
		{"a job spec", []string{job + "pipeline.yaml"},
			verify.Expect{Kind: "orders", Inputs: []string{"orders"}, ID: "order_id"}, []string{"orders"}, []string{"enriched-orders"}, "exactly-once"},
		{"a job spec and its output elsewhere", []string{job + "orders.yaml", "--output", "revenue-flink", "--state-ttl", "30s"},
			verify.Expect{Kind: "paid-orders", Inputs: []string{"orders", "payments"}, Joined: true, StateTTL: 30 * time.Second, ID: "order_id"},
			[]string{"orders", "payments"}, []string{"revenue-flink"}, "exactly-once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := verifyTargetOf(t, append([]string{"--brokers", "127.0.0.1:9092"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !got.expect.Equal(tc.expect) || !slices.Equal(got.inputs, tc.inputs) || !slices.Equal(got.outputs, tc.outputs) || got.guarantee != tc.guarantee {
				t.Fatalf("got %+v, inputs %v, outputs %v, %s\nwant %+v, inputs %v, outputs %v, %s",
					got.expect, got.inputs, got.outputs, got.guarantee, tc.expect, tc.inputs, tc.outputs, tc.guarantee)
			}
			if !slices.Equal(got.client.Brokers, []string{"127.0.0.1:9092"}) {
				t.Fatalf("brokers %v", got.client.Brokers)
			}
		})
	}
}

// A flag that cannot be right is a usage error (exit 2) that names it.
func TestVerifyFlagsRefuseWhatCannotBeRight(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--brokers: give the Kafka cluster"},
		{[]string{"--brokers", " , "}, "--brokers: give the Kafka cluster"},
		{[]string{"--job", "../../fixtures/jobs/orders.yaml", "--relation", "orders"}, "--relation and --job"},
		{[]string{"--job", "nonexistent.yaml"}, "nonexistent.yaml"},
		{[]string{"--relation", "payments"}, `--relation "payments": want paid-orders or orders`},
		{[]string{"--inputs", "orders"}, "--inputs orders: want 2 topics, those of the orders then payments, in this order"},
		{[]string{"--relation", "orders", "--inputs", "a,b"}, "--inputs a,b: want one topic, that of the orders"},
		{[]string{"--inputs", "orders,orders"}, "orders twice"},
		{[]string{"--inputs", "orders,pay ments"}, `--inputs: "pay ments" is not a Kafka topic name`},
		{[]string{"--output", ""}, "--output: give the topic"},
		{[]string{"--output", "rev/enue"}, `--output: "rev/enue" is not a Kafka topic name`},
		{[]string{"--state-ttl", "-1s"}, "--state-ttl -1s: want 0"},
		{[]string{"--relation", "orders", "--state-ttl", "1m"}, "--state-ttl: relation orders joins nothing"},
		{[]string{"--guarantee", "none"}, `--guarantee "none": want exactly-once`},
		{[]string{"--id", "order id"}, `--id "order id"`},
		{[]string{"--tls-ca", "ca.pem"}, "--tls-ca ca.pem is used only with --tls"},
		{[]string{"--sasl-mechanism", "gssapi"}, `--sasl-mechanism "gssapi"`},
	} {
		args := tc.args
		if !slices.Contains(args, "--brokers") && len(args) > 0 {
			args = append([]string{"--brokers", "127.0.0.1:9092"}, args...)
		}
		_, err := verifyTargetOf(t, args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// The summary says the guarantee, ✓ or ✗, the four counts always and the
// others when they are not 0, and marks the counts that failed.
func TestVerifySummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    verify.Verification
		want string
	}{
		{"verified", verify.Verification{Expected: 473776, Committed: 473776, OK: true, Guarantee: "exactly-once"},
			"verify: exactly-once ✓  expected 473,776 · committed 473,776 · duplicates 0 · lost 0"},
		{"a duplicate", verify.Verification{Expected: 9470, Committed: 9471, Duplicates: 1, Guarantee: "exactly-once"},
			"verify: exactly-once ✗  expected 9,470 · committed 9,471 · duplicates 1 ✗ · lost 0"},
		{"a duplicate at least once", verify.Verification{Expected: 9470, Committed: 9471, Duplicates: 1, OK: true, Guarantee: "at-least-once"},
			"verify: at-least-once ✓  expected 9,470 · committed 9,471 · duplicates 1 (allowed at least once) · lost 0"},
		{"lost, unexpected and the rest", verify.Verification{Expected: 9470, Committed: 4002, Lost: 5470, Unexpected: 2, NotJoined: 12, BadInput: 3, Guarantee: "exactly-once"},
			"verify: exactly-once ✗  expected 9,470 · committed 4,002 · duplicates 0 · lost 5,470 ✗ · unexpected 2 ✗ · not joined 12 · bad input 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifySummary(tc.v); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The exit is run's: 0 verified, 4 with the counts that failed.
func TestVerifyExit(t *testing.T) {
	for _, tc := range []struct {
		v        verify.Verification
		code     int
		wantText string
	}{
		{verify.Verification{Expected: 10, Committed: 10, OK: true, Guarantee: "exactly-once"}, 0, ""},
		{verify.Verification{Expected: 10, Committed: 11, Duplicates: 1, OK: true, Guarantee: "at-least-once"}, 0, ""},
		{verify.Verification{Expected: 10, Committed: 11, Duplicates: 1, Guarantee: "exactly-once"}, 4, "verification failed: 1 duplicate"},
		{verify.Verification{Expected: 9470, Committed: 4002, Lost: 5470, Unexpected: 2, Guarantee: "at-least-once"}, 4, "verification failed: 5,470 lost, 2 unexpected"},
		{verify.Verification{Expected: 10, Committed: 12, Duplicates: 2, Lost: 1, Guarantee: "exactly-once"}, 4, "verification failed: 2 duplicates, 1 lost"},
	} {
		err := verifyExit(tc.v)
		if tc.code == 0 {
			if err != nil {
				t.Errorf("%+v: %v, want exit 0", tc.v, err)
			}
			continue
		}
		var ee exitError
		if !errors.As(err, &ee) || ee.code != tc.code || ee.Error() != tc.wantText {
			t.Errorf("%+v: %#v, want exit %d %q", tc.v, err, tc.code, tc.wantText)
		}
		if hint := strings.Contains(ee.then, "not have committed the lost records yet"); hint != (tc.v.Lost > 0) {
			t.Errorf("%+v: then %q: the hint that the job may not have committed them yet belongs to lost records, and only to them", tc.v, ee.then)
		}
	}
}
