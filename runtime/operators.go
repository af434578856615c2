package runtime

import (
	"fmt"

	"github.com/faultline-dev/faultline/runtime/spec"
)

// Types is a job's own code: the operators of every type its spec may
// name besides source and sink, which the engine runs itself, and how the
// values they emit are kept in channel state (Flink: the user code of a
// JobGraph, its StreamOperator factories and type serializers). The
// engine names no type and no field of it; each job brings its own
// (runtime/jobs/…).
type Types interface {
	// NewOperator returns a new operator of op, one subtask's own; an
	// error for a type the job does not have.
	NewOperator(op *spec.Operator) (Operator, error)
	// NewInFlightDecoder returns a decoder of the values the operators
	// emit, as their InFlightValue stored them in channel state.
	NewInFlightDecoder() InFlightDecoder
}

// jobDecoder is a new decoder of the values of types (nil: none).
func jobDecoder(types Types) InFlightDecoder {
	if types == nil {
		return nil
	}
	return types.NewInFlightDecoder()
}

// newOperator builds the operator of a spec entry (sources are run by the
// source task directly and have no Operator): a sink, or one of the job's
// own types. bad is what the sink reports through.
func newOperator(job *spec.Job, op *spec.Operator, env *Env, types Types, bad *badRecords) (Operator, error) {
	if op.Type == spec.TypeSink {
		out, err := env.output(op.Topic)
		if err != nil {
			return nil, err
		}
		return &sinkOp{out: out, topic: op.Topic, key: op.Key, txnPrefix: env.TxnPrefix, progress: bad.progress,
			skipSet: skipSet{ids: idField(job), skipped: &bad.replaySkipped, obs: bad.obs}}, nil
	}
	if types == nil {
		return nil, fmt.Errorf("operator %s: type %q has no implementation (the job brings no operator types)", op.Name, op.Type)
	}
	o, err := types.NewOperator(op)
	if err != nil {
		return nil, fmt.Errorf("operator %s: %w", op.Name, err)
	}
	return o, nil
}
