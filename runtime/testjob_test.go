package runtime_test

import (
	"github.com/faultline-dev/faultline/runtime"
	"github.com/faultline-dev/faultline/runtime/jobs/orders"
)

// The engine's tests run the orders job (see runtime.TestJob).
func init() {
	runtime.SetTestJob(runtime.TestJob{
		Types:      orders.Types{},
		Partitions: orders.GeneratorPartitions,
		Spec:       orders.Default,
		YAML:       orders.DefaultYAML,
		Catalogue:  orders.Catalogue(),
		NewInput: func(seed, records int64, rate float64) runtime.TestInput {
			return orders.NewGenerator(seed, records, orders.GeneratorPartitions).WithRate(rate)
		},
	})
}
