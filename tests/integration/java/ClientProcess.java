import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;

/** What the test programs read of their own Java client process: private client fields (the
 * metadata a producer holds, its transaction manager) and the sockets it keeps open. */
final class ClientProcess {
    private ClientProcess() {
    }

    static Object field(Object target, String name) throws Exception {
        Field field = target.getClass().getDeclaredField(name);
        field.setAccessible(true);
        return field.get(target);
    }

    /** Remote ports of this process's established TCP connections (/proc: socket inodes of our
     * descriptors, looked up in the connection table). */
    static TreeSet<Integer> establishedRemotePorts() throws Exception {
        TreeSet<String> inodes = new TreeSet<>();
        try (Stream<Path> fds = Files.list(Paths.get("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[")) {
                        inodes.add(target.substring(8, target.length() - 1));
                    }
                } catch (java.io.IOException gone) {
                    // a descriptor closed while listing
                }
            }
        }
        TreeSet<Integer> ports = new TreeSet<>();
        for (String table : List.of("/proc/self/net/tcp", "/proc/self/net/tcp6")) {
            Path path = Paths.get(table);
            if (!Files.exists(path)) {
                continue;
            }
            List<String> lines = Files.readAllLines(path, StandardCharsets.US_ASCII);
            for (String line : lines.subList(1, lines.size())) {
                String[] cols = line.trim().split("\\s+");
                if (cols[3].equals("01") && inodes.contains(cols[9])) {  // 01: ESTABLISHED
                    ports.add(Integer.parseInt(cols[2].substring(cols[2].indexOf(':') + 1), 16));
                }
            }
        }
        return ports;
    }

    /** {@code "leader": [id, "host", port], "nodes": [...]} of a client's metadata, for the
     * programs' JSON line: where the client believes the partition's leader and the brokers are. */
    static String leaderAndNodes(Cluster cluster, TopicPartition partition) {
        List<String> nodes = new ArrayList<>();
        for (Node node : cluster.nodes()) {
            nodes.add(nodeJson(node));
        }
        return "\"leader\": " + nodeJson(cluster.leaderFor(partition)) + ", \"nodes\": " + nodes;
    }

    private static String nodeJson(Node node) {
        return node == null ? "null" : "[" + node.id() + ", \"" + node.host() + "\", " + node.port() + "]";
    }
}
