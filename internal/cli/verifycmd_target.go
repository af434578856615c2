package cli

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/runtime/flatjson"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/spec"
	"github.com/faultline-dev/faultline/runtime/verify"
)

// verifyFlags are the flags of `faultline verify`.
type verifyFlags struct {
	// kafka holds --brokers and run's TLS and SASL flags; its other
	// fields are run's and stay unset.
	kafka     kafkaOptions
	jobFile   string
	relation  string
	inputs    []string
	outputs   []string
	id        string
	stateTTL  time.Duration
	guarantee string
	asJSON    bool
	// given says whether a flag was given on the command line (cobra's
	// Changed): one that was not takes the job's value, not its default.
	given func(name string) bool
}

// verifyTarget is what one verification reads and what it expects of it.
type verifyTarget struct {
	client kafka.Client
	expect verify.Expect
	// inputs are the Kafka topics of expect.Inputs, in their order.
	inputs []string
	// outputs are the Kafka topics of the committed output, read as one.
	outputs   []string
	guarantee string
}

// inputTopics maps the relation's inputs to the Kafka topics they are
// read from (kafka.Inputs.Topics).
func (t verifyTarget) inputTopics() map[string]string {
	m := map[string]string{}
	for i, in := range t.expect.Inputs {
		m[in] = t.inputs[i]
	}
	return m
}

// target resolves the flags against job (the default job, or --job's):
// every flag not given takes the job's value, so that --job names a
// relation whole and a flag given beside it says where it differs, as
// run's --state-ttl and --topic do. --relation is the exception: a job's
// operators decide it (a join: paid-orders), so it is refused with --job.
func (f *verifyFlags) target(job *spec.Job) (verifyTarget, error) {
	var t verifyTarget
	var err error
	if t.client, err = f.kafka.client(); err != nil {
		return t, err
	}
	if len(t.client.Brokers) == 0 {
		return t, usagef("--brokers: give the Kafka cluster whose output to check, e.g. --brokers 127.0.0.1:9092 (the address faultline broker prints)")
	}
	if t.guarantee, err = parseVerifyGuarantee(f.guarantee); err != nil {
		return t, err
	}
	if t.expect, err = f.expect(job); err != nil {
		return t, err
	}
	if t.inputs, err = f.inputTopics(t.expect.Inputs); err != nil {
		return t, err
	}
	if t.outputs, err = f.outputTopics(job); err != nil {
		return t, err
	}
	return t, nil
}

// parseVerifyGuarantee checks --guarantee.
func parseVerifyGuarantee(g string) (string, error) {
	switch g {
	case "exactly-once", "at-least-once":
		return g, nil
	}
	return "", usagef("--guarantee %q: want exactly-once (no duplicates, nothing lost) or at-least-once (nothing lost; duplicates are counted but pass)", g)
}

// expect is what the output must hold: the relation, the id and the
// state TTL, from the flags or job.
func (f *verifyFlags) expect(job *spec.Job) (verify.Expect, error) {
	cat := orders.Catalogue()
	kind := job.Verify
	if f.given("relation") {
		if f.jobFile != "" {
			return verify.Expect{}, usagef("--relation and --job: the job's operators decide its relation (%s for %s); give one of them", job.Verify, f.jobFile)
		}
		if !slices.Contains(cat.Verifies, f.relation) {
			return verify.Expect{}, usagef("--relation %q: want %s", f.relation, strings.Join(cat.Verifies, " or "))
		}
		kind = f.relation
	}
	rel := cat.Relations[kind]
	e := verify.Expect{Kind: kind, Inputs: slices.Clone(rel.Inputs), Joined: rel.Joined, ID: job.ID}
	if f.given("id") {
		if _, err := flatjson.NewField(f.id); err != nil {
			return verify.Expect{}, usagef("--id %q: want the name of the field that identifies a record: letters, digits, _, - and .", f.id)
		}
		e.ID = f.id
	}
	switch {
	case f.given("state-ttl") && !rel.Joined:
		return verify.Expect{}, usagef("--state-ttl: relation %s joins nothing, so no record waits for a partner", kind)
	case f.given("state-ttl") && (f.stateTTL < 0 || (f.stateTTL > 0 && f.stateTTL < time.Millisecond)):
		return verify.Expect{}, usagef("--state-ttl %s: want 0 (every paid order is expected) or at least 1ms", f.stateTTL)
	case f.given("state-ttl"):
		e.StateTTL = f.stateTTL
	case rel.Joined:
		e.StateTTL = verify.ExpectOf(job).StateTTL
	}
	return e, nil
}

// inputTopics are the Kafka topics of the relation's inputs rel: --inputs,
// one for each in rel's order, or rel's own names (a job's sources read
// topics named so).
func (f *verifyFlags) inputTopics(rel []string) ([]string, error) {
	if !f.given("inputs") {
		return slices.Clone(rel), nil
	}
	if len(f.inputs) != len(rel) {
		want := "one topic, that of the " + rel[0]
		if len(rel) > 1 {
			want = fmt.Sprintf("%d topics, those of the %s, in this order", len(rel), strings.Join(rel, " then "))
		}
		return nil, usagef("--inputs %s: want %s", strings.Join(f.inputs, ","), want)
	}
	for i, topic := range f.inputs {
		if !spec.IsTopicName(topic) {
			return nil, usagef("--inputs: %q is not a Kafka topic name: %s", topic, spec.TopicNameRule)
		}
		if slices.Contains(f.inputs[:i], topic) {
			return nil, usagef("--inputs %s: %s twice; each input is a topic of its own", strings.Join(f.inputs, ","), topic)
		}
	}
	return slices.Clone(f.inputs), nil
}

// outputTopics are --output's topics, or the topics job's sinks write.
func (f *verifyFlags) outputTopics(job *spec.Job) ([]string, error) {
	if !f.given("output") {
		var out []string
		for _, op := range job.Operators {
			if op.Type == spec.TypeSink && !slices.Contains(out, op.Topic) {
				out = append(out, op.Topic)
			}
		}
		return out, nil
	}
	if len(f.outputs) == 0 {
		return nil, usagef("--output: give the topic the job writes, e.g. --output revenue")
	}
	var out []string
	for _, topic := range f.outputs {
		if !spec.IsTopicName(topic) {
			return nil, usagef("--output: %q is not a Kafka topic name: %s", topic, spec.TopicNameRule)
		}
		if !slices.Contains(out, topic) {
			out = append(out, topic)
		}
	}
	return out, nil
}
