package live

import (
	"testing"

	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// A dial that fails after its clients are open (here: the output topic's
// name is one Kafka refuses) closes them and is retried with the error
// said, where it used to panic on a nil connection and crash the program
// (the broker-down tour met it as the broker went away mid-dial).
func TestLiveVerifierDialFailingLateClosesAndRetries(t *testing.T) {
	_, c := kafkatest.LiveBroker(t, 1)
	defer noLeaks(t)()
	v := NewLiveVerifier(LiveConfig{Client: c, Inputs: map[string]string{"orders": "orders"}, Output: "bad topic!", Expect: kafkatest.ExpectOrders("orders", 0)})
	conn, _, err := v.dial()
	if err == nil || conn != nil {
		t.Fatalf("dial over a topic Kafka refuses: conn %v, err %v", conn, err)
	}
	t.Logf("dial: %v", err)
}
