package faultline.flink;

import java.io.Serializable;
import java.util.concurrent.locks.LockSupport;

/**
 * A fault injected into one subtask of the peer job, as faultline's
 * --inject does: after a number of records, a panic (the subtask throws
 * once, in the job's first attempt, and Flink restarts the job) or a
 * slowdown (from then on each record is held so that the subtask handles
 * about a tenth of the rate it had over the last second).
 *
 * <p>Text: KIND:OPERATOR/INDEX:AFTER, e.g. {@code panic:join/0:200000}.
 */
final class Fault implements Serializable {
    private static final long serialVersionUID = 1L;

    /** How much a slowed subtask is slowed. */
    static final int SLOW_FACTOR = 10;

    final String kind; // "panic", "slow" or "" (none)
    final String operator;
    final int index;
    final long after;

    private Fault(String kind, String operator, int index, long after) {
        this.kind = kind;
        this.operator = operator;
        this.index = index;
        this.after = after;
    }

    static Fault parse(String s) {
        if (s.isEmpty()) {
            return new Fault("", "", -1, 0);
        }
        String[] p = s.split(":");
        String[] task = p.length == 3 ? p[1].split("/") : new String[0];
        if (p.length != 3 || task.length != 2 || !(p[0].equals("panic") || p[0].equals("slow"))) {
            throw new IllegalArgumentException("fault " + s + ": want KIND:OPERATOR/INDEX:AFTER with KIND panic or slow");
        }
        return new Fault(p[0], task[0], Integer.parseInt(task[1]), Long.parseLong(p[2]));
    }

    /** The fault's state in one subtask. */
    Hook hook(String operator, int index, int attempt) {
        boolean mine = !kind.isEmpty() && this.operator.equals(operator) && this.index == index;
        return new Hook(mine ? kind : "", after, attempt);
    }

    /** Counts a subtask's records and does the fault when its time comes. */
    static final class Hook {
        private final String kind;
        private final long after;
        private final int attempt;
        private long seen;
        private long holdNanos = -1;
        // The rate over the last whole second, for a slowdown.
        private long secondStart = System.nanoTime();
        private long inSecond;
        private double lastRate;

        Hook(String kind, long after, int attempt) {
            this.kind = kind;
            this.after = after;
            this.attempt = attempt;
        }

        /** Called for every record the subtask processes. */
        void record() {
            if (kind.isEmpty()) {
                return;
            }
            seen++;
            long now = System.nanoTime();
            if (now - secondStart >= 1_000_000_000L) {
                lastRate = inSecond * 1e9 / (now - secondStart);
                secondStart = now;
                inSecond = 0;
            }
            inSecond++;
            if (seen < after) {
                return;
            }
            if (kind.equals("panic")) {
                if (seen == after && attempt == 0) {
                    // When, for whoever times the recovery (make bench-flink).
                    System.out.println("{\"fault_at_ms\":" + System.currentTimeMillis() + "}");
                    System.out.flush();
                    throw new RuntimeException("injected panic after " + after + " records");
                }
                return;
            }
            if (holdNanos < 0) {
                double rate = Math.max(lastRate, 100.0);
                holdNanos = (long) (1e9 * (SLOW_FACTOR - 1) / rate); // with its own cost, a tenth of the rate
            }
            LockSupport.parkNanos(holdNanos);
        }
    }
}
