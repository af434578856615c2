package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/internal/attach"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/view"
)

// serveControl takes faults from the run's control topic (--control-topic)
// while the job runs, in the format faultline attach writes them
// (attach.ControlFault), so that attach's x reaches a run as it reaches a
// Flink job with the fault hook. Only faults written after the run started
// are taken.
func (r *runState) serveControl(ctrl *uiController) error {
	topic := r.o.controlTopic
	if topic == "" {
		return nil
	}
	fail := func(err error) error {
		return exitError{code: 1, err: fmt.Errorf("--control-topic %s: %w", topic, err)}
	}
	cl, err := r.p.client.NewClient()
	if err != nil {
		return fail(err)
	}
	if err := kafka.EnsureTopics(context.Background(), cl, map[string]int32{topic: 1}); err != nil {
		cl.Close()
		return fail(err)
	}
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		cl.Close()
		return fail(err)
	}
	parts, err := cl.Partitions(topic)
	var pcs []sarama.PartitionConsumer
	for _, p := range parts {
		pc, perr := cons.ConsumePartition(topic, p, sarama.OffsetNewest)
		if perr != nil {
			err = perr
			break
		}
		pcs = append(pcs, pc)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	r.onClose(func() {
		cancel()
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		wg.Wait()
		cons.Close()
		cl.Close()
	})
	if err != nil {
		return fail(err)
	}
	for _, pc := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.readControl(ctx, pc.Messages(), ctrl)
		}()
	}
	r.obs.Emit(view.Notice{Text: "faults are taken from the control topic " + topic + " (faultline attach's x writes them there)"})
	return nil
}

// readControl injects the fault of each control record until ctx ends or
// the partition's consumer closes.
func (r *runState) readControl(ctx context.Context, msgs <-chan *sarama.ConsumerMessage, ctrl *uiController) {
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			if err := injectControl(ctrl, m.Value); err != nil {
				r.obs.Emit(view.Notice{Text: "control topic: " + err.Error()})
			}
		}
	}
}

// injectControl injects the fault one control record names; a record that
// names none, or a fault the job cannot take, is an error.
func injectControl(ctrl interface {
	InjectFor(fault, task string, d time.Duration) error
}, b []byte) error {
	var f attach.ControlFault
	if err := json.Unmarshal(b, &f); err != nil || f.Fault == "" || f.Task == "" {
		if len(b) > 80 {
			b = append(b[:77:77], "..."...)
		}
		return fmt.Errorf(`%q is not a fault: want {"fault":"panic","task":"join/0"}`, b)
	}
	if err := ctrl.InjectFor(f.Fault, f.Task, time.Duration(f.DurationMs)*time.Millisecond); err != nil {
		return fmt.Errorf("%s for %s: %w", f.Fault, f.Task, err)
	}
	return nil
}
