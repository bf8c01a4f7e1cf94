import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka transactions end to end with the Java client, as an application behind the gateway runs
 * them: a transactional producer (committed and aborted transactions), a Kafka Streams-style
 * consume-transform-produce loop (read_committed consumer, sendOffsetsToTransaction), and
 * read_committed / read_uncommitted checks of what became visible.
 *
 * Args: bootstrap inputTopic outputTopic count payloadBytes prefix.
 * Prints one JSON object on its last stdout line. Sockets are listed while every client is open.
 */
public final class TransactionalLoop {
    private static final int BATCH = 20;
    private static final int ABORTED = 5;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], prefix = args[5];
        int count = Integer.parseInt(args[3]);
        String payload = "x".repeat(Integer.parseInt(args[4]));
        try (Admin admin = Admin.create(props(bootstrap, "client.id", prefix + "-admin"))) {
            admin.createTopics(List.of(new NewTopic(input, 2, (short) 1), new NewTopic(output, 2, (short) 1))).all().get();
        }
        KafkaProducer<String, String> in = producer(bootstrap, prefix + "-in", prefix + "-in");
        long started = System.nanoTime();
        in.initTransactions();
        for (int i = 0; i < count; i += BATCH) {
            in.beginTransaction();
            for (int j = i; j < Math.min(count, i + BATCH); j++) {
                in.send(new ProducerRecord<>(input, "k" + j, "v" + j + ":" + payload));
            }
            in.commitTransaction();
        }
        in.beginTransaction();
        for (int j = 0; j < ABORTED; j++) {
            in.send(new ProducerRecord<>(input, "aborted" + j, "aborted" + j));
        }
        in.flush();
        in.abortTransaction();
        double inputSeconds = (System.nanoTime() - started) / 1e9;

        // small polls: one loop transaction per 25 records
        KafkaConsumer<String, String> loopConsumer = consumer(bootstrap, prefix + "-loop-c", prefix + "-group", "read_committed",
                "max.poll.records", "25");
        loopConsumer.subscribe(List.of(input));
        KafkaProducer<String, String> loopProducer = producer(bootstrap, prefix + "-loop-p", prefix + "-loop");
        loopProducer.initTransactions();
        int transformed = 0, transactions = 0;
        Map<TopicPartition, OffsetAndMetadata> processed = new HashMap<>();
        long deadline = System.currentTimeMillis() + 90_000;
        while (transformed < count && System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> records = loopConsumer.poll(Duration.ofMillis(500));
            if (records.isEmpty()) {
                continue;
            }
            loopProducer.beginTransaction();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (ConsumerRecord<String, String> record : records) {
                loopProducer.send(new ProducerRecord<>(output, record.key(), record.value().split(":", 2)[0].toUpperCase()));
                offsets.put(new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
                transformed++;
            }
            loopProducer.sendOffsetsToTransaction(offsets, loopConsumer.groupMetadata());
            loopProducer.commitTransaction();
            processed.putAll(offsets);
            transactions++;
        }
        long committedOffsets = 0;
        for (OffsetAndMetadata meta : loopConsumer.committed(new java.util.HashSet<>(partitions(loopConsumer, input))).values()) {
            committedOffsets += meta == null ? 0 : meta.offset();
        }

        long processedOffsets = 0;
        for (OffsetAndMetadata next : processed.values()) {
            processedOffsets += next.offset();
        }

        List<String> outputCommitted = readAll(bootstrap, prefix + "-check-out", output, "read_committed", count);
        List<String> inputCommitted = readAll(bootstrap, prefix + "-check-inc", input, "read_committed", count);
        List<String> inputUncommitted = readAll(bootstrap, prefix + "-check-inu", input, "read_uncommitted", count + ABORTED);
        TreeSet<Integer> ports = ClientProcess.establishedRemotePorts();  // every client above is still open

        StringBuilder json = new StringBuilder("{");
        json.append("\"input_seconds\": ").append(inputSeconds);
        json.append(", \"input_throttle_max_ms\": ").append(metric(in, "produce-throttle-time-max"));
        json.append(", \"transformed\": ").append(transformed);
        json.append(", \"loop_transactions\": ").append(transactions);
        json.append(", \"committed_offsets\": ").append(committedOffsets);
        json.append(", \"processed_offsets\": ").append(processedOffsets);
        json.append(", \"output_committed\": ").append(strings(outputCommitted));
        json.append(", \"input_committed\": ").append(inputCommitted.size());
        json.append(", \"input_uncommitted\": ").append(inputUncommitted.size());
        json.append(", \"input_aborted_seen_committed\": ").append(inputCommitted.stream().filter(v -> v.startsWith("aborted")).count());
        json.append(", \"transaction_v2\": ").append(transactionV2(in));
        json.append(", \"produce_version\": ").append(produceVersion(loopProducer));
        json.append(", \"ports\": ").append(ports);
        json.append("}");
        for (AutoCloseable open : OPEN) {
            open.close();
        }
        loopConsumer.close();
        loopProducer.close();
        in.close();
        System.out.println(json);
    }

    private static Properties props(String bootstrap, String... pairs) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        for (int i = 0; i < pairs.length; i += 2) {
            props.put(pairs[i], pairs[i + 1]);
        }
        return props;
    }

    private static KafkaProducer<String, String> producer(String bootstrap, String clientId, String transactionalId) {
        return new KafkaProducer<>(props(bootstrap, "client.id", clientId, "transactional.id", transactionalId,
                "linger.ms", "5", "batch.size", "16384"), new StringSerializer(), new StringSerializer());
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String clientId, String group, String isolation,
                                                          String... extra) {
        Properties props = props(bootstrap, "client.id", clientId, "isolation.level", isolation,
                "auto.offset.reset", "earliest", "enable.auto.commit", "false");
        props.putAll(props(bootstrap, extra));
        if (group != null) {
            props.put("group.id", group);
        }
        return new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }

    private static List<TopicPartition> partitions(KafkaConsumer<String, String> consumer, String topic) {
        return consumer.partitionsFor(topic).stream().map(p -> new TopicPartition(topic, p.partition())).toList();
    }

    /** Values of every record a consumer with ``isolation`` sees in ``topic`` (stops at ``expected``
     * plus a quiet second, so a value that should not be there has time to show up). */
    private static List<String> readAll(String bootstrap, String clientId, String topic, String isolation, int expected) {
        KafkaConsumer<String, String> consumer = consumer(bootstrap, clientId, null, isolation);
        consumer.assign(partitions(consumer, topic));
        consumer.seekToBeginning(consumer.assignment());
        List<String> values = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 60_000, quietUntil = Long.MAX_VALUE;
        while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                values.add(record.value());
            }
            if (values.size() >= expected && quietUntil == Long.MAX_VALUE) {
                quietUntil = System.currentTimeMillis() + 1000;
            }
        }
        OPEN.add(consumer);  // closed at exit: its sockets are listed with the others
        return values;
    }

    private static final List<AutoCloseable> OPEN = new ArrayList<>();

    private static Object metric(KafkaProducer<?, ?> producer, String name) {
        for (Map.Entry<MetricName, ? extends Metric> entry : producer.metrics().entrySet()) {
            if (entry.getKey().name().equals(name) && entry.getKey().group().equals("producer-metrics")) {
                return entry.getValue().metricValue();
            }
        }
        return "null";
    }

    /** Whether the client ran KIP-890 transactions (TransactionManager#isTransactionV2Enabled, 4.x
     * clients only: null on older ones). Reflection: the client has no public accessor. */
    private static Object transactionV2(KafkaProducer<?, ?> producer) throws Exception {
        Object manager = ClientProcess.field(producer, "transactionManager");
        try {
            Method method = manager.getClass().getMethod("isTransactionV2Enabled");
            return method.invoke(manager);
        } catch (NoSuchMethodException e) {
            return "null";
        }
    }

    /** The highest Produce version the client negotiated with any node (its ApiVersions state). */
    private static int produceVersion(KafkaProducer<?, ?> producer) throws Exception {
        Object apiVersions = ClientProcess.field(producer, "apiVersions");
        Map<?, ?> nodes = (Map<?, ?>) ClientProcess.field(apiVersions, "nodeApiVersions");
        int best = -1;
        for (Object node : nodes.values()) {
            Method latest = node.getClass().getMethod("latestUsableVersion", ApiKeys.class);
            best = Math.max(best, ((Number) latest.invoke(node, ApiKeys.PRODUCE)).intValue());
        }
        return best;
    }

    private static String strings(List<String> values) {
        StringBuilder out = new StringBuilder("[");
        for (String value : values) {
            out.append(out.length() > 1 ? ", " : "").append('"').append(value).append('"');
        }
        return out.append("]").toString();
    }
}
