package sink

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/kafka"
)

// WritePoison writes runtime.PoisonRecord into partition of topic and returns its
// offset (the poison fault).
func WritePoison(c kafka.Client, topic string, partition int32) (int64, error) {
	p, err := c.SyncProducer()
	if err != nil {
		return 0, fmt.Errorf("poison %s/%d: %w", topic, partition, err)
	}
	defer p.Close()
	_, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.ByteEncoder(runtime.PoisonRecord)})
	if err != nil {
		return 0, fmt.Errorf("poison %s/%d: %w", topic, partition, err)
	}
	return off, nil
}

// DeadLetters writes the records a job cannot parse to a dead-letter topic
// (runtime.DeadLetters), each with headers naming the subtask, the reason,
// and the topic, partition and offset the source read it at (as Kafka
// Connect's error headers do, their values as text). Writes are at least
// once.
type DeadLetters struct {
	c     kafka.Client
	topic string

	mu sync.Mutex
	p  sarama.SyncProducer // opened on the first write
}

// NewDeadLetters writes to topic of cluster c.
func NewDeadLetters(c kafka.Client, topic string) *DeadLetters {
	return &DeadLetters{c: c, topic: topic}
}

// Topic implements runtime.DeadLetters.
func (d *DeadLetters) Topic() string { return d.topic }

// DeadLetter implements runtime.DeadLetters.
func (d *DeadLetters) DeadLetter(task string, record []byte, from runtime.Origin, reason string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p == nil {
		p, err := d.c.SyncProducer()
		if err != nil {
			return err
		}
		d.p = p
	}
	headers := []sarama.RecordHeader{
		{Key: []byte("faultline-task"), Value: []byte(task)},
		{Key: []byte("faultline-reason"), Value: []byte(reason)},
	}
	if from.Topic != "" {
		headers = append(headers,
			sarama.RecordHeader{Key: []byte("faultline-topic"), Value: []byte(from.Topic)},
			sarama.RecordHeader{Key: []byte("faultline-partition"), Value: strconv.AppendInt(nil, int64(from.Partition), 10)},
			sarama.RecordHeader{Key: []byte("faultline-offset"), Value: strconv.AppendInt(nil, from.Offset, 10)})
	}
	_, _, err := d.p.SendMessage(&sarama.ProducerMessage{
		Topic: d.topic, Partition: 0, Value: sarama.ByteEncoder(append([]byte(nil), record...)), Headers: headers,
	})
	return err
}

// Close closes the producer.
func (d *DeadLetters) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p == nil {
		return nil
	}
	err := d.p.Close()
	d.p = nil
	return err
}

// The engine takes the dead-letter topic as a runtime.DeadLetters.
var _ runtime.DeadLetters = (*DeadLetters)(nil)
