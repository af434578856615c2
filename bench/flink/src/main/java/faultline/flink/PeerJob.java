package faultline.flink;

import java.io.File;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.client.ClientUtils;
import org.apache.flink.client.deployment.executors.PipelineExecutorUtils;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.client.JobCancellationException;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.runtime.minicluster.RpcServiceSharing;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.util.ExceptionUtils;

import faultline.flink.PeerFunctions.Join;
import faultline.flink.PeerFunctions.Order;
import faultline.flink.PeerFunctions.ParseOrder;
import faultline.flink.PeerFunctions.ParsePayment;
import faultline.flink.PeerFunctions.Payment;
import faultline.flink.PeerFunctions.RevenueTotal;

/**
 * faultline's default job (orders ⋈ payments → revenue) on Apache Flink,
 * in one local MiniCluster: the same topics, the same parallelism (2 for
 * every operator, 1 for the sink), the same keyed join with a state TTL in
 * event time, the same running revenue per customer and the same
 * exactly-once Kafka sink, with aligned (or unaligned) checkpoints on heap
 * state written to local disk.
 *
 * <pre>
 * PeerJob BOOTSTRAP key=value…
 *   output=revenue          the topic the sink writes
 *   prefix=faultline-flink  the sink's transactional id prefix
 *   delivery=exactly-once   the sink's guarantee: exactly-once or at-least-once
 *   interval=2s             checkpoint interval
 *   unaligned=false         unaligned checkpoints
 *   tuned=false             object reuse, buffer debloating and a 10 ms watermark
 *                           alignment interval, as an expert tunes Flink
 *   ttl=60s                 the join's state TTL (0: for ever)
 *   fault=                  KIND:OPERATOR/INDEX:AFTER, e.g. panic:join/0:200000 or slow:join/0:100000
 *   control=faultline-control  the topic faults are read from while the job runs (empty: none; see Control)
 *   bounded=true            read the input up to its end as the job starts, then finish
 *   restore=                a retained checkpoint or savepoint to start from
 *   scheduler=default       default or adaptive (for rescaling through the REST API)
 *   rest-port=8081          the MiniCluster's REST API, on 127.0.0.1
 *   checkpoint-dir=/tmp/faultline-flink-checkpoints
 *   linger=0s               how long the cluster and its REST API stay up after the job ends
 * </pre>
 *
 * Bounded, the sources read the input topics from their beginning up to
 * their end as the job starts, so a run ends when the input is processed;
 * unbounded, the job runs until it is cancelled or stopped through the
 * REST API. The program prints one JSON line when the job is submitted
 * (its id and REST API) and one when it ends (its id and net runtime),
 * then, with linger, keeps the REST API up that long, so that its watchers
 * see how the job ended.
 */
public final class PeerJob {
    private PeerJob() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: PeerJob BOOTSTRAP [key=value…] (see the class comment)");
            System.exit(2);
        }
        Map<String, String> opt = options(args);
        String bootstrap = args[0];
        boolean tuned = Boolean.parseBoolean(opt.get("tuned"));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(configuration(opt));
        env.setParallelism(2);
        Fault.enable(env, opt.get("fault"));
        if (!opt.get("control").isEmpty()) {
            Control.enable(env, bootstrap, opt.get("control"));
        }

        long ttl = duration(opt.get("ttl")).toMillis();
        boolean bounded = Boolean.parseBoolean(opt.get("bounded"));
        // As faultline's default job: the two sources read at most a second
        // of event time ahead of one another. Flink tells its readers the
        // group's watermark every update interval, 1 s as it comes: a
        // reader a second ahead then waits for the next one, which at full
        // speed (some 75 s of event time a second) holds the job to about a
        // second of event time a second. Tuned, every 10 ms.
        Duration alignEvery = tuned ? Duration.ofMillis(10) : Duration.ofSeconds(1);
        // A reader with nothing to read for 200 ms is idle and holds no one
        // back, as faultline's quiet source subtask takes no part in the
        // alignment: without it, a job restored where one input had been
        // read to its end waits for ever (that input's watermark stands
        // still, and the other's reader is paused a second past it).
        WatermarkStrategy<String> wm = WatermarkStrategy.<String>forBoundedOutOfOrderness(Duration.ofSeconds(5))
                .withIdleness(Duration.ofMillis(200))
                .withWatermarkAlignment("inputs", Duration.ofSeconds(1), alignEvery);
        DataStream<Order> orders = env.fromSource(source(bootstrap, "orders", bounded), wm, "orders-source")
                .uid("orders-source").process(new ParseOrder()).name("parse-orders").uid("parse-orders");
        DataStream<Payment> payments = env.fromSource(source(bootstrap, "payments", bounded), wm, "payments-source")
                .uid("payments-source").process(new ParsePayment()).name("parse-payments").uid("parse-payments");
        DataStream<String> revenue = orders.connect(payments)
                .keyBy(o -> o.orderId, p -> p.orderId)
                .process(new Join(ttl)).name("join").uid("join")
                .keyBy(po -> po.customer)
                .process(new RevenueTotal()).name("revenue").uid("revenue");
        revenue.sinkTo(sink(bootstrap, opt.get("output"), opt.get("prefix"), delivery(opt.get("delivery"))))
                .name("sink").uid("sink").setParallelism(1);
        System.exit(run(env, duration(opt.get("linger")), opt.get("rest-port")));
    }

    /**
     * Runs the job on a MiniCluster of its own: prints its id and REST API
     * once it is submitted (for whoever drives it from outside), waits for
     * its end and prints that, then keeps the cluster and its REST API up
     * for linger, so that a watcher can still read the job's final state
     * and its last savepoint there. The exit code: 0 unless it failed.
     */
    static int run(StreamExecutionEnvironment env, Duration linger, String restPort) throws Exception {
        // The configuration the local executor would hand its MiniCluster:
        // ours with what the environment added (target, parallelism, the
        // job's global parameters), so that jobmanager/config reads as before.
        Configuration conf = Configuration.fromMap(env.getConfiguration().toMap());
        StreamGraph graph = streamGraph(env, conf);
        MiniCluster cluster = new MiniCluster(clusterConfiguration(conf, graph.getMaximumParallelism()));
        try {
            cluster.start();
            JobClient job = submit(cluster, graph, linger.isZero());
            System.out.println("{\"job_id\":\"" + job.getJobID() + "\",\"rest\":\"http://127.0.0.1:" + restPort + "\"}");
            System.out.flush();
            int code = awaitEnd(job);
            Thread.sleep(linger.toMillis());
            return code;
        } finally {
            // Not waited for: main exits at once, as the local executor's
            // per-job cluster was left to close while the JVM exited.
            cluster.closeAsync();
        }
    }

    /**
     * The job as the local executor would submit it: named, with the job id,
     * restore path (execution.state-recovery.path) and client settings conf
     * gives, its functions serialized.
     */
    static StreamGraph streamGraph(StreamExecutionEnvironment env, Configuration conf) throws Exception {
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName("orders");
        graph = PipelineExecutorUtils.getStreamGraph(graph, conf);
        graph.serializeUserDefinedInstances();
        return graph;
    }

    /**
     * The cluster a local environment starts for one job: one task manager
     * with a slot for each subtask of the widest operator (2 here), unless
     * conf names the slots, and the REST API on conf's rest.port.
     */
    static MiniClusterConfiguration clusterConfiguration(Configuration conf, int maxParallelism) {
        int slots = conf.getOptional(TaskManagerOptions.NUM_TASK_SLOTS).orElse(Math.max(1, maxParallelism));
        return new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .setRpcServiceSharing(RpcServiceSharing.SHARED)
                .build();
    }

    /**
     * Submits graph to cluster and returns its client once the job has left
     * INITIALIZING (a job that fails there throws here, as executeAsync
     * did). With closeAtEnd the client closes the cluster as the job ends,
     * which is what a local environment does; without, the cluster stays up
     * until run closes it.
     */
    static JobClient submit(MiniCluster cluster, StreamGraph graph, boolean closeAtEnd) throws Exception {
        JobID id = cluster.submitJob(graph).get().getJobID();
        ClassLoader loader = PeerJob.class.getClassLoader();
        ClientUtils.waitUntilJobInitializationFinished(
                () -> cluster.getJobStatus(id).get(), () -> cluster.requestJobResult(id).get(), loader);
        return new MiniClusterJobClient(id, cluster, loader, closeAtEnd
                ? MiniClusterJobClient.JobFinalizationBehavior.SHUTDOWN_CLUSTER
                : MiniClusterJobClient.JobFinalizationBehavior.NOTHING);
    }

    /**
     * Waits for job's end and prints it: the net runtime when it finished
     * (a stop with a savepoint finishes it too), its status when it was
     * cancelled or failed. Returns the exit code: 0 unless it failed.
     */
    static int awaitEnd(JobClient job) throws InterruptedException {
        try {
            JobExecutionResult r = job.getJobExecutionResult().get();
            System.out.println("{\"job_id\":\"" + r.getJobID() + "\",\"net_runtime_ms\":" + r.getNetRuntime() + "}");
            System.out.flush();
            return 0;
        } catch (ExecutionException e) {
            boolean cancelled = ExceptionUtils.findThrowable(e, JobCancellationException.class).isPresent();
            if (!cancelled) {
                e.printStackTrace();
            }
            System.out.println("{\"job_id\":\"" + job.getJobID() + "\",\"status\":\"" + (cancelled ? "CANCELED" : "FAILED") + "\"}");
            System.out.flush();
            return cancelled ? 0 : 1;
        }
    }

    /** A duration as the options write it (2s, 500ms, 1m, 0s). */
    static Duration duration(String s) {
        return Duration.parse("PT" + s.toUpperCase());
    }

    /** The key=value arguments over the defaults; an unknown key ends the program. */
    static Map<String, String> options(String[] args) {
        Map<String, String> opt = new HashMap<>(Map.ofEntries(
                Map.entry("output", "revenue"), Map.entry("prefix", "faultline-flink"), Map.entry("interval", "2s"),
                Map.entry("unaligned", "false"), Map.entry("tuned", "false"), Map.entry("ttl", "60s"),
                Map.entry("fault", ""), Map.entry("rest-port", "8081"),
                Map.entry("checkpoint-dir", "/tmp/faultline-flink-checkpoints"), Map.entry("delivery", "exactly-once"),
                Map.entry("bounded", "true"), Map.entry("restore", ""), Map.entry("scheduler", "default"),
                Map.entry("control", "faultline-control"), Map.entry("linger", "0s")));
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv.length != 2 || !opt.containsKey(kv[0])) {
                System.err.println("PeerJob: unknown argument " + args[i]);
                System.exit(2);
            }
            opt.put(kv[0], kv[1]);
        }
        if (!opt.get("scheduler").matches("default|adaptive") || !opt.get("bounded").matches("true|false")) {
            System.err.println("PeerJob: scheduler is default or adaptive, bounded true or false");
            System.exit(2);
        }
        return opt;
    }

    /** The MiniCluster's configuration, by Flink 2.x keys. */
    static Configuration configuration(Map<String, String> opt) {
        String dir = "file://" + new File(opt.get("checkpoint-dir")).getAbsolutePath();
        Configuration conf = new Configuration();
        conf.setString("rest.address", "127.0.0.1");
        conf.setString("rest.bind-address", "127.0.0.1");
        conf.setString("rest.port", opt.get("rest-port"));
        conf.setString("execution.checkpointing.interval", opt.get("interval"));
        conf.setString("execution.checkpointing.mode", "EXACTLY_ONCE");
        conf.setString("execution.checkpointing.unaligned.enabled", opt.get("unaligned"));
        conf.setString("execution.checkpointing.dir", dir);
        // A savepoint triggered through the REST API without a target goes
        // here; the newest checkpoints stay after a cancel, for restore=.
        conf.setString("execution.checkpointing.savepoint-dir", dir + "/savepoints");
        conf.setString("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        conf.setString("execution.checkpointing.num-retained", "3");
        if (!opt.get("restore").isEmpty()) {
            conf.setString("execution.state-recovery.path", uri(opt.get("restore")));
        }
        if (opt.get("scheduler").equals("adaptive")) {
            conf.setString("jobmanager.scheduler", "adaptive");
        }
        conf.setString("state.backend.type", "hashmap");
        conf.setString("restart-strategy.type", "fixed-delay");
        conf.setString("restart-strategy.fixed-delay.attempts", "10");
        conf.setString("restart-strategy.fixed-delay.delay", "1s");
        if (Boolean.parseBoolean(opt.get("tuned"))) {
            conf.setString("pipeline.object-reuse", "true");
            conf.setString("taskmanager.network.memory.buffer-debloat.enabled", "true");
        }
        return conf;
    }

    /** path as a URI: a plain path is a local file. */
    static String uri(String path) {
        return path.contains("://") ? path : "file://" + new File(path).getAbsolutePath();
    }

    static DeliveryGuarantee delivery(String s) {
        switch (s) {
            case "exactly-once":
                return DeliveryGuarantee.EXACTLY_ONCE;
            case "at-least-once":
                return DeliveryGuarantee.AT_LEAST_ONCE;
            default:
                throw new IllegalArgumentException("delivery " + s + ": want exactly-once or at-least-once");
        }
    }

    /**
     * A source of topic from its beginning: bounded, to its end as the job
     * starts; unbounded, for ever.
     */
    static KafkaSource<String> source(String bootstrap, String topic, boolean bounded) {
        KafkaSourceBuilder<String> b = KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId("faultline-flink-peer")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setValueOnlyDeserializer(new SimpleStringSchema());
        if (bounded) {
            b.setBounded(OffsetsInitializer.latest());
        }
        return b.build();
    }

    /**
     * The sink, each record keyed by its customer, as faultline's:
     * exactly-once (Kafka transactions committed with each checkpoint) or
     * at-least-once (flushed at each checkpoint; a failure duplicates what
     * was written since the last one).
     */
    static KafkaSink<String> sink(String bootstrap, String topic, String prefix, DeliveryGuarantee delivery) {
        return KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(KafkaRecordSerializationSchema.<String>builder()
                        .setTopic(topic)
                        .setKeySerializationSchema((String v) -> PeerFunctions.customerOf(v).getBytes(java.nio.charset.StandardCharsets.UTF_8))
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(delivery)
                .setTransactionalIdPrefix(prefix)
                .setProperty("transaction.timeout.ms", "900000")
                .build();
    }
}
