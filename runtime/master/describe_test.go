package master

import (
	"fmt"
	"strings"
)

// describe is one action as the scripts print it.
func describe(a Action) string {
	switch a := a.(type) {
	case Deploy:
		return fmt.Sprintf("deploy epoch=%d", a.Epoch)
	case StartCheckpoints:
		return fmt.Sprintf("start-checkpoints epoch=%d%s", a.Epoch, list(" finished=", a.Finished))
	case StopCheckpoints:
		return "stop-checkpoints: " + a.Err.Error()
	case SetStatus:
		return fmt.Sprintf("status %s: %s", a.Status, a.Reason)
	case Failure:
		return fmt.Sprintf("failure %s%s: %v", orJob(a.Task), fault(a.Fault), a.Err)
	case Decided:
		if a.Decision.GiveUp != "" {
			return "decided give-up: " + a.Decision.GiveUp
		}
		return fmt.Sprintf("decided restart=%s delay=%s restarts=%d", strings.Join(a.Restarted, ","), a.Decision.Delay, a.Restarts)
	case CancelAttempt:
		return "cancel-attempt"
	case CancelTasks:
		return fmt.Sprintf("cancel-tasks %s: %s", strings.Join(a.Tasks, ","), a.Why)
	case Failover:
		return fmt.Sprintf("failover %s restarts %s", orJob(a.Failed), strings.Join(a.Tasks, ","))
	case ScheduleRestart:
		return fmt.Sprintf("schedule-restart delay=%s attempt=%d tasks=%s", a.Delay, a.Attempt, strings.Join(a.Tasks, ","))
	case PickRestore:
		return fmt.Sprintf("pick-restore newest=%d", a.Newest)
	case MarkRestored:
		return "mark-restored" + list(" tasks=", a.Tasks) + ": " + a.Why
	case RestartScheduledNoMore:
		return "restart-scheduled-no-more"
	case ReplaceTasks:
		return fmt.Sprintf("replace-tasks %s epoch=%d", strings.Join(a.Tasks, ","), a.Epoch)
	case StartTasks:
		return "start-tasks " + strings.Join(a.Tasks, ",")
	case TaskDone:
		return fmt.Sprintf("task-done %s epoch=%d", a.Task, a.Epoch)
	case Deliver:
		return fmt.Sprintf("deliver%s", fault(&a.Fault))
	case Rearm:
		return fmt.Sprintf("rearm%s", fault(&a.Fault))
	case TriggerCheckpoint:
		return "trigger-final-checkpoint"
	case StopWithSavepoint:
		return "stop-with-savepoint"
	case FinalCommit:
		return "final-commit"
	case GiveUp:
		return "give-up: " + a.Reason
	case ResetRestarts:
		return "reset-restarts"
	case End:
		if a.Err != nil {
			return fmt.Sprintf("end %s: %v", a.Status, a.Err)
		}
		return fmt.Sprintf("end %s", a.Status)
	}
	return fmt.Sprintf("unknown action %T", a)
}

func list(prefix string, tasks []string) string {
	if tasks == nil {
		return ""
	}
	return prefix + strings.Join(tasks, ",")
}

func fault(f *Fault) string {
	if f == nil {
		return ""
	}
	timed := ""
	if f.Timed {
		timed = ",timed"
	}
	return fmt.Sprintf(" fault=%d(%s%s)", f.ID, orJob(f.Task), timed)
}

func orJob(task string) string {
	if task == "" {
		return "job"
	}
	return task
}
