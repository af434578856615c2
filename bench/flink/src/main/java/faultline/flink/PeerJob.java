package faultline.flink;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

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
 *   interval=2s             checkpoint interval
 *   unaligned=false         unaligned checkpoints
 *   tuned=false             object reuse, buffer debloating and a 10 ms watermark
 *                           alignment interval, as an expert tunes Flink
 *   ttl=60s                 the join's state TTL (0: for ever)
 *   fault=                  KIND:OPERATOR/INDEX:AFTER, e.g. panic:join/0:200000 or slow:join/0:100000
 *   rest-port=8081          the MiniCluster's REST API, on 127.0.0.1
 *   checkpoint-dir=/tmp/faultline-flink-checkpoints
 * </pre>
 *
 * The sources read the input topics from their beginning up to their end
 * as the job starts (bounded), so a run ends when the input is processed;
 * the program prints one JSON line: the job id and its net runtime.
 */
public final class PeerJob {
    private PeerJob() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: PeerJob BOOTSTRAP [key=value…] (see the class comment)");
            System.exit(2);
        }
        Map<String, String> opt = new HashMap<>(Map.of(
                "output", "revenue", "prefix", "faultline-flink", "interval", "2s", "unaligned", "false",
                "tuned", "false", "ttl", "60s", "fault", "", "rest-port", "8081",
                "checkpoint-dir", "/tmp/faultline-flink-checkpoints"));
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv.length != 2 || !opt.containsKey(kv[0])) {
                System.err.println("PeerJob: unknown argument " + args[i]);
                System.exit(2);
            }
            opt.put(kv[0], kv[1]);
        }
        String bootstrap = args[0];
        Configuration conf = new Configuration();
        conf.setString("rest.address", "127.0.0.1");
        conf.setString("rest.bind-address", "127.0.0.1");
        conf.setString("rest.port", opt.get("rest-port"));
        conf.setString("execution.checkpointing.interval", opt.get("interval"));
        conf.setString("execution.checkpointing.mode", "EXACTLY_ONCE");
        conf.setString("execution.checkpointing.unaligned.enabled", opt.get("unaligned"));
        conf.setString("execution.checkpointing.dir", "file://" + opt.get("checkpoint-dir"));
        conf.setString("state.backend.type", "hashmap");
        conf.setString("restart-strategy.type", "fixed-delay");
        conf.setString("restart-strategy.fixed-delay.attempts", "10");
        conf.setString("restart-strategy.fixed-delay.delay", "1s");
        boolean tuned = Boolean.parseBoolean(opt.get("tuned"));
        if (tuned) {
            conf.setString("pipeline.object-reuse", "true");
            conf.setString("taskmanager.network.memory.buffer-debloat.enabled", "true");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);

        Fault fault = Fault.parse(opt.get("fault"));
        long ttl = Duration.parse("PT" + opt.get("ttl").toUpperCase()).toMillis();
        // As faultline's default job: the two sources read at most a second
        // of event time ahead of one another. Flink tells its readers the
        // group's watermark every update interval, 1 s as it comes: a
        // reader a second ahead then waits for the next one, which at full
        // speed (some 75 s of event time a second) holds the job to about a
        // second of event time a second. Tuned, every 10 ms.
        Duration alignEvery = tuned ? Duration.ofMillis(10) : Duration.ofSeconds(1);
        WatermarkStrategy<String> wm = WatermarkStrategy.<String>forBoundedOutOfOrderness(Duration.ofSeconds(5))
                .withWatermarkAlignment("inputs", Duration.ofSeconds(1), alignEvery);
        DataStream<Order> orders = env.fromSource(source(bootstrap, "orders"), wm, "orders-source")
                .uid("orders-source").process(new ParseOrder(fault)).name("parse-orders").uid("parse-orders");
        DataStream<Payment> payments = env.fromSource(source(bootstrap, "payments"), wm, "payments-source")
                .uid("payments-source").process(new ParsePayment(fault)).name("parse-payments").uid("parse-payments");
        DataStream<String> revenue = orders.connect(payments)
                .keyBy(o -> o.orderId, p -> p.orderId)
                .process(new Join(ttl, fault)).name("join").uid("join")
                .keyBy(po -> po.customer)
                .process(new RevenueTotal(fault)).name("revenue").uid("revenue");
        revenue.sinkTo(sink(bootstrap, opt.get("output"), opt.get("prefix"))).name("sink").uid("sink").setParallelism(1);

        JobExecutionResult r = env.execute("orders");
        System.out.println("{\"job_id\":\"" + r.getJobID() + "\",\"net_runtime_ms\":" + r.getNetRuntime() + "}");
    }

    /** A bounded source of topic, from its beginning to its end as the job starts. */
    static KafkaSource<String> source(String bootstrap, String topic) {
        return KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId("faultline-flink-peer")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setValueOnlyDeserializer(new SimpleStringSchema())
                .build();
    }

    /** The exactly-once sink, each record keyed by its customer, as faultline's. */
    static KafkaSink<String> sink(String bootstrap, String topic, String prefix) {
        return KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(KafkaRecordSerializationSchema.<String>builder()
                        .setTopic(topic)
                        .setKeySerializationSchema((String v) -> PeerFunctions.customerOf(v).getBytes(java.nio.charset.StandardCharsets.UTF_8))
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(prefix)
                .setProperty("transaction.timeout.ms", "900000")
                .build();
    }
}
