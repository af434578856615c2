package faultline.flink;

import java.util.Map;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * A fault injected into one subtask of the peer job from its start, as
 * faultline's --inject does (the fault= option): after a number of
 * records, a panic (the subtask throws once, in the job's first attempt,
 * and Flink restarts the job) or a slowdown (from then on each record is
 * held so that the subtask handles about a tenth of the rate it had over
 * the last second). Faults written to the control topic while the job runs
 * come through the same hook (see Control).
 *
 * <p>Text: KIND:OPERATOR/INDEX:AFTER, e.g. {@code panic:join/0:200000}.
 */
final class Fault {
    /** How much a slowed subtask is slowed. */
    static final int SLOW_FACTOR = 10;

    /** The global job parameter that carries the fault's text to the task managers. */
    static final String PARAM = "faultline.fault";

    final String kind; // "panic", "slow" or "" (none)
    final String task; // OPERATOR/INDEX
    final long after;

    private Fault(String kind, String task, long after) {
        this.kind = kind;
        this.task = task;
        this.after = after;
    }

    static Fault parse(String s) {
        if (s.isEmpty()) {
            return new Fault("", "", 0);
        }
        String[] p = s.split(":");
        if (p.length != 3 || !p[1].matches("[^/]+/[0-9]+") || !(p[0].equals("panic") || p[0].equals("slow"))) {
            throw new IllegalArgumentException("fault " + s + ": want KIND:OPERATOR/INDEX:AFTER with KIND panic or slow");
        }
        return new Fault(p[0], p[1], Long.parseLong(p[2]));
    }

    /** Has env's hooks do the fault s (checked here, in main, rather than in every subtask). */
    static void enable(StreamExecutionEnvironment env, String s) {
        parse(s);
        Control.addJobParameters(env, Map.of(PARAM, s));
    }

    /** The hook of the subtask whose function ctx belongs to: call it in open. */
    static Hook hook(RuntimeContext ctx) {
        Control.Hook control = Control.hook(ctx);
        Fault f = parse(ctx.getGlobalJobParameters().getOrDefault(PARAM, ""));
        boolean mine = f.task.equals(control.task());
        return new Hook(control, mine ? f.kind : "", f.after, ctx.getTaskInfo().getAttemptNumber());
    }

    /** Counts a subtask's records and does the fault when its time comes. */
    static final class Hook {
        private final Control.Hook control;
        private final String kind;
        private final long after;
        private final int attempt;
        private long seen;

        Hook(Control.Hook control, String kind, long after, int attempt) {
            this.control = control;
            this.kind = kind;
            this.after = after;
            this.attempt = attempt;
        }

        /** Called for every record the subtask processes. */
        void record() {
            control.record();
            if (kind.isEmpty() || ++seen != after) {
                return;
            }
            if (kind.equals("slow")) {
                control.slow(SLOW_FACTOR, Long.MAX_VALUE);
                return;
            }
            if (attempt == 0) {
                // When, for whoever times the recovery (make bench-flink).
                System.out.println("{\"fault_at_ms\":" + System.currentTimeMillis() + "}");
                System.out.flush();
                throw new RuntimeException("injected panic after " + after + " records");
            }
        }
    }
}
