import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.zip.CRC32;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A KIP-932 share group through one bootstrap address: creates the topic, sets the group to start
 * from the earliest offset, produces the records, then consumes them with a KafkaShareConsumer
 * (implicit acknowledgement) until every record came or the time is up, and prints one JSON line:
 * distinct records and bytes received, the sum of the CRC-32s of the distinct records' values (so
 * the caller can check the bytes, not only the count), seconds from the first poll to the last
 * record, the
 * client's own fetch-throttle metric, and the remote ports of its TCP connections while open.
 *
 * <p>Arguments: bootstrap topic records payload_bytes group client_id max_seconds
 */
public final class ShareGroupConsume {
    private ShareGroupConsume() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int records = Integer.parseInt(args[2]);
        int payloadBytes = Integer.parseInt(args[3]);
        String group = args[4];
        String clientId = args[5];
        long maxMillis = Long.parseLong(args[6]) * 1000;

        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        adminProps.put("client.id", clientId + "-admin");
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            ShareGroups.startAtEarliest(admin, group);

            Properties producerProps = new Properties();
            producerProps.put("bootstrap.servers", bootstrap);
            producerProps.put("client.id", clientId + "-producer");
            producerProps.put("linger.ms", "5");
            try (KafkaProducer<byte[], byte[]> producer =
                    new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < records; i++) {
                    byte[] value = Arrays.copyOf(("V" + i + ":").getBytes(StandardCharsets.UTF_8), payloadBytes);
                    producer.send(new ProducerRecord<>(topic, value));
                }
                producer.flush();
            }

            Properties consumerProps = new Properties();
            consumerProps.put("bootstrap.servers", bootstrap);
            consumerProps.put("group.id", group);
            consumerProps.put("client.id", clientId);
            TreeSet<String> distinct = new TreeSet<>();
            long bytes = 0;
            long delivered = 0;
            long valueCrcSum = 0;
            long lastRecordAt = 0;
            KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(
                    consumerProps, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            try {
                consumer.subscribe(List.of(topic));
                long start = System.currentTimeMillis();
                while (distinct.size() < records && System.currentTimeMillis() - start < maxMillis) {
                    ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(200));
                    for (ConsumerRecord<byte[], byte[]> record : batch) {
                        String value = new String(record.value(), StandardCharsets.UTF_8);
                        if (distinct.add(value.substring(0, value.indexOf(':')))) {
                            CRC32 crc = new CRC32();
                            crc.update(record.value());
                            valueCrcSum += crc.getValue();
                        }
                        bytes += record.value().length;
                        delivered++;
                        lastRecordAt = System.currentTimeMillis();
                    }
                }
                consumer.commitSync();
                TreeSet<Integer> ports = ClientProcess.establishedRemotePorts();  // admin and consumer still open
                StringBuilder json = new StringBuilder("{");
                json.append("\"distinct\": ").append(distinct.size());
                json.append(", \"delivered\": ").append(delivered);
                json.append(", \"bytes\": ").append(bytes);
                json.append(", \"value_crc_sum\": ").append(valueCrcSum);
                json.append(", \"seconds\": ").append(lastRecordAt == 0 ? 0.0 : (lastRecordAt - start) / 1000.0);
                json.append(", \"fetch_throttle_max_ms\": ").append(metric(consumer.metrics(), "fetch-throttle-time-max"));
                json.append(", \"ports\": ").append(ports);
                json.append("}");
                System.out.println(json);
            } finally {
                consumer.close();
            }
        }
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        double max = 0;
        for (Map.Entry<MetricName, ? extends Metric> entry : metrics.entrySet()) {
            if (entry.getKey().name().equals(name) && entry.getValue().metricValue() instanceof Double value
                    && !value.isNaN()) {
                max = Math.max(max, value);
            }
        }
        return max;
    }
}
