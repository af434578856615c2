package faultline.flink;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Faults injected into a running Flink job through a Kafka topic, so that a
 * terminal UI (or kcat) can break a chosen subtask while the job runs. Each
 * record of the topic is a JSON object:
 *
 * <pre>
 * {"fault":"panic","task":"join/0"}
 * {"fault":"slow","task":"join/0","factor":10,"duration_ms":10000,"id":"f1"}
 * </pre>
 *
 * A panic makes the subtask throw at its next record (Flink restarts the
 * job by its restart strategy); a slowdown holds each of its records, from
 * its next one on for duration_ms, so that it handles about 1/factor of the
 * rate it had over the last second. A task is OPERATOR/INDEX: the name
 * given with {@code .name(…)} and the subtask index.
 *
 * <p>To hook a job: {@code Control.enable(env, bootstrap, topic)} in main,
 * then in each hooked function {@code hook = Control.hook(getRuntimeContext())}
 * in {@code open} and {@code hook.record()} for every record. The file
 * depends only on Flink and kafka-clients: copy it into your job.
 *
 * <p>Each JVM with hooked subtasks has one daemon thread that reads the
 * topic from its end as the thread starts (only faults written after the
 * first hooked subtask opened count) and leaves each fault waiting by task
 * name (a typo waits for ever, at no cost to the others); the
 * subtask takes it, so that it fires once even when the job restarts in the
 * same JVM. The topic's bootstrap servers and name travel to the task
 * managers as global job parameters.
 */
public final class Control {
    private Control() {}

    /** The global job parameters that enable sets and hook reads. */
    static final String BOOTSTRAP = "faultline.control.bootstrap";
    static final String TOPIC = "faultline.control.topic";

    static final String PANIC_MESSAGE = "injected panic from the control topic";

    private static final Logger LOG = LoggerFactory.getLogger(Control.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The faults read from the topic and not yet taken, by task name. */
    private static final Map<String, ConcurrentLinkedQueue<Injection>> WAITING = new ConcurrentHashMap<>();

    /**
     * Bumped by the reader after each fault it leaves in WAITING, so that a
     * hook looks into the map only when something new came: one volatile
     * read per record. The reader is its only writer.
     */
    private static volatile long version;

    /** The JVM's reader of the topic, started by the first hook (guarded by Control.class). */
    private static Reader reader;

    /**
     * Has env's hooked functions read faults from topic on the Kafka at
     * bootstrap, creating the topic (one partition) when it is missing.
     */
    public static void enable(StreamExecutionEnvironment env, String bootstrap, String topic) {
        addJobParameters(env, Map.of(BOOTSTRAP, bootstrap, TOPIC, topic));
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, Optional.of(1), Optional.empty()))).all().get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                LOG.warn("control topic {}: not created ({}); the hooks wait for it", topic, e.getCause().toString());
            }
        } catch (Exception e) {
            LOG.warn("control topic {}: not created ({}); the hooks wait for it", topic, e.toString());
        }
    }

    /** Adds add to env's global job parameters, which every function reads from its runtime context. */
    static void addJobParameters(StreamExecutionEnvironment env, Map<String, String> add) {
        Map<String, String> params = new HashMap<>(env.getConfig().getGlobalJobParameters().toMap());
        params.putAll(add);
        env.getConfig().setGlobalJobParameters(Configuration.fromMap(params));
    }

    /**
     * The hook of the subtask whose function ctx belongs to: call it in
     * open. It starts the JVM's reader of the topic when there is none yet
     * and waits (at most 10 s) until the reader knows where the topic ends.
     */
    public static Hook hook(RuntimeContext ctx) {
        Map<String, String> params = ctx.getGlobalJobParameters();
        String bootstrap = params.get(BOOTSTRAP), topic = params.get(TOPIC);
        if (bootstrap != null && topic != null && !topic.isEmpty()) {
            startReader(bootstrap, topic);
            ctx.registerUserCodeClassLoaderReleaseHookIfAbsent("faultline-control", Control::stopReader);
        }
        return new Hook(taskName(ctx));
    }

    /**
     * OPERATOR/INDEX of ctx's subtask. Flink keeps the operator's own name
     * in its metric group: the task's name is that of the whole chain
     * ("Source: orders-source -> parse-orders").
     */
    static String taskName(RuntimeContext ctx) {
        String operator = ctx.getMetricGroup().getAllVariables().get("<operator_name>");
        if (operator == null) {
            operator = ctx.getTaskInfo().getTaskName();
        }
        return operator + "/" + ctx.getTaskInfo().getIndexOfThisSubtask();
    }

    /** Injection is one fault read from the topic. */
    static final class Injection {
        final String kind; // "panic" or "slow"
        final String task;
        final String id; // null when the record named none
        final int factor;
        final long durationMs;

        Injection(String kind, String task, String id, int factor, long durationMs) {
            this.kind = kind;
            this.task = task;
            this.id = id;
            this.factor = factor;
            this.durationMs = durationMs;
        }
    }

    /** The fault in a record's value; unknown fields are ignored. */
    static Injection parse(String value) throws Exception {
        JsonNode n = JSON.readTree(value);
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        String kind = n.path("fault").asText("");
        String task = n.path("task").asText("");
        if (!kind.equals("panic") && !kind.equals("slow")) {
            throw new IllegalArgumentException("fault is " + n.path("fault") + ", want \"panic\" or \"slow\"");
        }
        if (!task.matches("[^/]+/[0-9]+")) {
            throw new IllegalArgumentException("task is " + n.path("task") + ", want \"OPERATOR/INDEX\"");
        }
        JsonNode factor = n.path("factor"), duration = n.path("duration_ms"), id = n.path("id");
        if (!factor.isMissingNode() && !(factor.canConvertToInt() && factor.asInt() >= 1)) {
            throw new IllegalArgumentException("factor is " + factor + ", want a whole number from 1");
        }
        if (!duration.isMissingNode() && !(duration.canConvertToLong() && duration.asLong() >= 0)) {
            throw new IllegalArgumentException("duration_ms is " + duration + ", want a whole number from 0");
        }
        return new Injection(kind, task, id.isTextual() ? id.asText() : null,
                factor.isMissingNode() ? 10 : factor.asInt(), duration.isMissingNode() ? 10_000 : duration.asLong());
    }

    /**
     * Hook is one subtask's end of the topic: record, called for every
     * record the subtask handles, takes a fault waiting for it and does it.
     * It also counts the records, for the rate a slowdown divides.
     */
    public static final class Hook {
        private final String task;
        private long looked = -1; // the version last looked at: -1 looks once at the start
        // The rate over the last whole second: counted per record, timed every 256.
        private long count, windowCount, windowStart = System.nanoTime();
        private double lastRate;
        // A slowdown: each record held holdNanos, until slowFor has passed since slowStart.
        private long holdNanos, slowStart, slowFor;

        Hook(String task) {
            this.task = task;
        }

        /** Call it for every record the subtask handles. */
        public void record() {
            if ((++count & 255) == 0) {
                roll(System.nanoTime());
            }
            if (version != looked) {
                take();
            }
            if (holdNanos > 0) {
                hold();
            }
        }

        /** The task's name, OPERATOR/INDEX. */
        String task() {
            return task;
        }

        /**
         * Holds each of the next records so that the subtask handles about
         * 1/factor of its rate over the last second, for forNanos
         * (Long.MAX_VALUE: for ever).
         */
        void slow(int factor, long forNanos) {
            long now = System.nanoTime();
            long span = now - windowStart;
            double rate = lastRate > 0 && span < 1_000_000_000L ? lastRate : (count - windowCount) * 1e9 / Math.max(span, 1);
            holdNanos = (long) (1e9 * (factor - 1) / Math.max(rate, 100.0)); // with its own cost, 1/factor of the rate
            slowStart = now;
            slowFor = forNanos;
        }

        private void roll(long now) {
            if (now - windowStart >= 1_000_000_000L) {
                lastRate = (count - windowCount) * 1e9 / (now - windowStart);
                windowStart = now;
                windowCount = count;
            }
        }

        private void take() {
            long v = version;
            ConcurrentLinkedQueue<Injection> q = WAITING.get(task);
            Injection in = q == null ? null : q.poll();
            if (in == null) {
                looked = v;
                return; // else look again at the next record: more may wait
            }
            announce(in);
            if (in.kind.equals("panic")) {
                throw new RuntimeException(PANIC_MESSAGE);
            }
            slow(in.factor, in.durationMs * 1_000_000L);
        }

        private void hold() {
            if (System.nanoTime() - slowStart >= slowFor) {
                holdNanos = 0;
                return;
            }
            LockSupport.parkNanos(holdNanos);
        }

        /** Prints the fault's JSON line on stdout, for whoever injected it. */
        private void announce(Injection in) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("control_fault", in.kind);
            line.put("task", task);
            if (in.id != null) {
                line.put("id", in.id);
            }
            line.put("at_ms", System.currentTimeMillis());
            LOG.warn("control: {} in {}{}", in.kind, task, in.id == null ? "" : " (id " + in.id + ")");
            try {
                System.out.println(JSON.writeValueAsString(line));
            } catch (Exception e) {
                LOG.warn("control: {}", e.toString());
            }
            System.out.flush();
        }
    }

    private static synchronized void startReader(String bootstrap, String topic) {
        if (reader != null) {
            return;
        }
        reader = new Reader(bootstrap, topic);
        reader.start();
        try {
            if (!reader.positioned.await(10, TimeUnit.SECONDS)) {
                LOG.warn("control: the reader of {} does not know its end yet; faults written until it does are missed", topic);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static synchronized void stopReader() {
        if (reader != null) {
            reader.stopped = true;
            reader.consumer.wakeup();
            reader = null;
        }
    }

    /** Reader reads the topic and leaves each fault in WAITING. */
    private static final class Reader extends Thread {
        private final String topic;
        private final KafkaConsumer<byte[], byte[]> consumer;
        private final CountDownLatch positioned = new CountDownLatch(1);
        private volatile boolean stopped;

        Reader(String bootstrap, String topic) {
            super("faultline-control-" + topic);
            setDaemon(true);
            this.topic = topic;
            // No group: the reader assigns itself every partition and commits nothing.
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("client.id", "faultline-control");
            p.put("enable.auto.commit", "false");
            consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public void run() {
            try (consumer) {
                List<TopicPartition> parts = partitions();
                consumer.assign(parts);
                consumer.seekToEnd(parts);
                parts.forEach(consumer::position); // the end as of now, not as of the first poll
                positioned.countDown();
                while (!stopped) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                        accept(r);
                    }
                }
            } catch (WakeupException | InterruptedException e) {
                // stopped
            } catch (Exception e) {
                LOG.warn("control: reading {} ended: {}", topic, e.toString());
            } finally {
                positioned.countDown(); // a hook waiting for a reader that ended waits no longer
            }
        }

        /** The topic's partitions, once it exists and the Kafka answers. */
        private List<TopicPartition> partitions() throws InterruptedException {
            List<TopicPartition> parts = new ArrayList<>();
            while (parts.isEmpty() && !stopped) {
                try {
                    for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(5))) {
                        parts.add(new TopicPartition(topic, pi.partition()));
                    }
                } catch (TimeoutException e) {
                    LOG.warn("control: no metadata of {} yet: {}", topic, e.getMessage());
                }
                if (parts.isEmpty()) {
                    Thread.sleep(500);
                }
            }
            return parts;
        }

        private void accept(ConsumerRecord<byte[], byte[]> r) {
            String value = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
            Injection in;
            try {
                in = parse(value);
            } catch (Exception e) {
                LOG.warn("control: skipping record {} of {}-{}: {}: {}", r.offset(), r.topic(), r.partition(), e.getMessage(), value);
                return;
            }
            WAITING.computeIfAbsent(in.task, k -> new ConcurrentLinkedQueue<>()).add(in);
            version++; // the only writer
        }
    }
}
