import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.Metadata;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KIP-932 share consumer (explicit acknowledgement) on partition 0 of an existing topic while
 * the test moves that partition's leader. Sets the group to start at the earliest offset, then
 * polls and acknowledges every record it gets. Prints "consumed-before-move" once it has the first
 * {@code before} records; then the test moves the leader, produces more and writes the total
 * number of records on stdin. Ends once every offset below that total was acknowledged
 * successfully (or the time is up) and prints one JSON object: distinct records received, offsets
 * acknowledged and the first missing ones, failed acknowledgements, the leader and brokers the consumer
 * knows at the end, and the remote ports of every TCP connection seen open during the run.
 *
 * <p>Args: bootstrap topic group before max_seconds.
 */
public final class ShareLeaderChange {
    private ShareLeaderChange() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String group = args[2];
        int before = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000;

        ConnectionSampler connections = new ConnectionSampler();
        connections.start();
        startFromEarliest(bootstrap, group);

        TreeSet<String> distinct = new TreeSet<>();
        Set<Long> acknowledged = new ConcurrentSkipListSet<>();
        List<String> ackErrors = new ArrayList<>();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(
                consumerProps(bootstrap, group), new StringDeserializer(), new StringDeserializer());
        try {
            consumer.setAcknowledgementCommitCallback((offsets, error) -> {
                if (error == null) {
                    offsets.values().forEach(acknowledged::addAll);
                } else {
                    ackErrors.add(error.toString());
                }
            });
            consumer.subscribe(List.of(topic));
            boolean announced = false;
            int total = -1;  // unknown until the test has produced after the move
            while (System.currentTimeMillis() < deadline && (total < 0 || acknowledged.size() < total)) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    distinct.add(record.value());
                    consumer.acknowledge(record);  // sent with the next poll, to the leader it came from
                }
                if (!announced && distinct.size() >= before) {
                    System.out.println("consumed-before-move");
                    System.out.flush();
                    announced = true;
                }
                if (total < 0 && stdin.ready()) {
                    total = Integer.parseInt(stdin.readLine().trim());
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));  // acknowledgements still pending, if any
            List<Long> missing = new ArrayList<>();
            for (long offset = 0; offset < total; offset++) {
                if (!acknowledged.contains(offset)) {
                    missing.add(offset);
                }
            }
            connections.stop();
            Cluster cluster = ((Metadata) ClientProcess.field(
                    ClientProcess.field(consumer, "delegate"), "metadata")).fetch();
            StringBuilder json = new StringBuilder("{");
            json.append("\"total\": ").append(total);
            json.append(", \"distinct\": ").append(distinct.size());
            json.append(", \"acknowledged\": ").append(acknowledged.size());
            json.append(", \"missing\": ").append(missing.subList(0, Math.min(missing.size(), 20)));
            json.append(", \"ack_failures\": ").append(ackErrors.size());
            json.append(", \"first_ack_error\": \"").append(ackErrors.isEmpty() ? "" : ackErrors.get(0).replace("\"", "'")).append('"');
            json.append(", ").append(ClientProcess.leaderAndNodes(cluster, new TopicPartition(topic, 0)));
            json.append(", \"ports\": ").append(connections.ports());
            json.append("}");
            System.out.println(json);
        } finally {
            consumer.close();
        }
    }

    /** The group's first member must start at offset 0: records produced before it joined. */
    private static void startFromEarliest(String bootstrap, String group) throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("client.id", "share-leader-change-admin");
        try (Admin admin = Admin.create(props)) {
            ShareGroups.startAtEarliest(admin, group);
        }
    }

    private static Properties consumerProps(String bootstrap, String group) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", "share-leader-change");
        props.put("share.acknowledgement.mode", "explicit");
        // a long metadata max age: the new leader must be learned from the ShareFetch errors (and
        // the metadata refresh they trigger), not from a periodic refresh
        props.put("metadata.max.age.ms", "300000");
        return props;
    }

    /** The remote ports of every connection this process holds, sampled every 20 ms from start to
     * stop: a connection to a broker's real port that is opened and dropped before the end of the
     * run (the old leader's, a short-lived retry) still shows up. */
    private static final class ConnectionSampler {
        private final TreeSet<Integer> seen = new TreeSet<>();
        private final AtomicBoolean stopped = new AtomicBoolean();
        private final Thread thread = new Thread(this::run, "connection-sampler");

        void start() {
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            while (!stopped.get()) {
                sample();
                try {
                    Thread.sleep(20);
                } catch (InterruptedException stop) {
                    return;
                }
            }
        }

        private void sample() {
            try {
                TreeSet<Integer> now = ClientProcess.establishedRemotePorts();
                synchronized (seen) {
                    seen.addAll(now);
                }
            } catch (Exception racing) {
                // a table read while a socket closed: the next sample sees the rest
            }
        }

        void stop() throws InterruptedException {
            stopped.set(true);
            thread.join();
            sample();  // the connections still open at the end
        }

        TreeSet<Integer> ports() {
            synchronized (seen) {
                return new TreeSet<>(seen);
            }
        }
    }
}
