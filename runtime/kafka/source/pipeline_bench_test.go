package source

import (
	"strconv"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
)

// barePipeline is the machine's limit for the job with the same bytes and
// no operators: plain Sarama partition consumers read both input topics
// (client start included) and hand each payment, as it is, to one writer
// that writes it to the output topic in a transaction, through the same
// transactional writer as the job's sink, and pre-commits and commits the
// transaction every interval, as the job does at each checkpoint. A paid
// order is one output record in the job, a payment one here: about the
// same records and bytes. It returns how long it took, up to the last
// commit, and how many records it wrote.
func barePipeline(b *testing.B, c kafka.Client, total int64, round int, interval time.Duration) (time.Duration, int64) {
	start := time.Now()
	cl := bareClient(b, c)
	defer cl.Close()
	out, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	batches := make(chan []*sarama.ConsumerMessage, 64)
	var n int64
	var readErr error
	read := make(chan struct{})
	go func() { n, readErr = readInputs(cl, batches); close(read) }()
	written := writeInTransactions(b, out, batches, "bare-"+strconv.Itoa(round)+"-", interval)
	<-read
	if readErr != nil || n != total {
		b.Fatalf("bare pipeline read %d records, want %d: %v", n, total, readErr)
	}
	return time.Since(start), written
}

// consumeTo reads pc up to end, hands the records in batches of 256 to
// batches when forward is set (dropping them otherwise), and returns how
// many it read.
func consumeTo(pc sarama.PartitionConsumer, end int64, forward bool, batches chan<- []*sarama.ConsumerMessage) int64 {
	defer pc.AsyncClose()
	var n int64
	var batch []*sarama.ConsumerMessage
	for m := range pc.Messages() {
		n++
		if forward {
			batch = append(batch, m)
			if len(batch) == 256 {
				batches <- batch
				batch = nil
			}
		}
		if m.Offset+1 >= end {
			break
		}
	}
	if len(batch) > 0 {
		batches <- batch
	}
	return n
}

// writeInTransactions writes every record of batches to out, one
// transaction per interval, each pre-committed and committed as the next
// begins, the last one once batches is closed; it returns how many records
// it wrote.
func writeInTransactions(b *testing.B, out *sink.Output, batches <-chan []*sarama.ConsumerMessage, prefix string, interval time.Duration) int64 {
	var written int64
	txn, next := 0, time.Now().Add(interval)
	name := func() string { return prefix + strconv.Itoa(txn) }
	commit := func() {
		c, err := out.Prepare(name())
		if err == nil && c != "" {
			err = out.Commit(c)
		}
		if err != nil {
			b.Fatalf("bare pipeline, transaction %s: %v", name(), err)
		}
		txn++
	}
	for batch := range batches {
		for _, m := range batch {
			if err := out.WriteAt(name(), m.Key, m.Value, m.Timestamp); err != nil {
				b.Fatalf("bare pipeline write: %v", err)
			}
		}
		written += int64(len(batch))
		if time.Now().After(next) {
			commit()
			next = time.Now().Add(interval)
		}
	}
	commit()
	return written
}
