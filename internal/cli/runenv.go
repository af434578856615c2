package cli

// The run's environment: the Kafka sources and transactional outputs
// behind the job's topics, the dead-letter writer, the poison fault's
// writer, and the engine's configuration of the run.

import (
	"fmt"

	"github.com/faultline-dev/faultline/checkpoint"
	"github.com/faultline-dev/faultline/internal/clock"
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/sink"
	"github.com/faultline-dev/faultline/runtime/kafka/source"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// buildEnv makes the job's environment (its Kafka sources and outputs, the
// dead-letter writer, the poison fault's writer) and the job.
func (r *runState) buildEnv() error {
	o, p := r.o, r.p
	env := &runtime.Env{Sources: map[string]runtime.Source{}, Outputs: map[string]runtime.TxnOutput{}, TxnPrefix: o.kafka.txnPrefix}
	r.sources = map[string]*source.Source{}
	r.outputStart = map[string]map[int32]int64{}
	r.outputs = map[string]*sink.Output{}
	r.bounded = o.records > 0 || o.kafka.bounded
	for _, op := range p.job.Operators {
		var err error
		switch op.Type {
		case spec.TypeSource:
			err = r.addSource(op)
		case spec.TypeSink:
			err = r.addOutput(op)
		}
		if err != nil {
			return exitError{code: 1, err: err}
		}
	}
	if o.onBadRecord == runtime.BadRecordDeadLetter {
		dlq := sink.NewDeadLetters(p.client, o.deadLetterTopic)
		r.onClose(func() { dlq.Close() })
		env.DeadLetters = dlq
	}
	env.Poison = r.writePoison
	// The job names topics as its spec does; the env serves them from Kafka.
	for _, op := range p.job.Operators {
		switch op.Type {
		case spec.TypeSource:
			env.Sources[op.Topic] = r.sources[p.topicMap[op.Name]]
		case spec.TypeSink:
			env.Outputs[op.Topic] = r.outputs[p.topicMap[op.Name]]
		}
	}
	var err error
	if r.job, err = runtime.New(r.jobConfig(env)); err != nil {
		return asFlagError(err)
	}
	return nil
}

// addSource makes the Kafka source behind source operator op, once per
// topic; a bounded run's source ends where the input ends now (or where
// the generator says, while the writer still fills the topic).
func (r *runState) addSource(op *spec.Operator) error {
	o, p := r.o, r.p
	topic := p.topicMap[op.Name]
	if r.sources[topic] != nil {
		return nil
	}
	var ends map[int32]int64
	var err error
	switch {
	case r.generate && o.records > 0:
		ends = map[int32]int64{}
		for p := 0; p < orders.GeneratorPartitions; p++ {
			ends[int32(p)] = r.gen.EndOffset(op.Topic, p)
		}
	case r.bounded:
		if ends, err = kafka.EndOffsets(r.cl, topic); err != nil {
			return err
		}
	}
	s, err := source.NewSource(p.client, r.cl, topic, p.startup, o.kafka.group, ends)
	if err != nil {
		return err
	}
	r.sources[topic] = s
	return nil
}

// addOutput makes the transactional Kafka output behind sink operator op,
// once per topic, and notes where the topic ended before the run.
func (r *runState) addOutput(op *spec.Operator) error {
	o, p := r.o, r.p
	topic := p.topicMap[op.Name]
	if r.outputs[topic] != nil {
		return nil
	}
	var err error
	if r.outputStart[topic], err = kafka.EndOffsets(r.cl, topic); err != nil {
		return err
	}
	out, err := sink.NewOutput(p.client, r.cl, topic, p.sinkG)
	if err != nil {
		return err
	}
	// A request that fails with an error that may pass is retried for as
	// long as a checkpoint may take.
	out.WithTransactionTimeout(o.kafka.txnTimeout).WithRetryTimeout(o.timeout)
	r.onClose(func() { out.Close() })
	r.outputs[topic] = out
	return nil
}

// writePoison is the poison fault: it writes a record no parser accepts
// into the Kafka topic behind a generator topic; a bounded source reads
// one record more there.
func (r *runState) writePoison(topic string, partition int32) (int64, error) {
	actual := r.p.logicalTopics()[topic]
	src := r.sources[actual]
	if src == nil {
		return 0, fmt.Errorf("the job reads no %s topic", topic)
	}
	src.ExtendEnd(partition, 1)
	off, err := sink.WritePoison(r.p.client, actual, partition)
	if err != nil {
		src.ExtendEnd(partition, -1)
	}
	return off, err
}

// jobConfig is the engine's configuration of the run, on env.
func (r *runState) jobConfig(env *runtime.Env) runtime.Config {
	o, p := r.o, r.p
	return runtime.Config{
		Types: orders.Types{},
		Job:   p.job,
		Env:   env,
		Mode:  p.mode,
		// With a timeout, checkpoints start aligned and switch (as in
		// Flink, where the timeout applies when unaligned ones are on).
		Unaligned:      o.unaligned && o.alignedTimeout == 0,
		AlignedTimeout: o.alignedTimeout,
		AtLeastOnce:    r.ledger.Lenient,
		Checkpoint: checkpoint.Config{
			Interval: o.interval, MinPause: o.minPause, Timeout: o.timeout,
			MaxConcurrent: o.maxConcurrent, TolerableFailures: o.tolerable,
		},
		Store:           inputStore{r.store, r.recordInput},
		StateConfig:     runtime.StateConfig{StateBackend: o.stateBackend, Incremental: o.incremental, WorkDir: r.workDir},
		AllowFreshStart: o.allowFreshStart,
		Restart:         p.strategy,
		Failover:        p.failover,
		OnBadRecord:     o.onBadRecord,
		Faults:          p.faults,
		Clock:           clock.Real{},
		Observer:        r.obs,
		ChannelConfig:   runtime.ChannelConfig{ChannelCapacity: o.channelCapacity, BatchSize: o.batchSize},
		Hooks:           runtime.Hooks{BrokerDown: r.brokerDown, Logf: r.logger.Printf, Crash: r.crashHook()},
	}
}
