import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.time.Duration;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Produces to partition 0 of a topic (acks=all, one record every 10 ms) while a consumer reads it,
 * until a line arrives on stdin, so that the partition's leader can be moved meanwhile. Prints
 * "producing" once the first record is acknowledged, then, at the end, one JSON object: records
 * acknowledged, failed and consumed, the leader and brokers the producer knows, and the
 * process's established TCP connections (remote ports).
 *
 * Args: bootstrap topic.
 */
public final class LeaderChangeClients {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("client.id", "leader-change");
        props.put("acks", "all");
        props.put("linger.ms", "0");
        props.put("retries", "1000");
        props.put("delivery.timeout.ms", "60000");
        // a long metadata max age: the leader must be learned from the produce responses
        props.put("metadata.max.age.ms", "300000");
        KafkaProducer<String, String> producer = new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        AtomicInteger acked = new AtomicInteger(), failed = new AtomicInteger();
        AtomicReference<String> firstError = new AtomicReference<>("");
        boolean announced = false;
        AtomicInteger consumed = new AtomicInteger();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        Properties consumerProps = new Properties();
        consumerProps.put("bootstrap.servers", args[0]);
        consumerProps.put("client.id", "leader-change-c");
        consumerProps.put("metadata.max.age.ms", "300000");
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer());
        consumer.assign(List.of(new TopicPartition(args[1], 0)));
        consumer.seekToBeginning(consumer.assignment());
        Thread reader = new Thread(() -> {
            while (!stop.get()) {
                consumed.addAndGet(consumer.poll(Duration.ofMillis(100)).count());
            }
        });
        reader.start();
        for (int i = 0; !stdin.ready(); i++) {
            producer.send(new ProducerRecord<>(args[1], 0, "k", "v" + i), (meta, error) -> {
                if (error == null) {
                    acked.incrementAndGet();
                } else {
                    failed.incrementAndGet();
                    firstError.compareAndSet("", error.toString());
                }
            });
            if (!announced && acked.get() > 0) {
                System.out.println("producing");
                System.out.flush();
                announced = true;
            }
            Thread.sleep(10);
        }
        producer.flush();
        long deadline = System.currentTimeMillis() + 30_000;
        while (consumed.get() < acked.get() && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        stop.set(true);
        reader.join();
        Cluster cluster = (Cluster) ((org.apache.kafka.clients.Metadata) ClientProcess.field(producer, "metadata")).fetch();
        StringBuilder json = new StringBuilder("{");
        json.append("\"acked\": ").append(acked.get()).append(", \"failed\": ").append(failed.get());
        json.append(", \"consumed\": ").append(consumed.get());
        json.append(", \"first_error\": \"").append(firstError.get().replace("\"", "'")).append('"');
        json.append(", ").append(ClientProcess.leaderAndNodes(cluster, new TopicPartition(args[1], 0)));
        json.append(", \"ports\": ").append(ClientProcess.establishedRemotePorts());
        json.append("}");
        producer.close();
        consumer.close();
        System.out.println(json);
    }
}
