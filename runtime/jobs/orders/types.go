// Package orders is the orders job: its records (orders, payments, paid
// orders, revenue), the operators a job spec names besides source and sink
// (parse, enrich, join, aggregate), how its values are kept in channel
// state, and the seeded generator of its input. The engine (runtime) names
// none of it: the command line hands Types to the job it runs.
package orders

import (
	"fmt"

	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/spec"
)

// Types is the job's code for the engine (runtime.Types).
type Types struct{}

var _ runtime.Types = Types{}

// NewOperator implements runtime.Types.
func (Types) NewOperator(op *spec.Operator) (runtime.Operator, error) {
	switch op.Type {
	case TypeParse:
		return &parseOp{schema: op.Schema}, nil
	case TypeEnrich:
		return &enrichOp{}, nil
	case TypeJoin:
		return &joinOp{ttl: op.StateTTL.Milliseconds()}, nil
	case TypeAggregate:
		return &aggregateOp{}, nil
	}
	return nil, fmt.Errorf("type %q has no implementation in the orders job", op.Type)
}

// NewInFlightDecoder implements runtime.Types.
func (Types) NewInFlightDecoder() runtime.InFlightDecoder { return &inFlightDecoder{} }
