import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.config.ConfigDef;

/**
 * Parses numbers the way kafka-configs does: Double.parseDouble (Scala's toDouble, the
 * --bootstrap-server path) and Kafka's ConfigDef for LONG and DOUBLE values (the ZooKeeper-mode
 * validation of --add-config). One hex-encoded UTF-8 string per line on stdin; one line per
 * input on stdout: "<double> <configdef-long> <configdef-double>", each the value (a double as
 * its Double.doubleToLongBits in hex) or "ERR".
 */
public final class ParseNumbers {
    private ParseNumbers() {
    }

    private static String decode(String hex) {
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String bits(double value) {
        return Long.toHexString(Double.doubleToLongBits(value));
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String text = decode(line.trim());
            String asDouble;
            String asLong;
            String asConfigDouble;
            try {
                asDouble = bits(Double.parseDouble(text));
            } catch (NumberFormatException e) {
                asDouble = "ERR";
            }
            try {
                asLong = String.valueOf(ConfigDef.parseType("k", text, ConfigDef.Type.LONG));
            } catch (Exception e) {
                asLong = "ERR";
            }
            try {
                asConfigDouble = bits((Double) ConfigDef.parseType("k", text, ConfigDef.Type.DOUBLE));
            } catch (Exception e) {
                asConfigDouble = "ERR";
            }
            System.out.println(asDouble + " " + asLong + " " + asConfigDouble);
            System.out.flush();
        }
    }
}
