package master

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/faultline-dev/faultline/restart"
)

// The scripts in testdata drive one Master each, on a clock of their own
// that only "advance" moves. Commands:
//
//	new failover=F restart=S [attempts=N delay=D max=N interval=D]
//	    [final-checkpoint] [savepoint-on-exit] [resubmit]
//	  with the pipelined regions in the input, one per line; subtasks
//	  named src/… are the sources
//	start | deployed | deploy-failed
//	fail task=T [instance=N] [fault=ID [timed]] [err=E|unrecoverable]
//	finish task=T [instance=N] | at-end task=T [instance=N]
//	job-failed [epoch=N] | fault id=ID [task=T] [timed] | checkpoint id=N
//	elapse | restored [checkpoint=N] | restore-failed | replaced
//	replace-failed | committed [err=E] | cancel [crashed] [savepoint] | resubmit
//	advance D
//
// Each prints the actions the master returned and where it stands.
func TestMaster(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h harness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type harness struct {
	m   *Master
	now time.Time
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd == "new" {
		h.m, h.now = New(newConfig(t, d)), time.Unix(0, 0)
		return "ok"
	}
	if d.Cmd == "advance" {
		by, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		h.now = h.now.Add(by)
		return "ok"
	}
	if h.m == nil {
		d.Fatalf(t, "no master: start the script with new")
	}
	ev := h.event(t, d)
	var b strings.Builder
	for _, a := range h.m.Step(ev, h.now) {
		b.WriteString(describe(a) + "\n")
	}
	fmt.Fprintf(&b, "-- %s, epoch %d", h.m.Phase(), h.m.Epoch())
	return b.String()
}

func newConfig(t *testing.T, d *datadriven.TestData) Config {
	var regions [][]string
	var sources []string
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		r := strings.Fields(line)
		for _, task := range r {
			if strings.HasPrefix(task, "src/") {
				sources = append(sources, task)
			}
		}
		regions = append(regions, r)
	}
	failover, err := restart.ParseFailoverStrategy(arg(d, "failover", "full"))
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return Config{
		Handler:         restart.NewHandler(backoff(t, d), failover, regions),
		Sources:         sources,
		FinalCheckpoint: d.HasArg("final-checkpoint"),
		SavepointOnExit: d.HasArg("savepoint-on-exit"),
		WaitToResubmit:  d.HasArg("resubmit"),
	}
}

func backoff(t *testing.T, d *datadriven.TestData) restart.BackoffStrategy {
	delay := duration(t, d, "delay", "1s")
	switch s := arg(d, "restart", "fixed-delay"); s {
	case "fixed-delay":
		return restart.NewFixedDelay(number(t, d, "attempts", "3"), delay)
	case "failure-rate":
		return restart.NewFailureRate(number(t, d, "max", "1"), duration(t, d, "interval", "1m"), delay)
	case "none":
		return &restart.None{}
	case "throwing":
		return &restart.Throwing{}
	default:
		d.Fatalf(t, "restart strategy %q", s)
		return nil
	}
}

// event is the script's command as the master's event.
func (h *harness) event(t *testing.T, d *datadriven.TestData) Event {
	task := arg(d, "task", "")
	inst := int64(number(t, d, "instance", strconv.FormatInt(h.m.current[task], 10)))
	switch d.Cmd {
	case "start":
		return Start{Reason: "job submitted"}
	case "deployed":
		return Deployed{}
	case "deploy-failed":
		return DeployFailed{Err: errors.New("cannot build the job")}
	case "fail":
		e := TaskFailed{Task: task, Instance: inst, Err: failure(d)}
		if d.HasArg("fault") {
			e.Fault = &Fault{ID: number(t, d, "fault", "0"), Task: task, Timed: d.HasArg("timed")}
		}
		return e
	case "finish":
		return TaskFinished{Task: task, Instance: inst}
	case "at-end":
		return SourceAtEnd{Task: task, Instance: inst}
	case "job-failed":
		return JobFailed{Epoch: int64(number(t, d, "epoch", strconv.FormatInt(h.m.epoch, 10))),
			Err: errors.New("exceeded the tolerable failed checkpoints")}
	case "fault":
		return FaultDue{Fault: Fault{ID: number(t, d, "id", "0"), Task: task, Timed: d.HasArg("timed")}}
	case "checkpoint":
		return CheckpointCompleted{ID: int64(number(t, d, "id", "0"))}
	case "elapse":
		return DelayElapsed{}
	case "restored":
		return Restored{Checkpoint: int64(number(t, d, "checkpoint", "0"))}
	case "restore-failed":
		return RestoreFailed{Err: errors.New("no valid checkpoint")}
	case "replaced":
		return Replaced{}
	case "replace-failed":
		return ReplaceFailed{Err: errors.New("cannot build the new instances")}
	case "committed":
		if d.HasArg("err") {
			return Committed{Err: errors.New(arg(d, "err", ""))}
		}
		return Committed{}
	case "cancel":
		return Canceled{Crashed: d.HasArg("crashed"), Savepoint: d.HasArg("savepoint")}
	case "resubmit":
		return Resubmit{}
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return nil
}

func failure(d *datadriven.TestData) error {
	switch e := arg(d, "err", "boom"); e {
	case "unrecoverable":
		return fmt.Errorf("%w: bad config", restart.ErrUnrecoverable)
	default:
		return errors.New(e)
	}
}

func arg(d *datadriven.TestData, key, def string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key && len(a.Vals) > 0 {
			return a.Vals[0]
		}
	}
	return def
}

func number(t *testing.T, d *datadriven.TestData, key, def string) int {
	n, err := strconv.Atoi(arg(d, key, def))
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return n
}

func duration(t *testing.T, d *datadriven.TestData, key, def string) time.Duration {
	v, err := time.ParseDuration(arg(d, key, def))
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v
}
