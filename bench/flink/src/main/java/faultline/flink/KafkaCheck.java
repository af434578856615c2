package faultline.flink;

import java.util.HashSet;
import java.util.Set;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * Flink's Kafka connector against a broker, in a local MiniCluster:
 *
 * <pre>
 * KafkaCheck count BOOTSTRAP TOPIC
 *     reads TOPIC at read_committed from its beginning to its end (as its
 *     end is when the job starts) with a KafkaSource, and prints
 *     "records N distinct D"
 * KafkaCheck copy BOOTSTRAP FROM TO PREFIX
 *     copies FROM (bounded as above) into TO with an exactly-once KafkaSink
 *     (transactional ids PREFIX-…), checkpointing every 200 ms, and prints
 *     "copied"
 * </pre>
 */
public final class KafkaCheck {
    private KafkaCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("count")) {
            count(args[1], args[2]);
        } else if (args.length == 5 && args[0].equals("copy")) {
            copy(args[1], args[2], args[3], args[4]);
        } else {
            System.err.println("usage: KafkaCheck count BOOTSTRAP TOPIC | copy BOOTSTRAP FROM TO PREFIX");
            System.exit(2);
        }
    }

    /** A bounded read_committed source of topic, from its beginning to its end. */
    static KafkaSource<String> source(String bootstrap, String topic) {
        return KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId("faultline-flink-check")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setValueOnlyDeserializer(new SimpleStringSchema())
                .setProperty("isolation.level", "read_committed")
                .build();
    }

    static void count(String bootstrap, String topic) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        DataStream<String> in = env.fromSource(source(bootstrap, topic), WatermarkStrategy.noWatermarks(), "kafka-source");
        long n = 0;
        Set<String> seen = new HashSet<>();
        try (CloseableIterator<String> it = in.executeAndCollect("count " + topic)) {
            while (it.hasNext()) {
                seen.add(it.next());
                n++;
            }
        }
        System.out.println("records " + n + " distinct " + seen.size());
    }

    static void copy(String bootstrap, String from, String to, String prefix) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.enableCheckpointing(200);
        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic(to)
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(prefix)
                .setProperty("transaction.timeout.ms", "60000")
                .build();
        env.fromSource(source(bootstrap, from), WatermarkStrategy.noWatermarks(), "kafka-source").sinkTo(sink);
        env.execute("copy " + from + " to " + to);
        System.out.println("copied");
    }
}
