package source

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/fill"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// bareConsume reads every record of the input topics with plain Sarama
// partition consumers, start-up included, and returns how long it took.
func bareConsume(b *testing.B, c kafka.Client, total int64) time.Duration {
	start := time.Now()
	cl := bareClient(b, c)
	defer cl.Close()
	if n, err := readInputs(cl, nil); err != nil || n != total {
		b.Fatalf("bare consumer read %d records, want %d: %v", n, total, err)
	}
	return time.Since(start)
}

// bareClient is a plain Sarama client of the bare sides.
func bareClient(b *testing.B, c kafka.Client) sarama.Client {
	cl, err := c.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// readInputs reads every partition of the input topics to its end with
// one plain Sarama partition consumer each, handing the payments in
// batches to payments unless it is nil (which it closes at the end), and
// returns how many records it read.
func readInputs(cl sarama.Client, payments chan<- []*sarama.ConsumerMessage) (int64, error) {
	if payments != nil {
		defer close(payments)
	}
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return 0, err
	}
	defer cons.Close()
	started := 0
	done := make(chan int64)
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		for p := int32(0); p < orders.GeneratorPartitions; p++ {
			end, _ := cl.GetOffset(topic, p, sarama.OffsetNewest)
			pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
			if err != nil {
				for range started {
					<-done
				}
				return 0, err
			}
			started++
			go func() { done <- consumeTo(pc, end, topic == orders.TopicPayments && payments != nil, payments) }()
		}
	}
	var n int64
	for range started {
		n += <-done
	}
	return n, nil
}

// runJob runs the default job on the Kafka topics, bounded, with
// exactly-once checkpoints every interval (0: none, the sink commits at the
// end) into store (nil: in memory) and the transactional sink. It returns
// how long it took and how many checkpoints completed.
func runJob(b *testing.B, c kafka.Client, total int64, interval time.Duration, store checkpoint.Store) (time.Duration, int) {
	return runJobSpec(b, c, orders.Default(), total, interval, store)
}

// runJobSpec is runJob with the job sp, the default job with other
// parallelisms.
func runJobSpec(b *testing.B, c kafka.Client, sp *spec.Job, total int64, interval time.Duration, store checkpoint.Store) (time.Duration, int) {
	start := time.Now()
	cl, err := c.NewClient()
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{}, TxnPrefix: "bench"}
	for _, topic := range []string{orders.TopicOrders, orders.TopicPayments} {
		ends, err := kafka.EndOffsets(cl, topic)
		if err != nil {
			b.Fatal(err)
		}
		s, err := NewSource(c, cl, topic, StartEarliest, "", ends)
		if err != nil {
			b.Fatal(err)
		}
		env.Sources[topic] = s
	}
	out, err := sink.NewOutput(c, cl, "revenue", sink.ExactlyOnce)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	env.Outputs["revenue"] = out
	j, err := runtime.New(runtime.Config{Types: orders.Types{}, Job: sp, Env: env, Checkpoint: checkpoint.Config{Interval: interval}, Store: store})
	if err != nil {
		b.Fatal(err)
	}
	obs := j.Observer()
	go func() {
		for range obs.Events() {
		}
	}()
	res, err := j.Run(context.Background(), runtime.RunOptions{})
	obs.Close()
	if err != nil {
		b.Fatalf("job: %v", err)
	}
	if res.Status != runtime.JobFinished || res.RecordsIn != total {
		b.Fatalf("job: %v, status %v, read %d of %d", err, res.Status, res.RecordsIn, total)
	}
	return time.Since(start), res.Checkpoints.Completed
}

// benchRecords is the input of the comparisons with the bare consumer and
// pipeline: long enough for the job to take a few checkpoints at its 2 s
// interval.
const benchRecords = 8_000_000

// benchInterval is the job's and the bare pipeline's checkpoint interval,
// faultline run's default.
const benchInterval = 2 * time.Second

// filledBroker is an embedded broker (in memory, or in dataDir) holding
// records input records, with its client and the count.
func filledBroker(b *testing.B, dataDir string, records int64) (*broker.Embedded, kafka.Client, int64) {
	b.Helper()
	e, err := broker.StartEmbedded(0, dataDir, kafkatest.Topics("revenue", 1))
	if err != nil {
		b.Fatal(err)
	}
	c := kafka.Client{Brokers: []string{e.Addr}}
	cl, err := c.NewClient()
	if err != nil {
		e.Close()
		b.Fatal(err)
	}
	defer cl.Close()
	gen := orders.NewGenerator(1, records, orders.GeneratorPartitions)
	total, err := fill.NewWriter(c, cl, gen).Fill(context.Background())
	if err != nil {
		e.Close()
		b.Fatal(err)
	}
	return e, c, total
}

// BenchmarkJobVersusBare reads the same input of the embedded broker (in
// memory) with a bare Sarama consumer, with the bare transactional pipeline
// (the same reads, each payment written to the output in transactions
// committed every 2 s) and with the whole default job (exactly-once
// checkpoints every 2 s, the transactional sink), the three alternated in
// each round (b.N rounds; make bench runs three), and reports the median
// rates, the medians of the job's rate over each bare one's (goals: 0.8 of
// the consumer, 0.9 of the pipeline), and the median CPU time per input
// record of each, which, with the embedded broker in the process, includes
// the broker's.
func BenchmarkJobVersusBare(b *testing.B) {
	e, c, total := filledBroker(b, "", benchRecords)
	defer e.Close()
	b.ResetTimer()
	var consumer, pipeline, job sideResult
	var ckpts []float64
	for i := 0; i < b.N; i++ {
		consumer.time("bare-consumer", total, func() time.Duration { return bareConsume(b, c, total) })
		pipeline.time("bare-pipeline", total, func() time.Duration {
			d, _ := barePipeline(b, c, total, i, benchInterval)
			return d
		})
		job.time("job", total, func() time.Duration {
			d, n := runJob(b, c, total, benchInterval, nil)
			ckpts = append(ckpts, float64(n))
			return d
		})
	}
	consumer.report(b, "bare-consumer")
	pipeline.report(b, "bare-pipeline")
	job.report(b, "job")
	b.ReportMetric(medianRatio(job, consumer), "ratio-consumer")
	b.ReportMetric(medianRatio(job, pipeline), "ratio-pipeline")
	b.ReportMetric(median(ckpts), "checkpoints-job")
	b.ReportMetric(0, "ns/op")
}
