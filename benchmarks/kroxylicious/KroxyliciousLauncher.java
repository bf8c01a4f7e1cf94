import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Features;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Runs Kroxylicious from its runtime jar with one YAML configuration file, as the upstream
 * kroxylicious-app main class does (that artifact is not on Maven Central).
 *
 * Usage: java -cp JARS:DIR KroxyliciousLauncher CONFIG.yaml
 * Prints "KROXYLICIOUS STARTED" once the listeners are bound, then blocks until killed.
 */
public final class KroxyliciousLauncher {
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: KroxyliciousLauncher CONFIG.yaml");
            System.exit(2);
        }
        ConfigParser parser = new ConfigParser();
        Configuration config = parser.parseConfiguration(Files.readString(Path.of(args[0])));
        try (KafkaProxy proxy = new KafkaProxy(parser, config, Features.defaultFeatures())) {
            proxy.startup();
            System.out.println("KROXYLICIOUS STARTED");
            System.out.flush();
            proxy.block();
        }
    }
}
