package e2e

import "testing"

func TestRaceReportsAreSorted(t *testing.T) {
	sarama := `
==================
Write at 0x00c000103de0 by goroutine 1066:
  github.com/IBM/sarama.(*transactionManager).transitionTo()
      /x/transaction_manager.go:249 +0x30d

Previous read at 0x00c000103de0 by goroutine 1960:
  github.com/IBM/sarama.(*transactionManager).publishTxnPartitions()
      /x/transaction_manager.go:884 +0x2f3

Goroutine 1066 (running) created at:
  github.com/faultline-dev/faultline/runtime/kafka/sink.(*Output).newTxnProducer()
      /w/runtime/kafka/output.go:107 +0x1
`
	ours := `
Read at 0x00c0001 by goroutine 7:
  github.com/faultline-dev/faultline/runtime.(*task).run()
      /w/runtime/task.go:1 +0x1

Previous write at 0x00c0001 by goroutine 8:
  github.com/IBM/sarama.(*client).Close()
      /x/client.go:1 +0x1
`
	if racesInOurCode(sarama) {
		t.Error("a race between two Sarama frames counted as faultline's")
	}
	if !racesInOurCode(ours) {
		t.Error("a race with a faultline frame not counted as faultline's")
	}
}
