package attach

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka"
)

// DefaultControlTopic is the control topic the peer job (bench/flink's
// PeerJob) reads faults from.
const DefaultControlTopic = "faultline-control"

// ControlFault is one record of the control topic, the format a job's
// fault hook reads (bench/flink/README.md, "The fault control topic"):
// Task is OPERATOR/INDEX, the operator by the name the job gave it.
type ControlFault struct {
	Fault      string  `json:"fault"` // panic or slow
	Task       string  `json:"task"`
	Factor     float64 `json:"factor,omitempty"`      // slow: handle 1/factor of the rate
	DurationMs int64   `json:"duration_ms,omitempty"` // slow: for how long
	ID         string  `json:"id,omitempty"`
}

// The slowdown a slow fault asks for, as faultline's own.
const (
	slowFactor   = 10
	slowDuration = 10 * time.Second
)

// Control writes faults into a job's control topic.
type Control struct {
	Topic  string
	client kafka.Client

	mu       sync.Mutex
	producer sarama.SyncProducer // opened with the first fault
}

// NewControl writes into topic of the Kafka cluster c reaches.
func NewControl(c kafka.Client, topic string) *Control {
	return &Control{Topic: topic, client: c}
}

// Send writes f; it returns once the broker has it.
func (c *Control) Send(f ControlFault) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.producer == nil {
		p, err := c.client.SyncProducer()
		if err != nil {
			return fmt.Errorf("the control topic's brokers %s: %w", strings.Join(c.client.Brokers, ","), err)
		}
		c.producer = p
	}
	if _, _, err := c.producer.SendMessage(&sarama.ProducerMessage{Topic: c.Topic, Value: sarama.ByteEncoder(b)}); err != nil {
		return fmt.Errorf("write to the control topic %s: %w", c.Topic, err)
	}
	return nil
}

// Close closes its connections.
func (c *Control) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.producer == nil {
		return nil
	}
	return c.producer.Close()
}

// controlTask is the control topic's name of the screen's subtask task: a
// vertex of chained operators is named by the last of them, which is the
// one a hook in the chain's user code most likely sits in
// ("orders-source→parse-orders/1" is parse-orders/1).
func controlTask(task string) string {
	i := strings.LastIndex(task, "/")
	if i < 0 {
		return task
	}
	ops := chained(task[:i])
	return ops[len(ops)-1] + task[i:]
}
