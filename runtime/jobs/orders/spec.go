package orders

import "github.com/faultline-dev/faultline/runtime/spec"

// DefaultYAML is the built-in default job (see DESIGN.md, "The default job").
// fixtures/jobs/orders.yaml holds the same text, byte for byte; a test keeps
// the two in step.
const DefaultYAML = `# The default job: revenue per customer from paid orders.
#
#   orders   → orders-source[2]   → parse-orders[2]   ─┐ keyBy(order_id)
#   payments → payments-source[2] → parse-payments[2] ─┴▶ join[2] ─keyBy(customer)▶ revenue[2] ─▶ sink[1] → revenue
#
# The join holds orders and payments in keyed state until both sides of an
# order have arrived (a payment may come first), for at most state_ttl of event
# time (the records' Kafka timestamps): an order whose payment is more than a
# minute apart from it is not joined, and the verification expects exactly
# that; revenue keeps a running total per customer. The sink writes one record per paid order inside Kafka
# transactions, keyed by customer, so a run can check that every paid order is
# in the committed output exactly once (verify: paid-orders), counting the
# records by their order_id (id). faultline runs this job when no --job is
# given; runtime/jobs/orders.DefaultYAML holds the same text. The two sources
# read at most a second of event time ahead of one another
# (watermark_alignment): at full speed one would otherwise run ahead of the
# other, and the join would keep its records waiting for their partners.
name: orders
max_parallelism: 128
verify: paid-orders
id: order_id
operators:
  - name: orders-source
    type: source
    topic: orders
    parallelism: 2
    watermark_alignment: 1s
  - name: payments-source
    type: source
    topic: payments
    parallelism: 2
    watermark_alignment: 1s
  - name: parse-orders
    type: parse
    schema: order
    parallelism: 2
    inputs:
      - from: orders-source
        edge: forward
  - name: parse-payments
    type: parse
    schema: payment
    parallelism: 2
    inputs:
      - {from: payments-source, edge: forward}
  - name: join
    type: join
    parallelism: 2
    state_ttl: 1m
    inputs:
      - {from: parse-orders, edge: hash, key: order_id}
      - {from: parse-payments, edge: hash, key: order_id}
  - name: revenue
    type: aggregate
    parallelism: 2
    inputs:
      - {from: join, edge: hash, key: customer}
  - name: sink
    type: sink
    topic: revenue
    key: customer
    parallelism: 1
    inputs:
      - {from: revenue, edge: rebalance}
`

// DefaultFile is the File of the job Default returns.
const DefaultFile = "built-in default job"

// Default returns the built-in default job: orders and payments joined by
// order_id, revenue per customer, written to the revenue topic. Each call
// returns a new Job that the caller may change.
func Default() *spec.Job {
	job, err := spec.Parse(DefaultFile, []byte(DefaultYAML), Catalogue())
	if err != nil {
		panic("orders: the built-in default job is invalid: " + err.Error())
	}
	return job
}
