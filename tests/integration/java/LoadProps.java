import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.utils.Utils;

/**
 * Reads properties files the way kafka-configs reads --add-config-file and --command-config
 * (Utils.loadProps): one path per line on stdin, one JSON line per path on stdout, either
 * {"ok": {key: value, ...}} or {"error": message}. A long-lived process, so a test can ask it
 * about thousands of generated files without a JVM start each.
 */
public final class LoadProps {
    private LoadProps() {
    }

    private static String json(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String path;
        while ((path = in.readLine()) != null) {
            String answer;
            try {
                Properties props = Utils.loadProps(path);
                List<String> entries = new ArrayList<>();
                for (Map.Entry<Object, Object> entry : props.entrySet()) {
                    entries.add(json((String) entry.getKey()) + ": " + json((String) entry.getValue()));
                }
                answer = "{\"ok\": {" + String.join(", ", entries) + "}}";
            } catch (IllegalArgumentException error) {
                answer = "{\"error\": " + json(String.valueOf(error.getMessage())) + "}";
            }
            System.out.println(answer);
            System.out.flush();
        }
    }
}
